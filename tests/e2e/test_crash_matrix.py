"""The crash matrix (DESIGN.md §8): ``kill -9`` a real ``context-sidecar serve`` at random
points of every write path, restart it on the same store, and prove that

(a) every acknowledged write (its answer, or for runs its event, arrived before the kill) is
    present and intact;
(b) nothing half-written is visible: no torn JSONL line, no object whose content does not
    hash to its id, no run with a missing or second terminal event, no gc left half-done;
(c) the store opens and serves requests afterwards: every lifetime starts with those checks
    and goes on writing, and any error answer fails the test.

The write paths: history appends; history appends from three sidecars on one store at once
(``shared``: one of the three, chosen at random, is killed while all three append to their own
sessions, then started again; the others never stop); snapshots (``input/freeze`` +
``snapshot/assemble``, the same snapshot sometimes assembled twice at once); blobs (image
attachments up to a few hundred KB, the same bytes sometimes stored twice at once); run
journals (scripted runs with deltas and a tool round); ``store/gc``. Each path has its own
store and its own chain of sidecars, and the six chains run side by side. A kill always follows
real progress: a number of acknowledged operations, then either nothing more (right after an
answer: for runs, the moment a run's terminal event arrives, while its record is being
rewritten) or a small random delay; for gc, a moment a gc in progress is seen on disk.

Start-up is most of the cost (a sidecar imports its server for about a second of CPU), which
is why the chains overlap and the checks after each restart look only at what is new.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from sidecar.store.blobs import git_blob_id
from tests.e2e.crashkit import (
    Appends,
    Kill,
    acked,
    blob_refs,
    jsonl_records,
    kill_after_progress,
    loose_objects,
    read_history,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Coroutine
    from pathlib import Path

    from sidecar.client import SidecarClient
    from tests.conftest import SidecarFactory
    from tests.e2e.crashkit import Operation

pytestmark = pytest.mark.anyio

KILLS_PER_PATH = 20
PATHS = ("appends", "shared", "snapshots", "blobs", "runs", "gc")
SHARED_PROCESSES = 3
CLOCK = {"date": "2026-11-30", "time": "12:00"}
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
TERMINAL = {"completed", "cancelled", "failed"}


def _text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def _message(role: str, t: str) -> dict[str, Any]:
    return {"kind": "message", "role": role, "content": [_text(t)]}


def _image(name: str, data: bytes) -> dict[str, Any]:
    return {
        "kind": "image",
        "path": name,
        "dataBase64": base64.b64encode(data).decode(),
        "mediaType": "image/png",
    }


def _object_json(store: Path, object_id: str) -> Any:
    """A stored JSON document (snapshot, frozen input) read from its loose object."""
    path = store / "blobs" / "objects" / object_id[:2] / object_id[2:]
    return json.loads(zlib.decompress(path.read_bytes()).partition(b"\0")[2])


async def _lifetimes(
    sidecars: SidecarFactory, store: Path, kills: int
) -> AsyncIterator[SidecarClient]:
    """``kills + 1`` sidecars on ``store``, each started once the one before it is dead (a
    sidecar takes the store's writer lock as it starts, so none can be started ahead)."""
    previous: SidecarClient | None = None
    for _ in range(kills + 1):
        assert previous is None or previous.process.returncode is not None, "still alive"
        previous = await sidecars.start(store=store)
        yield previous


@dataclass
class Outcome:
    """What one path's chain of sidecars went through."""

    kills: list[Kill] = field(default_factory=list)

    @property
    def in_flight(self) -> int:
        """Kills that landed while writes were unanswered (for gc: while a gc ran)."""
        return sum(kill.in_flight > 0 for kill in self.kills)


# --- snapshots -----------------------------------------------------------------------------


@dataclass
class Snapshots:
    """``input/freeze`` then ``snapshot/assemble``; every third input assembled twice at once
    (one id, written by two requests)."""

    rng: random.Random
    store: Path
    sessions: list[str] = field(default_factory=list)
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """inputId -> the frozen input of every answered ``input/freeze``."""
    snapshots: dict[str, tuple[str, str]] = field(default_factory=dict)
    """snapshotId -> (sessionId, inputId) of every answered ``snapshot/assemble``."""
    checked: set[str] = field(default_factory=set)
    objects: dict[str, int] = field(default_factory=dict)
    lifetime: int = 0

    async def restart(self, client: SidecarClient) -> None:
        self.lifetime += 1
        if self.sessions:
            await self.check(client, final=False)
            return
        for s in range(2):
            created = await client.request("session/create", {"title": f"snapshots {s}"})
            sid = str(created["sessionId"])
            history = [_message(("user", "assistant")[i % 2], f"s{s} m{i}") for i in range(40)]
            await client.request("session/append", {"sessionId": sid, "entries": history})
            self.sessions.append(sid)

    def operation(self, client: SidecarClient) -> Operation:
        def keep_input(result: Any) -> None:
            self.inputs[result["inputId"]] = result["input"]

        async def snapshot(n: int) -> None:
            sid = self.sessions[n % len(self.sessions)]
            note = "".join(self.rng.choices("abcdefgh \n", k=self.rng.randint(200, 20_000)))
            freeze = {
                "sessionId": sid,
                "userTurn": [_text(f"turn {self.lifetime}-{n}")],
                "attachments": [{"kind": "snippet", "path": f"note{n}", "content": note}],
                "clock": CLOCK,
            }
            input_id = (await acked(client, "input/freeze", freeze, keep_input))["inputId"]

            def keep_snapshot(result: Any) -> None:
                self.snapshots[result["snapshotId"]] = (sid, input_id)

            params = {"sessionId": sid, "inputId": input_id}
            answers = await asyncio.gather(
                *(
                    acked(client, "snapshot/assemble", params, keep_snapshot)
                    for _ in range(2 if n % 3 == 0 else 1)
                )
            )
            assert len({a["snapshotId"] for a in answers}) == 1, "one input, one snapshot id"

        return snapshot

    async def check(self, client: SidecarClient, *, final: bool) -> None:
        """After a restart: what was answered since the last check; at the end: everything."""
        self.objects, _ = loose_objects(self.store, None if final else self.objects)
        indexed: set[str] = set()
        for sid in self.sessions:
            index = self.store / "sessions" / sid / "snapshots.jsonl"
            for record in jsonl_records(index) if index.exists() else []:
                assert record["snapshotId"] in self.objects, f"index names a missing {record}"
                indexed.add(record["snapshotId"])
        for snapshot_id, (sid, input_id) in self.snapshots.items():
            assert snapshot_id in indexed, f"acknowledged snapshot {snapshot_id} not indexed"
            if snapshot_id in self.checked and not final:
                continue
            assert input_id in self.objects, f"acknowledged input {input_id} lost"
            snapshot = await client.request("snapshot/get", {"snapshotId": snapshot_id})
            assert (snapshot["sessionId"], snapshot["inputId"]) == (sid, input_id)
            assert blob_refs(_object_json(self.store, snapshot_id)) <= set(self.objects)
            self.checked.add(snapshot_id)
        for input_id, body in self.inputs.items():
            if input_id in self.checked and not final:
                continue
            assert input_id in self.objects, f"acknowledged input {input_id} lost"
            assert _object_json(self.store, input_id) == body, f"input {input_id} changed"
            assert blob_refs(body) <= set(self.objects)
            self.checked.add(input_id)
        if final:
            first = next(iter(self.inputs))
            assert await client.request("input/get", {"inputId": first}) == self.inputs[first]


# --- blobs ---------------------------------------------------------------------------------


@dataclass
class Blobs:
    """Image attachments of 1 KB .. 384 KB; a third of the time the same bytes as the
    operation before, so that two requests store one blob at the same moment."""

    rng: random.Random
    store: Path
    sid: str | None = None
    blobs: dict[str, int] = field(default_factory=dict)
    """id -> size of every blob an answered ``input/freeze`` named."""
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    verified: set[str] = field(default_factory=set)
    objects: dict[str, int] = field(default_factory=dict)
    recent: list[bytes] = field(default_factory=list)
    lifetime: int = 0

    async def restart(self, client: SidecarClient) -> None:
        self.lifetime += 1
        if self.sid is None:
            created = await client.request("session/create", {"title": "blobs"})
            self.sid = str(created["sessionId"])
            return
        await self.check(client, final=False)

    def _data(self) -> list[bytes]:
        if self.recent and self.rng.random() < 1 / 3:
            return self.recent
        sizes = [
            self.rng.randint(128_000, 384_000)
            if self.rng.random() < 0.4
            else self.rng.randint(1000, 16_000)
            for _ in range(self.rng.randint(1, 3))
        ]
        self.recent = [self.rng.randbytes(size) for size in sizes]
        return self.recent

    def operation(self, client: SidecarClient) -> Operation:
        sid = self.sid
        assert sid is not None

        async def freeze(n: int) -> None:
            data = self._data()
            params = {
                "sessionId": sid,
                "userTurn": [_text(f"blobs {self.lifetime}-{n}")],
                "attachments": [_image(f"img{i}.png", d) for i, d in enumerate(data)],
                "clock": CLOCK,
            }

            def record(result: Any) -> None:
                self.inputs[result["inputId"]] = result["input"]
                for item, d in zip(result["input"]["attachments"], data, strict=True):
                    self.blobs[item["blob"]] = len(d)

            frozen = await acked(client, "input/freeze", params, record)
            ids = [a["blob"] for a in frozen["input"]["attachments"]]
            assert ids == [git_blob_id(d) for d in data], "a blob's id is its git blob id"

        return freeze

    async def check(self, client: SidecarClient, *, final: bool) -> None:
        self.objects, _ = loose_objects(self.store, None if final else self.objects)
        lost = {b: size for b, size in self.blobs.items() if self.objects.get(b) != size}
        assert not lost, f"acknowledged blobs lost or changed: {sorted(lost)[:3]}"
        for input_id, body in self.inputs.items():
            if input_id in self.verified and not final:
                continue
            assert _object_json(self.store, input_id) == body, f"input {input_id} changed"
            self.verified.add(input_id)
        for blob_id in sorted(set(self.blobs) - self.verified):  # and through the API
            read = await client.request(
                "blob/read", {"blob": blob_id, "encoding": "base64", "length": 4 << 20}
            )
            assert read["eof"] and read["size"] == self.blobs[blob_id]
            assert git_blob_id(base64.b64decode(read["data"])) == blob_id
            self.verified.add(blob_id)

    async def check_final(self, client: SidecarClient) -> None:
        await self.check(client, final=True)
        first = next(iter(self.inputs))
        assert await client.request("input/get", {"inputId": first}) == self.inputs[first]
        # Nothing refers to these inputs, so gc without grace takes every object, and the
        # temporary files of writes the kills interrupted as well.
        result = await client.request("store/gc", {"graceSeconds": 0})
        assert result["collected"] >= len(self.blobs) + len(self.inputs)
        objects, temporary = loose_objects(self.store)
        assert not objects, f"gc left {len(objects)} unreferenced objects"
        assert not temporary, f"gc left the temporary files of killed writes: {temporary[:3]}"


# --- runs ----------------------------------------------------------------------------------


@dataclass
class Runs:
    """Scripted runs (a few deltas and a tool call, then a final answer), one per session at
    a time, three sessions."""

    rng: random.Random
    store: Path
    sessions: list[str] = field(default_factory=list)
    free: list[str] = field(default_factory=list)
    events: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    """runId -> seq -> every ``run/event`` received live (journaled before it was sent)."""
    started: set[str] = field(default_factory=set)
    """Runs whose ``run/start`` was answered."""
    verified: set[str] = field(default_factory=set)
    finished: dict[str, asyncio.Event] = field(default_factory=dict)
    replay: list[dict[str, Any]] = field(default_factory=list)
    live: bool = False
    lifetime: int = 0

    def _notified(self, method: str, params: Any) -> None:
        if method != "run/event":
            return
        if not self.live:
            self.replay.append(params)
            return
        run = self.events.setdefault(params["runId"], {})
        run[params["seq"]] = params
        if params["type"] == "run.completed":
            self.finished.setdefault(params["runId"], asyncio.Event()).set()

    async def _tool(self, params: Any) -> Any:
        return {"content": [_text(f"contents of {params['arguments']['path']}")]}

    async def restart(self, client: SidecarClient) -> None:
        self.lifetime += 1
        client.on_notification(self._notified)
        client.on_request("tool/execute", self._tool)
        if self.sessions:
            await self.check(client, final=False)
        else:
            for s in range(3):
                created = await client.request("session/create", {"title": f"runs {s}"})
                self.sessions.append(str(created["sessionId"]))
        self.free = list(self.sessions)
        self.finished = {}
        self.live = True

    def operation(self, client: SidecarClient) -> Operation:
        async def run(n: int) -> None:
            sid = self.free.pop()
            tag = f"{self.lifetime}-{n}"
            deltas = [f"{tag}:{i} " for i in range(self.rng.randint(3, 12))]
            call = {"id": f"c{tag}", "name": "read_file", "arguments": {"path": f"f{tag}.py"}}
            script = {"rounds": [{"deltas": deltas, "toolCalls": [call]}, {"text": f"done {tag}"}]}
            params = {
                "sessionId": sid,
                "userTurn": [_text(f"go {tag}")],
                "tools": TOOLS,
                "script": script,
                "compaction": "off",
            }
            # the session is free for its next run as soon as run.completed was sent
            started = await acked(
                client, "run/start", params, lambda r: self.started.add(r["runId"])
            )
            await self.finished.setdefault(started["runId"], asyncio.Event()).wait()
            self.free.append(sid)

        return run

    async def _replay(self, client: SidecarClient, run_id: str) -> list[dict[str, Any]]:
        self.replay = []
        answer = await client.request("run/subscribe", {"runId": run_id, "afterSeq": 0})
        events = [e for e in self.replay if e["runId"] == run_id]
        assert answer["replayed"] == len(events) and not answer["live"], answer
        return events

    async def check(self, client: SidecarClient, *, final: bool) -> None:
        """Every run seen (since the last check, or ever): a terminal record, a whole journal
        with one terminal event at its end, every event it sent."""
        self.live = False  # from here on, run/event notifications are replays
        for run_id in sorted(self.started | set(self.events)):
            if run_id in self.verified and not final:
                continue
            where = f"run {run_id}"
            run = await client.request("run/get", {"runId": run_id})
            events = await self._replay(client, run_id)
            assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), where
            types = [e["type"] for e in events]
            assert types.count("run.completed") == 1, f"{where}: terminal events in {types}"
            assert types[-1] == "run.completed", f"{where}: events after the end: {types}"
            assert run["status"] in TERMINAL and run["headSeq"] == len(events), (where, run)
            assert events[-1]["payload"]["status"] == run["status"], (where, run)
            sent = self.events.get(run_id, {})
            lost = [seq for seq, e in sent.items() if seq > len(events) or events[seq - 1] != e]
            assert not lost, f"{where}: acknowledged events lost or changed: {lost}"
            if run_id in self.started:
                assert types[0] == "run.created", where
            journal = jsonl_records(self.store / "runs" / run_id / "events.jsonl")
            assert [r["seq"] for r in journal] == list(range(1, len(events) + 1)), where
            self.verified.add(run_id)
        for sid in self.sessions:
            entries = await read_history(client, sid)  # loads it, repairing a torn tail
            assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
            records = jsonl_records(self.store / "sessions" / sid / "history.jsonl")
            assert len(records) == len(entries)


