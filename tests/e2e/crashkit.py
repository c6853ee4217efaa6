"""What the crash tests share: kill -9 a real sidecar after real progress, then check what its
store holds, through the API and byte by byte on disk.

- :func:`kill_after_progress` keeps a number of operations in flight, waits until enough of them
  were acknowledged, waits a small random extra delay, then kills the process.  Operations
  record what was acknowledged *when the answer is delivered* (:func:`acked`), so an answer
  that arrived just before the kill counts even if the operation's task never ran again.
- :class:`Appends` is the ``session/append`` workload (test_crash.py and the crash matrix).
- :func:`loose_objects` and :func:`jsonl_records` check files the way a reader of the store
  would: every blob inflates to a git blob that hashes to its name, every JSONL line is a
  complete JSON object.
"""

from __future__ import annotations

import asyncio
import json
import os
import zlib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sidecar.store.blobs import git_blob_id

if TYPE_CHECKING:
    import random
    from pathlib import Path

    from sidecar.client import SidecarClient

__all__ = [
    "Appends",
    "Kill",
    "Operation",
    "acked",
    "blob_refs",
    "check_history",
    "jsonl_records",
    "kill_after_progress",
    "loose_objects",
    "read_history",
]

Operation = Callable[[int], Coroutine[Any, Any, object]]


@dataclass(frozen=True, slots=True)
class Kill:
    """How one process lifetime ended."""

    acked: int
    """Operations acknowledged in this lifetime."""
    in_flight: int
    """Operations sent before the last wait and still unanswered when the kill was sent."""


def acked(
    client: SidecarClient, method: str, params: Any, record: Callable[[Any], None]
) -> asyncio.Future[Any]:
    """Send a request; ``record(result)`` runs as soon as its answer is delivered
    (``ConnectionError`` at once when the sidecar is gone)."""
    _, future = client.start_request(method, params)

    def delivered(done: asyncio.Future[Any]) -> None:
        if not done.cancelled() and done.exception() is None:
            record(done.result())

    future.add_done_callback(delivered)
    return future


async def kill_after_progress(
    client: SidecarClient,
    operation: Operation,
    *,
    rng: random.Random,
    concurrency: int,
    min_acks: int,
    max_extra_s: float,
    patience_s: float = 30.0,
) -> Kill:
    """Run ``operation(n)`` for n = 0, 1, ... with ``concurrency`` of them in flight; once
    ``min_acks`` completed, wait up to ``max_extra_s`` more (random) and ``kill -9`` the
    sidecar.  A failed operation (any error before the kill) fails the test.

    The kill follows real progress, not wall-clock time alone: on a loaded machine a fixed
    delay could pass before anything was acknowledged.
    """
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[object]] = set()
    started = done_count = 0
    deadline: float | None = None
    waited: set[asyncio.Task[object]] = set()
    give_up = loop.time() + patience_s
    try:
        while True:
            if deadline is None:
                timeout = give_up - loop.time()
                assert timeout > 0, f"only {done_count} of {min_acks} operations in {patience_s} s"
            else:
                timeout = deadline - loop.time()
                if timeout <= 0:
                    break
            while len(tasks) < concurrency:
                tasks.add(loop.create_task(operation(started)))
                started += 1
            waited = set(tasks)
            done, _ = await asyncio.wait(tasks, timeout=timeout, return_when="FIRST_COMPLETED")
            for task in done:
                tasks.discard(task)
                task.result()  # an error answer before the kill is a failure
                done_count += 1
            if deadline is None and done_count >= min_acks:
                deadline = loop.time() + rng.uniform(0.0, max_extra_s)
        # in flight: sent before the last wait began and still unanswered
        in_flight = sum(not task.done() for task in waited)
        client.kill()
        # Every byte the sidecar wrote before it died is read and dispatched here (answers
        # and notifications), so every acknowledgement is recorded before the tasks go.
        await client.wait()
        # Operations waiting for an answer end by themselves (ConnectionError); only those
        # waiting for something else (a notification) are left to cancel.  Cancelling one
        # whose answer just failed would leave that failure unretrieved.
        if tasks:
            await asyncio.wait(tasks, timeout=0.1)
    finally:
        for task in tasks:
            task.cancel()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException) and not isinstance(
            outcome, ConnectionError | asyncio.CancelledError
        ):
            raise outcome
    return Kill(acked=done_count, in_flight=in_flight)


# --- session history ---------------------------------------------------------------------


async def read_history(client: SidecarClient, sid: str, after: int = 0) -> list[dict[str, Any]]:
    """Every entry of a session after seq ``after``, through ``session/read`` pages."""
    entries: list[dict[str, Any]] = []
    while True:
        page = await client.request(
            "session/read", {"sessionId": sid, "afterSeq": after, "limit": 1000}
        )
        entries += page["entries"]
        if not page["hasMore"]:
            return entries
        after = entries[-1]["seq"]


def check_history(entries: list[dict[str, Any]], acked: dict[int, str], after: int = 0) -> None:
    """``entries`` are everything after seq ``after``; ``acked`` maps the seqs of acknowledged
    entries to their text.  No gap, no reuse, nothing acknowledged lost or changed."""
    expected = list(range(after + 1, after + len(entries) + 1))
    assert [e["seq"] for e in entries] == expected, "seq gap or reuse"
    texts = {e["seq"]: e["content"][0]["text"] for e in entries}
    lost = {seq: text for seq, text in acked.items() if seq > after and texts.get(seq) != text}
    assert not lost, f"acknowledged entries lost or changed: {sorted(lost.items())[:5]}"
    assert len(set(texts.values())) == len(texts), "an entry was written twice"


