"""Run records and their event journals.

Layout: ``runs/<runId>/run.json`` (the run's state, written atomically when the run is
created and when it ends: a status between is the journal's, see
:data:`sidecar.runs.loop_state.QUIET`) and ``runs/<runId>/events.jsonl``
(append-only, one event per line, seq = line number).  An event is written to the journal
*before* it is sent to any client, so replay can never miss what a client saw: the lines of
one turn of the event loop are written together, by the face's writer just before the frames
that carry them leave (or at the end of that turn when nobody is subscribed).  The journal is
fsynced at the run's creation, at every status change but the quiet ones and at the end of
the run; between those points a ``kill -9`` loses nothing a client saw (the writes are in the
page cache) — only a power loss can cut the unsynced tail, and a torn last line is
repaired on open like any JSONL file of the store.

A run that was not finished when its sidecar died is marked ``failed`` with
``agent.interrupted`` (retryable, user-retryable) by the next process that takes its session
(at start-up for the sessions no live process holds, or later when it takes one: a run is
driven by the process that holds its session, so a run whose session is held elsewhere is
alive there, never settled here); its journal stays intact and gets the run's one terminal
event.  A run that died after its
terminal event was journaled but before its record was rewritten is finished: its record is
brought up to date from the journal.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import logging
import os
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import anyio

from protocol.errors import ErrorCode
from sidecar.aio import in_thread
from sidecar.errors import NotFoundError, StoreIOError
from sidecar.ids import now_iso
from sidecar.jsonbytes import dumps_bytes
from sidecar.store.jsonl import AppendLog, write_file_atomic

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

__all__ = ["TERMINAL", "RunJournal", "RunStore"]

logger = logging.getLogger(__name__)

TERMINAL = frozenset({"completed", "cancelled", "failed"})


class RunJournal:
    """One run: its record and its journal, open for appends."""

    def __init__(self, directory: Path, record: dict[str, Any], events: list[bytes]) -> None:
        self.dir = directory
        self.record = record
        self._lines = events
        self._log: AppendLog | None = None
        self._persisting = anyio.Lock()
        self._unwritten: list[bytes] = []
        """Lines appended but not yet written (see :meth:`flush`)."""
        self._failed: StoreIOError | None = None
        head = dumps_bytes({"runId": record["runId"], "sessionId": record["sessionId"]})
        self._head = head[:-1] + b',"seq":' if head.isascii() else None
        """The start of every line, encoded once (ids are ASCII; were one not, a payload
        that must be written in ASCII would make the whole line ASCII: no template then)."""

    @property
    def run_id(self) -> str:
        return str(self.record["runId"])

    @property
    def head(self) -> int:
        return len(self._lines)

    def _open(self) -> AppendLog:
        if self._log is None:
            log, loaded = AppendLog.open(self.dir / "events.jsonl")
            assert log is not None
            self._log = log
            self._lines = loaded.lines
        return self._log

    def append(self, event_type: str, payload: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        """Add the next event; return it and its JSON (the journal line, which is also what
        goes on the wire: it is encoded once).

        The line is written by :meth:`flush`, which the caller must have run before the
        event leaves the process (a face's writer does it before its next write); failing
        that, it runs at the end of this turn of the event loop.  A burst of events is thus
        one ``write``, and the journal is still ahead of every client."""
        if self._failed is not None:
            raise self._failed
        self._open()
        seq = len(self._lines) + 1
        time = now_iso()
        event = {
            "runId": self.record["runId"],
            "sessionId": self.record["sessionId"],
            "seq": seq,
            "time": time,
            "type": event_type,
            "payload": payload,
        }
        if self._head is None:
            line = dumps_bytes(event)
        else:  # the same bytes, without encoding the envelope again for every event
            line = b"".join(
                (
                    self._head,
                    str(seq).encode(),
                    b',"time":"',
                    time.encode(),
                    b'","type":',
                    _type_json(event_type),
                    b',"payload":',
                    dumps_bytes(payload),
                    b"}",
                )
            )
        self._unwritten.append(line)
        if len(self._unwritten) == 1 and not _flush_soon(self._flush_later):
            self.flush()  # no event loop here (recovery at open, a tool): written at once
        self._lines.append(line)
        self.record["headSeq"] = seq
        return event, line

    def flush(self) -> None:
        """Write the lines appended since the last flush, in one ``write`` (not fsynced: a
        killed process leaves them in the page cache; :meth:`sync` makes them durable).

        When the disk refuses, the lines stay unwritten, the file as it was, and every later
        :meth:`append` or flush raises the same error: the run stops with ``store.io`` at its
        next event rather than go on with a journal whose line numbers are no longer seqs."""
        if self._failed is not None:
            raise self._failed
        if not self._unwritten or self._log is None:
            return
        try:
            self._log.write(b"\n".join(self._unwritten) + b"\n")
        except StoreIOError as exc:
            self._failed = exc
            raise
        self._unwritten = []

    def _flush_later(self) -> None:
        """:meth:`flush` at the end of a loop turn: a refusal is kept for the run's next
        event to raise (nobody to tell here)."""
        try:
            self.flush()
        except StoreIOError:
            logger.exception("could not write the journal of run %s", self.run_id)

    def sync(self) -> None:
        """fsync the journal and rewrite the record (status changes, the end)."""
        log = self._open()
        self.flush()
        log.sync()
        self.record["updatedAt"] = now_iso()
        write_file_atomic(self.dir / "run.json", dumps_bytes(self.record))

    async def persist(self, *, record: bool = True) -> None:
        """:meth:`sync` with the fsyncs in a worker thread, so a run's status change never
        stalls the event loop (every other request and run waits on it otherwise).  The
        record is serialised first, on the loop; rewrites of ``run.json`` keep their order.
        ``record=False``: the journal only (a status change mid-run: a reader takes the
        journal's newer status over ``run.json``'s, see :func:`_take_newer_status`)."""
        log = self._open()
        self.flush()
        data: bytes | None = None
        if record:
            self.record["updatedAt"] = now_iso()
            data = dumps_bytes(self.record)

        def write() -> None:
            log.sync()
            if data is not None:
                write_file_atomic(self.dir / "run.json", data)

        async with self._persisting:
            await in_thread(write)

    def events_after(self, seq: int) -> list[dict[str, Any]]:
        return list(self.iter_after(seq))

    def iter_after(self, seq: int) -> Iterator[dict[str, Any]]:
        """The events after ``seq``, decoded one at a time (a replay holds one, not all).
        The caller must not await while iterating: appends would land under it."""
        for line in itertools.islice(self._lines, seq, None):
            yield json.loads(line)

    def lines_after(self, seq: int) -> Iterator[tuple[int, bytes]]:
        """The events after ``seq`` as ``(seq, JSON)``, as stored (no decoding).  The caller
        must not await while iterating."""
        yield from enumerate(itertools.islice(self._lines, seq, None), start=seq + 1)

    def close(self) -> None:
        if self._log is not None:
            if self._failed is None:  # else the run already stopped on it: nothing to add
                self.flush()
            self._log.close()
            self._log = None


class RunStore:
    """All runs under ``<store>/runs``.

    Active runs keep their journal open (``_open``); a finished run's journal is closed by
    :meth:`finish` and kept, read-only, among the few most recent ones (``_recent``) for the
    replays that follow a run's end; older ones are read from disk again when asked for.  A
    long-lived sidecar thus holds a file descriptor and the events of its active runs only."""

    #: Finished journals kept in memory (their events, no file descriptor).
    RECENT = 32

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._open: dict[str, RunJournal] = {}
        self._recent: OrderedDict[str, RunJournal] = OrderedDict()

    def create(self, record: dict[str, Any]) -> RunJournal:
        """A new run's journal, on disk (its directory, an empty event log and ``run.json``,
        fsynced) before it is returned.  Blocking: on the event loop, use
        :meth:`create_in_thread`."""
        directory = self.root / record["runId"]
        directory.mkdir()
        journal = RunJournal(directory, record, [])
        journal.sync()
        self._open[journal.run_id] = journal
        return journal

    async def create_in_thread(self, record: dict[str, Any]) -> RunJournal:
        """:meth:`create` in a worker thread: a ``run/start`` that waited on its three fsyncs
        on the event loop stalled every other request behind it whenever the disk was busy
        (the tail of ``make soak``).  The one shared write, ``_open``'s new key, is a single
        dict store of an id nobody knows yet."""
        return await in_thread(self.create, record)

    def finish(self, journal: RunJournal) -> None:
        """The run ended and its journal is synced: close it, keep it among the recent."""
        journal.close()
        self._open.pop(journal.run_id, None)
        self._remember(journal)

    def _remember(self, journal: RunJournal) -> None:
        self._recent[journal.run_id] = journal
        self._recent.move_to_end(journal.run_id)
        while len(self._recent) > self.RECENT:
            self._recent.popitem(last=False)

    @property
    def open_journals(self) -> int:
        return len(self._open)

    def get(self, run_id: str) -> RunJournal:
        journal = self._open.get(run_id)
        if journal is not None:
            return journal
        journal = self._recent.get(run_id)
        if journal is not None:
            self._recent.move_to_end(run_id)
            return journal
        directory = self.root / run_id
        if not run_id.startswith("run_") or not run_id[4:].isalnum():
            raise self._missing(run_id)
        try:
            record = json.loads((directory / "run.json").read_bytes())
        except FileNotFoundError:
            raise self._missing(run_id) from None
        _log, loaded = AppendLog.open(directory / "events.jsonl", writable=False)
        journal = RunJournal(directory, record, loaded.lines)
        record["headSeq"] = journal.head
        _take_newer_status(record, loaded.lines)
        if record.get("status") in TERMINAL:
            self._remember(journal)
        # unfinished: another process's live run (read again on every ask, never cached), or
        # one left by a dead process, which recovery settles and then ``finish`` keeps
        return journal

    @staticmethod
    def _missing(run_id: str) -> NotFoundError:
        return NotFoundError(
            ErrorCode.RUN_NOT_FOUND, f"no run {run_id!r}", details={"runId": run_id}
        )

    def _record(self, run_id: str) -> dict[str, Any] | None:
        """A run's state from ``run.json`` alone (no journal read), or None if unreadable."""
        journal = self._open.get(run_id) or self._recent.get(run_id)
        if journal is not None:
            return journal.record
        try:
            record: dict[str, Any] = json.loads((self.root / run_id / "run.json").read_bytes())
        except (OSError, ValueError):
            return None
        if record.get("status") not in TERMINAL:  # another process's run, or one left over
            _take_newer_status(record, _tail_lines(self.root / run_id / "events.jsonl"))
        return record

    def list_runs(self, session_id: str | None, limit: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for name in sorted(os.listdir(self.root), reverse=True):
            if len(out) >= limit:
                break
            record = self._record(name)
            if record is None:
                continue
            if session_id is None or record["sessionId"] == session_id:
                out.append(record)
        return out

    def unfinished(self) -> list[tuple[str, str]]:
        """``(runId, sessionId)`` of every run whose record is unfinished and that this
        process is not driving: another process's live run, or one a dead process left."""
        out = []
        for name in sorted(os.listdir(self.root)):
            if name in self._open:
                continue
            record = self._record(name)
            if record is None or record.get("status") in TERMINAL:
                continue
            out.append((name, str(record.get("sessionId"))))
        return out

    def recover_interrupted(self, session_id: str | None = None) -> list[str]:
        """Settle the runs a dead process left unfinished in ``run.json`` (of one session,
        or all: the caller knows that no live process drives them).

        A run whose journal already ends with ``run.completed`` did finish: the process died
        between writing that event and rewriting the record, so the record takes the
        journal's word (appending a second terminal event would break "one terminal event
        per journal").  Any other run is marked failed (``agent.interrupted``) by its terminal
        event.  Either way the usage totals are recounted from the journal, which may be
        ahead of the record's last rewrite."""
        recovered = []
        for name, owner in self.unfinished():  # only unfinished runs have their journal read
            if session_id is not None and owner != session_id:
                continue
            try:
                journal = self.get(name)
            except NotFoundError:
                continue
            events = journal.events_after(0)
            journal.record["usage"] = _usage(events)
            if events and events[-1]["type"] == "run.completed":
                ended = events[-1]["payload"]
                journal.record["status"] = ended["status"]
                if "failure" in ended:
                    journal.record["failure"] = ended["failure"]
            else:
                failure = {
                    "code": ErrorCode.RUN_INTERRUPTED,
                    "message": "the sidecar stopped while this run was active; "
                    "run/resume continues it",
                    "retryable": True,
                    "userRetryable": True,
                }
                journal.record.update(status="failed", failure=failure)
                journal.append("run.completed", {"status": "failed", "failure": failure})
                recovered.append(name)
            journal.sync()
            self.finish(journal)
        return recovered


def _take_newer_status(record: dict[str, Any], lines: list[bytes]) -> None:
    """An unfinished run's record, read from disk, takes the status of the journal's newest
    ``run.statusChanged`` (``lines``: the journal's, or its tail): ``run.json`` keeps the last
    durable status only (see :data:`sidecar.runs.loop_state.QUIET`)."""
    if record.get("status") in TERMINAL:
        return
    for line in reversed(lines):
        if b'"run.statusChanged"' not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        payload = event.get("payload")
        if event.get("type") != "run.statusChanged" or not isinstance(payload, dict):
            continue
        if "agent" in payload:  # a sub-agent's status: not the run's
            continue
        record["status"] = payload.get("status", record.get("status"))
        return


def _tail_lines(path: Path, size: int = 1 << 16) -> list[bytes]:
    """The complete lines among the last ``size`` bytes of ``path`` (none if unreadable)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            end = f.tell()
            f.seek(max(0, end - size))
            data = f.read(size)
    except OSError:
        return []
    lines = data.split(b"\n")
    if end > size:
        lines = lines[1:]  # the first may be cut
    return lines[:-1]  # the last is empty, or a torn line


def _flush_soon(flush: Callable[[], None]) -> bool:
    """Call ``flush`` at the end of this turn of the running event loop, if there is one."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    loop.call_soon(flush)
    return True


@functools.cache
def _type_json(event_type: str) -> bytes:
    return dumps_bytes(event_type)


def _usage(events: list[dict[str, Any]]) -> dict[str, int]:
    """Token totals of a run: the sum of its ``model.completed`` usages (sub-agents' too)."""
    totals: dict[str, int] = {}
    for event in events:
        if event["type"] == "model.completed":
            for key, value in event["payload"].get("usage", {}).items():
                totals[key] = totals.get(key, 0) + int(value)
    return totals