# --- gc ------------------------------------------------------------------------------------

GC = {"keepRecent": 2, "graceSeconds": 0}
GARBAGE_IMAGES = 40


@dataclass
class Collect:
    """Rounds of: two snapshots, an input with many images that nothing refers to, then
    ``store/gc`` keeping the 2 newest snapshots with no grace.  Within a lifetime the rounds
    run one after the other, so gc never races a write (that is what the grace is for); the
    kill lands inside the last round's gc."""

    rng: random.Random
    store: Path
    sid: str | None = None
    snapshots: list[str] = field(default_factory=list)
    """Every snapshot answered, oldest first."""
    since_gc: int = 0
    """``snapshots[since_gc:]`` were answered after the last gc was sent: none may be gone."""
    last_gc_acked: bool = False
    gc_seconds: float = 0.005
    lifetime: int = 0

    @property
    def _index(self) -> Path:
        assert self.sid is not None
        return self.store / "sessions" / self.sid / "snapshots.jsonl"

    async def restart(self, client: SidecarClient) -> None:
        self.lifetime += 1
        if self.sid is not None:
            await self.check(client)
            return
        self.sid = str((await client.request("session/create", {"title": "gc"}))["sessionId"])
        entries = [_message("user", f"m{i}") for i in range(6)]
        await client.request("session/append", {"sessionId": self.sid, "entries": entries})

    async def _freeze(self, client: SidecarClient, tag: str, images: int) -> dict[str, Any]:
        params = {
            "sessionId": self.sid,
            "userTurn": [_text(f"gc {tag}")],
            "attachments": [
                _image(f"{tag}-{i}.png", self.rng.randbytes(self.rng.randint(100, 2000)))
                for i in range(images)
            ],
            "clock": CLOCK,
        }
        frozen: dict[str, Any] = await client.request("input/freeze", params)
        return frozen

    async def _round(self, client: SidecarClient, n: int) -> list[Path]:
        """Write a round; return the paths of its garbage objects."""
        for k in range(2):
            frozen = await self._freeze(client, f"{self.lifetime}-{n}-{k}", 1)
            answer = await client.request(
                "snapshot/assemble", {"sessionId": self.sid, "inputId": frozen["inputId"]}
            )
            self.snapshots.append(answer["snapshotId"])
        garbage = await self._freeze(client, f"{self.lifetime}-{n}-x", GARBAGE_IMAGES)
        ids = [garbage["inputId"], *(a["blob"] for a in garbage["input"]["attachments"])]
        self.since_gc = len(self.snapshots)
        return [self.store / "blobs" / "objects" / i[:2] / i[2:] for i in ids]

    async def lifetime_until_kill(self, client: SidecarClient) -> Kill:
        loop = asyncio.get_running_loop()
        rounds = self.rng.randint(1, 3)
        for n in range(rounds):
            await self._round(client, n)
            began = loop.time()
            await client.request("store/gc", GC)
            self.gc_seconds = max(self.gc_seconds, loop.time() - began)
            self.last_gc_acked = True
        garbage = await self._round(client, rounds)
        index_before = self._index.stat().st_ino
        self.last_gc_acked = False
        # Kill the moment the gc is seen at work: its new snapshot index in place, or its
        # first garbage object gone; or after a random part of a gc's usual duration.
        trigger = self.rng.choice(("index", "unlink", "delay"))
        _, future = client.start_request("store/gc", GC)
        deadline = loop.time() + (
            self.rng.uniform(0, self.gc_seconds) if trigger == "delay" else 10.0
        )
        while not future.done() and loop.time() < deadline:
            if trigger == "index" and self._index.stat().st_ino != index_before:
                break
            if trigger == "unlink" and not all(path.exists() for path in garbage):
                break
            await asyncio.sleep(0)
        in_flight = not future.done()
        client.kill()
        await client.wait()
        if future.done():
            self.last_gc_acked = future.exception() is None
        else:
            future.cancel()
        return Kill(acked=rounds, in_flight=int(in_flight))

    def _expected_keep(self, objects: dict[str, int]) -> set[str]:
        """What no gc may take: the indexed snapshots, their inputs, and what those name."""
        keep: set[str] = set()
        for record in jsonl_records(self._index):
            for object_id in (record["snapshotId"], record["inputId"]):
                assert object_id in objects, f"gc took {object_id}, which is still indexed"
                keep.add(object_id)
                keep |= blob_refs(_object_json(self.store, object_id))
        missing = keep - set(objects)
        assert not missing, f"gc took objects a kept snapshot needs: {sorted(missing)[:3]}"
        return keep

    async def check(self, client: SidecarClient) -> None:
        objects, temporary = loose_objects(self.store)
        assert not temporary, f"temporary files in the object store: {temporary[:3]}"
        keep = self._expected_keep(objects)
        index = [r["snapshotId"] for r in jsonl_records(self._index)]
        must = set(self.snapshots[self.since_gc :]) | set(self.snapshots[-2:])
        assert must <= set(index), f"acknowledged snapshots dropped: {sorted(must - set(index))}"
        for snapshot_id in index:
            snapshot = await client.request("snapshot/get", {"snapshotId": snapshot_id})
            await client.request("input/get", {"inputId": snapshot["inputId"]})
        if self.last_gc_acked:  # a finished gc left nothing to collect, nothing extra
            dry = await client.request("store/gc", {**GC, "dryRun": True})
            assert dry["collected"] == 0 and dry["snapshotsDropped"] == 0, dry
            assert set(objects) == keep, f"{len(set(objects) - keep)} objects gc should have taken"

    async def check_final(self, client: SidecarClient) -> None:
        await self.check(client)
        await client.request("store/gc", GC)  # finishes what a killed gc left
        objects, temporary = loose_objects(self.store)
        assert set(objects) == self._expected_keep(objects) and not temporary
        dry = await client.request("store/gc", {**GC, "dryRun": True})
        assert dry["collected"] == 0 and dry["kept"] == len(objects), dry