#: Every few batches is large (~1 MB): a kill can then land between the pages of one
#: ``write`` and leave a torn tail, which the next open must repair.
BIG_EVERY = 10
BIG_SIZE = 100
PAD = "p" * 8000


def _batch(marker: str, size: int) -> list[dict[str, Any]]:
    pad = PAD if size >= BIG_SIZE else ""
    return [
        {
            "kind": "message",
            "role": "user",
            "content": [{"type": "text", "text": f"{marker}/{i}"}],
            **({"meta": {"pad": pad}} if pad else {}),
        }
        for i in range(size)
    ]


@dataclass
class Appends:
    """A stream of ``session/append`` batches into one session, across kills."""

    rng: random.Random
    sid: str | None = None
    acked: dict[int, str] = field(default_factory=dict)
    """seq -> text of every entry whose append was answered."""
    verified: int = 0
    """Seqs up to here were checked after an earlier restart."""
    lifetime: int = 0

    async def restart(self, client: SidecarClient) -> None:
        """Create the session the first time; afterwards check what the last kill left."""
        self.lifetime += 1
        if self.sid is None:
            created = await client.request("session/create", {"title": "crash"})
            self.sid = str(created["sessionId"])
            return
        fresh = await read_history(client, self.sid, after=self.verified)
        check_history(fresh, self.acked, after=self.verified)
        self.verified += len(fresh)

    def operation(self, client: SidecarClient) -> Operation:
        sid = self.sid
        assert sid is not None

        async def append(n: int) -> None:
            marker = f"r{self.lifetime}-{n}"
            size = BIG_SIZE if n % BIG_EVERY == BIG_EVERY - 1 else self.rng.randint(1, 5)
            texts = [f"{marker}/{i}" for i in range(size)]

            def record(result: Any) -> None:
                for ref, text in zip(result["appended"], texts, strict=True):
                    self.acked[ref["seq"]] = text

            params = {"sessionId": sid, "entries": _batch(marker, size)}
            await acked(client, "session/append", params, record)

        return append

    async def check_final(self, client: SidecarClient, store: Path) -> None:
        """Everything through the API, then the file itself line by line."""
        assert self.sid is not None
        entries = await read_history(client, self.sid)
        check_history(entries, self.acked)
        history = store / "sessions" / self.sid / "history.jsonl"
        # The final process only read the session: a reader never cuts a torn tail from a
        # file it does not hold (its writer may be mid-line), so a line torn by the last kill
        # is still on disk, past every acknowledged entry, until the session's next writer
        # opens it (checked by the restarts above, each of which appended).
        records = jsonl_records(history, torn_tail=True)
        assert [r["seq"] for r in records] == list(range(1, len(entries) + 1))


# --- files on disk -----------------------------------------------------------------------


def checkpoint_journal(store: Path, sid: str) -> list[dict[str, Any]]:
    """The session's checkpoint journal, line by line (none when it is absent); a line a kill
    tore is left out: the journal's reader skips it the same way."""
    path = store / "sessions" / sid / "checkpoints.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_bytes().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def jsonl_records(path: Path, *, torn_tail: bool = False) -> list[dict[str, Any]]:
    """Every line of a JSONL file: each one complete (newline-terminated) and an object
    (``torn_tail``: bytes after the last newline are allowed, and not read)."""
    data = path.read_bytes()
    if torn_tail:
        data = data[: data.rfind(b"\n") + 1]
    assert not data or data.endswith(b"\n"), f"{path}: torn last line {data[-80:]!r}"
    records = []
    for number, line in enumerate(data.splitlines(), start=1):
        try:
            record = json.loads(line)
        except ValueError:
            raise AssertionError(f"{path}:{number}: not JSON: {line[:80]!r}") from None
        assert isinstance(record, dict), f"{path}:{number}: not an object"
        records.append(record)
    return records


def loose_objects(
    store: Path, checked: dict[str, int] | None = None
) -> tuple[dict[str, int], list[Path]]:
    """Every loose object of the store's blob directory, checked as git would read it: it
    inflates to ``blob <len>\\0<data>`` and the sha1 of that is its path.  Returns each id with
    its size, and the temporary files that unfinished writes left beside them.

    Objects listed in ``checked`` (id -> size, from an earlier call) are not read again: an
    object is never rewritten in place, so a later check of everything still covers them."""
    known = checked or {}
    objects = store / "blobs" / "objects"
    sizes: dict[str, int] = {}
    temporary: list[Path] = []
    for prefix in sorted(os.listdir(objects)) if objects.exists() else []:
        folder = objects / prefix
        assert len(prefix) == 2 and folder.is_dir(), f"stray {folder}"
        for name in sorted(os.listdir(folder)):
            path = folder / name
            if name.startswith("."):
                temporary.append(path)
                continue
            if prefix + name in known:
                sizes[prefix + name] = known[prefix + name]
                continue
            try:
                raw = zlib.decompress(path.read_bytes())
            except zlib.error as exc:
                raise AssertionError(f"{path}: not a zlib object ({exc})") from None
            header, _, data = raw.partition(b"\0")
            assert header == b"blob %d" % len(data), f"{path}: bad header {header[:40]!r}"
            assert git_blob_id(data) == prefix + name, f"{path}: content does not hash to its id"
            sizes[prefix + name] = len(data)
    return sizes, temporary


def blob_refs(node: Any, out: set[str] | None = None) -> set[str]:
    """Object ids a JSON document names under ``blob`` / ``inputId`` (what must exist)."""
    found = set() if out is None else out
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("blob", "inputId") and isinstance(value, str) and len(value) == 40:
                found.add(value)
            blob_refs(value, found)
    elif isinstance(node, list):
        for value in node:
            blob_refs(value, found)
    return found
