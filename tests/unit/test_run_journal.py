"""A run's journal: its lines are the events' JSON, and on disk it is ahead of the wire.

The line of an event is built from a template (the run's ids encoded once) rather than by
encoding the whole event; it must still be the exact bytes ``dumps_bytes(event)`` gives, for
every payload a run can carry (non-ASCII text, a lone surrogate from a client).

A run's journal on disk is ahead of the wire at every instant, bursts included.

The sidecar writes the journal lines of one turn of the event loop in one ``write`` and the
frames that carry them in another; the journal's goes first.  The frames of a long burst
leave in the middle of the turn (the transport does not hold more than a burst), so the
journal must be written then too: here a burst of events is emitted with no ``await`` in
between, through the real stdio transport into a real pipe, and every event the pipe holds
must already be a line of ``events.jsonl`` on disk — a ``kill -9`` at that instant would
lose nothing a client saw.  The same holds on the blocking path (output to a regular file).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import pytest

from sidecar.errors import StoreIOError
from sidecar.jsonbytes import dumps_bytes
from sidecar.rpc.bridge import PyglsBridge
from sidecar.rpc.transport import StdioTransport
from sidecar.runs.events import RunEvents
from sidecar.runs.journal import RunStore

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

EVENTS = 6_000  # ~1.2 MB of frames: several bursts


def _setup(tmp_path: Path, out_fd: int) -> tuple[StdioTransport, RunEvents, Any]:
    transport = StdioTransport(
        in_fd=-1, out_fd=out_fd, max_message_bytes=1 << 20, interim=cast("Any", None)
    )
    # what attach() gives the bridge of the real protocol: the transport's two entries
    protocol = SimpleNamespace(send_body=transport.send_body, before_write=transport.before_write)
    bridge = PyglsBridge(cast("Any", protocol), transport.backlog)
    runs = RunStore(tmp_path / "runs")
    journal = runs.create({"runId": "run_01", "sessionId": "ses_01", "status": "running"})
    events = RunEvents(runs, bridge)
    events.subscribe("run_01", 0)
    return transport, events, journal


def _seqs(data: bytes) -> list[int]:
    return [int(m) for m in re.findall(rb'"seq":(\d+)', data)]


def _journaled(tmp_path: Path) -> int:
    return (tmp_path / "runs" / "run_01" / "events.jsonl").read_bytes().count(b"\n")


async def test_frames_of_a_burst_leave_after_their_journal_lines(tmp_path: Path) -> None:
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(read_fd, fcntl.F_SETFL, os.O_NONBLOCK)
    transport, events, journal = _setup(tmp_path, write_fd)
    try:
        await transport._open_writer()  # the non-blocking pipe writer of a served connection
        for i in range(EVENTS):  # no await: all in one turn of the event loop
            events.emit(journal, "model.delta", {"round": 1, "text": f"d{i:07d}"})
        wire = b""
        while True:
            try:
                chunk = os.read(read_fd, 1 << 16)
            except BlockingIOError:
                break
            wire += chunk
        seqs = _seqs(wire)
        assert seqs, "no frame left within the turn: nothing was checked"
        assert seqs == list(range(1, len(seqs) + 1))
        assert _journaled(tmp_path) >= seqs[-1], "frames left before their journal lines"
    finally:
        if transport._writer is not None:
            transport._writer.close()
        journal.close()
        os.close(read_fd)
        os.close(write_fd)


async def test_frames_written_one_by_one_leave_after_their_journal_lines(
    tmp_path: Path,
) -> None:
    wire = tmp_path / "wire"
    out_fd = os.open(wire, os.O_WRONLY | os.O_CREAT, 0o644)  # blocking writes, frame by frame
    _transport, events, journal = _setup(tmp_path, out_fd)
    try:
        for i in range(50):
            events.emit(journal, "model.delta", {"round": 1, "text": f"d{i:07d}"})
            seqs = _seqs(wire.read_bytes())
            assert seqs == list(range(1, i + 2))
            assert _journaled(tmp_path) >= seqs[-1], f"event {i + 1} left before its line"
    finally:
        journal.close()
        os.close(out_fd)


@pytest.mark.parametrize("session_id", ["ses_01CD", "ses_\u00e9"])
@pytest.mark.parametrize(
    ("event_type", "payload"),
    [
        ("model.delta", {"round": 1, "text": "d0000001"}),
        ("model.delta", {"round": 2, "text": 'héllo "wörld"\n\t\u2028 😀'}),
        ("model.delta", {"round": 3, "text": "lone \ud800 surrogate, é"}),
        ("tool.completed", {"callId": "c1", "result": {"content": [], "isError": False}}),
        ("run.completed", {"status": "completed", "usage": {"inputTokens": 3}}),
    ],
)
def test_a_journal_line_is_the_json_of_its_event(
    tmp_path: Path, event_type: str, payload: dict[str, Any], session_id: str
) -> None:
    runs = RunStore(tmp_path / "runs")
    journal = runs.create({"runId": "run_01AB", "sessionId": session_id, "status": "running"})
    try:
        event, line = journal.append(event_type, payload)
        assert line == dumps_bytes(event)
        assert json.loads(line) == event
        assert list(event) == ["runId", "sessionId", "seq", "time", "type", "payload"]
    finally:
        journal.close()
    assert (tmp_path / "runs" / "run_01AB" / "events.jsonl").read_bytes() == line + b"\n"


def test_a_journal_the_disk_refuses_stops_its_run_at_the_next_event(tmp_path: Path) -> None:
    """Lines whose write failed are not dropped while later ones are written (line numbers
    would no longer be seqs): the refusal is kept and raised by every later append."""
    runs = RunStore(tmp_path / "runs")
    journal = runs.create({"runId": "run_01", "sessionId": "ses_01", "status": "running"})
    journal.append("run.created", {})  # no event loop here: written at once
    log = journal._log
    assert log is not None
    full = os.open("/dev/full", os.O_WRONLY)  # every write: ENOSPC
    try:
        os.dup2(full, log._fd)
        with pytest.raises(StoreIOError, match=r"could not write events\.jsonl"):
            journal.append("model.delta", {"round": 1, "text": "lost"})
        with pytest.raises(StoreIOError):
            journal.append("model.delta", {"round": 1, "text": "after"})
    finally:
        os.close(full)
        journal.close()
    lines = (tmp_path / "runs" / "run_01" / "events.jsonl").read_bytes().splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [1]