# --- the matrix ----------------------------------------------------------------------------


async def _chain(
    sidecars: SidecarFactory,
    store: Path,
    path: Appends | Snapshots | Blobs | Runs,
    outcome: Outcome,
    rng: random.Random,
    *,
    concurrency: int,
    min_acks: int,
    max_extra_s: float,
) -> SidecarClient:
    """Kill ``KILLS_PER_PATH`` sidecars after progress; return the next one, checked."""
    last: SidecarClient | None = None
    async for client in _lifetimes(sidecars, store, KILLS_PER_PATH):
        await path.restart(client)
        last = client
        if len(outcome.kills) < KILLS_PER_PATH:
            kill = await kill_after_progress(
                client,
                path.operation(client),
                rng=rng,
                concurrency=concurrency,
                min_acks=min_acks,
                max_extra_s=rng.choice((0.0, max_extra_s)),
            )
            outcome.kills.append(kill)
    assert last is not None and last.process.returncode is None
    return last


async def _appends(sidecars: SidecarFactory, store: Path, outcome: Outcome) -> None:
    rng = random.Random(1)
    path = Appends(rng)
    client = await _chain(
        sidecars, store, path, outcome, rng, concurrency=8, min_acks=5, max_extra_s=0.1
    )
    assert len(path.acked) >= KILLS_PER_PATH * 5
    await path.check_final(client, store)


