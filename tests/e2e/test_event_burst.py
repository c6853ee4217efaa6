"""A run that streams more than the backlog bound between two turns of the event loop (the
scripted provider: every delta at once) reaches a client that reads as fast as it can
without ``run/lagged``: the writer drains as the round goes (``sidecar/runs/model_round.py``,
``sidecar/rpc/transport.py``).  Before, the frames of that one iteration counted as unread
and the run told any client, however fast, that it lagged at ~16k events."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from sidecar.client import sidecar_command

DELTAS = 20_000


def _frame(message: dict[str, object]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _bodies(fd: int):  # type: ignore[no-untyped-def]
    """Frames as they come: a reader that does nothing but split them."""
    buf, pos = b"", 0
    while True:
        head = buf.find(b"\r\n\r\n", pos)
        if head >= 0:
            length = int(buf[pos:head].split(b"\r\n")[0].split(b":")[1])
            end = head + 4 + length
            if len(buf) >= end:
                yield buf[head + 4 : end]
                pos = end
                continue
        buf, pos = buf[pos:], 0
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return
        buf += chunk


def test_a_burst_longer_than_the_bound_reaches_a_fast_reader_whole(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [*sidecar_command("serve"), "--store", str(tmp_path / "store")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        frames = _bodies(process.stdout.fileno())
        process.stdin.write(
            _frame(
                {"id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}}
            )
        )
        next(frames)
        process.stdin.write(_frame({"method": "initialized", "params": {}}))
        process.stdin.write(_frame({"id": 2, "method": "session/create", "params": {}}))
        session_id = json.loads(next(frames))["result"]["sessionId"]
        script = {"rounds": [{"deltas": [f"d{i:07d}" for i in range(DELTAS)]}]}
        start = {"sessionId": session_id, "userTurn": [{"type": "text", "text": "go"}]}
        process.stdin.write(
            _frame({"id": 3, "method": "run/start", "params": {**start, "script": script}})
        )
        seqs: list[int] = []
        deltas = 0
        for body in frames:
            assert b'"run/lagged"' not in body
            if b'"run/event"' not in body:
                continue
            match = re.search(rb'"seq":(\d+)', body)
            assert match is not None
            seqs.append(int(match.group(1)))
            deltas += b'"model.delta"' in body
            if b'"run.completed"' in body:
                break
        assert seqs == list(range(1, len(seqs) + 1))
        assert deltas == DELTAS
    finally:
        process.kill()
        process.wait()
        process.stdin.close()
        process.stdout.close()