async def _shared(sidecars: SidecarFactory, store: Path, outcome: Outcome) -> None:
    """Three sidecars append to their own sessions of one store; one at a time is killed
    after progress while the other two keep appending, and started again.  Each stream
    checks what it was acknowledged after every restart of its process, and at the end
    through another process than its own."""
    rng = random.Random(6)
    streams = [Appends(rng) for _ in range(SHARED_PROCESSES)]
    clients = [await sidecars.start(store=store) for _ in streams]
    for stream, client in zip(streams, clients, strict=True):
        await stream.restart(client)
    sent = [0] * SHARED_PROCESSES

    async def keep_appending(i: int, stop: asyncio.Event) -> None:
        append = streams[i].operation(clients[i])
        while not stop.is_set():
            sent[i] += 1
            await append(1_000_000 + sent[i])  # its own markers: never a killed one's

    for _ in range(KILLS_PER_PATH):
        victim = rng.randrange(SHARED_PROCESSES)
        stop = asyncio.Event()
        others = [
            asyncio.create_task(keep_appending(i, stop))
            for i in range(SHARED_PROCESSES)
            if i != victim
        ]
        try:
            outcome.kills.append(
                await kill_after_progress(
                    clients[victim],
                    streams[victim].operation(clients[victim]),
                    rng=rng,
                    concurrency=8,
                    min_acks=5,
                    max_extra_s=rng.choice((0.0, 0.1)),
                )
            )
        finally:
            stop.set()
            await asyncio.gather(*others)
        clients[victim] = await sidecars.start(store=store)
        await streams[victim].restart(clients[victim])  # checks what the kill left
    for i, stream in enumerate(streams):
        assert len(stream.acked) >= KILLS_PER_PATH
        await stream.check_final(clients[(i + 1) % SHARED_PROCESSES], store)


async def _snapshots(sidecars: SidecarFactory, store: Path, outcome: Outcome) -> None:
    rng = random.Random(2)
    path = Snapshots(rng, store)
    client = await _chain(
        sidecars, store, path, outcome, rng, concurrency=4, min_acks=3, max_extra_s=0.1
    )
    assert len(path.snapshots) >= KILLS_PER_PATH * 3
    await path.check(client, final=True)


async def _blobs(sidecars: SidecarFactory, store: Path, outcome: Outcome) -> None:
    rng = random.Random(3)
    path = Blobs(rng, store)
    client = await _chain(
        sidecars, store, path, outcome, rng, concurrency=4, min_acks=3, max_extra_s=0.1
    )
    assert len(path.inputs) >= KILLS_PER_PATH * 3
    await path.check_final(client)


async def _runs(sidecars: SidecarFactory, store: Path, outcome: Outcome) -> None:
    rng = random.Random(4)
    path = Runs(rng, store)
    client = await _chain(
        sidecars, store, path, outcome, rng, concurrency=3, min_acks=2, max_extra_s=0.15
    )
    assert len(path.started) >= KILLS_PER_PATH * 2
    await path.operation(client)(0)  # a run still goes from start to end on this store
    await path.check(client, final=True)


async def _gc(sidecars: SidecarFactory, store: Path, outcome: Outcome) -> None:
    path = Collect(random.Random(5), store)
    async for client in _lifetimes(sidecars, store, KILLS_PER_PATH):
        await path.restart(client)
        if len(outcome.kills) < KILLS_PER_PATH:
            outcome.kills.append(await path.lifetime_until_kill(client))
        else:
            await path.check_final(client)


# 128 sidecar starts cost ~135 s of CPU: over a minute on two idle cores, more on a machine
# shared with other work, which must not trip the default per-test timeout.
@pytest.mark.slow
@pytest.mark.timeout(360)
async def test_crash_matrix(sidecars: SidecarFactory, tmp_path: Path) -> None:
    outcomes = {name: Outcome() for name in PATHS}
    chains: dict[str, Coroutine[Any, Any, None]] = {
        "appends": _appends(sidecars, tmp_path / "appends", outcomes["appends"]),
        "shared": _shared(sidecars, tmp_path / "shared", outcomes["shared"]),
        "snapshots": _snapshots(sidecars, tmp_path / "snapshots", outcomes["snapshots"]),
        "blobs": _blobs(sidecars, tmp_path / "blobs", outcomes["blobs"]),
        "runs": _runs(sidecars, tmp_path / "runs", outcomes["runs"]),
        "gc": _gc(sidecars, tmp_path / "gc", outcomes["gc"]),
    }
    async with asyncio.TaskGroup() as group:
        for name, chain in chains.items():
            group.create_task(chain, name=name)
    summary = {name: (len(o.kills), o.in_flight) for name, o in outcomes.items()}
    assert sum(len(o.kills) for o in outcomes.values()) >= 100, summary
    for outcome in outcomes.values():
        assert len(outcome.kills) == KILLS_PER_PATH, summary
        # a good fraction of the kills hit unanswered writes (for gc: a gc at work)
        assert outcome.in_flight >= KILLS_PER_PATH // 2, summary
