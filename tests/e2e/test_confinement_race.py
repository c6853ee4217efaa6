"""A directory swapped for a symlink while the sidecar reads and writes under it (issue 40).

The path check resolves every symlink, then the tool opens the file; a directory inside the
root that becomes a symlink to an outside directory between the two must not be followed.
A thread of the test swaps ``ws/d`` (a directory) with a symlink to ``outside/`` atomically
(``renameat2(RENAME_EXCHANGE)``: ``d`` is never missing), back and forth, as fast as it can,
while a ``serve`` run of the real process makes 300 ``read_file``, 100 ``write_file``, 60
``grep`` and 40 ``run_command`` calls under ``d``.  Opened by descriptor from the root down,
no read returns the outside file's content, no write lands outside, no grep searches it and no
command starts in it.  With the holes put back: the open by path leaked 2-30 reads in 300,
the write by path (temp file + ``os.replace`` by name) landed 2-8 writes in 100 outside,
ripgrep started at the directory's path searched the outside directory in 9-15 greps of 60,
a command started at the path ran there in 0-11 of 150.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from sidecar.client import SidecarClient
from tests.conftest import SidecarFactory

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux's"),
]

SECRET = "0ut5ide-dir-c4n4ry-93"
READS, WRITES, GREPS, COMMANDS, PER_ROUND = 300, 100, 60, 150, 50
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _exchange(a: Path, b: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


class Swapper(threading.Thread):
    """Exchanges ``d`` (a directory) and ``link`` (a symlink to outside) until stopped."""

    def __init__(self, d: Path, link: Path) -> None:
        super().__init__(daemon=True)
        self.d, self.link = d, link
        self.stop = threading.Event()
        self.swaps = 0

    def run(self) -> None:
        while not self.stop.is_set():
            _exchange(self.d, self.link)
            self.swaps += 1
        if self.d.is_symlink():  # leave the directory where it was
            _exchange(self.d, self.link)


async def _run(client: SidecarClient, sid: str, rounds: list[dict[str, Any]]) -> list[Any]:
    events: list[dict[str, Any]] = []
    client.on_notification(lambda method, params: events.append(params))
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "race"}],
            "builtinTools": {"mode": "allow_all"},
            "maxRounds": len(rounds) + 1,
            "script": {"rounds": rounds},
        },
    )

    async def done() -> None:
        while not any(
            e.get("runId") == started["runId"] and e.get("type") == "run.completed" for e in events
        ):
            await asyncio.sleep(0.02)

    await asyncio.wait_for(done(), 120)
    return [
        e["payload"]
        for e in events
        if e.get("runId") == started["runId"] and e.get("type") == "tool.resultStored"
    ]


async def test_a_directory_swapped_for_a_symlink_is_never_followed(
    sidecars: SidecarFactory, tmp_path: Path
) -> None:
    try:  # the swap needs renameat2 (glibc 2.28, Linux 3.15) and a file system with it
        probe_a, probe_b = tmp_path / "pa", tmp_path / "pb"
        probe_a.mkdir()
        probe_b.symlink_to(probe_a)
        _exchange(probe_a, probe_b)
    except (AttributeError, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno not in (errno.ENOSYS, errno.EINVAL):
            raise
        pytest.skip(f"no renameat2(RENAME_EXCHANGE) here: {exc}")
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "d").mkdir(parents=True)
    (workspace / "d" / "f.txt").write_text("inside\n")
    outside.mkdir()
    (outside / "f.txt").write_text(f"{SECRET}\n")
    (workspace / "swap").symlink_to(outside)
    calls = (
        [
            {"id": f"r{i}", "name": "read_file", "arguments": {"path": "d/f.txt", "limit": 10 + i}}
            for i in range(READS)
        ]
        + [
            {
                "id": f"w{i}",
                "name": "write_file",
                "arguments": {"path": f"d/w{i}.txt", "content": "w"},
            }
            for i in range(WRITES)
        ]
        + [  # ripgrep, started in the directory checked (each pattern differs: no loop)
            {
                "id": f"g{i}",
                "name": "grep",
                "arguments": {"pattern": f"(in|0ut)|z{{{i}}}", "path": "d"},
            }
            for i in range(GREPS)
        ]
        + [  # a command, started in the directory checked (each differs: no loop)
            {
                "id": f"c{i}",
                "name": "run_command",
                "arguments": {"command": f"cat f.txt # {i}", "cwd": "d"},
            }
            for i in range(COMMANDS)
        ]
    )
    calls = [calls[i] for i in sorted(range(len(calls)), key=lambda i: (i * 7) % len(calls))]
    rounds: list[dict[str, Any]] = [
        {"toolCalls": calls[i : i + PER_ROUND]} for i in range(0, len(calls), PER_ROUND)
    ]
    rounds.append({"text": "done"})

    client = await sidecars.start()
    created = await client.request(
        "session/create", {"title": "race", "workspaceRoots": [str(workspace)]}
    )
    swapper = Swapper(workspace / "d", workspace / "swap")
    swapper.start()
    try:
        results = await _run(client, created["sessionId"], rounds)
    finally:
        swapper.stop.set()
        swapper.join(10)
    texts = {r["callId"]: json.dumps(r["content"]) for r in results}
    assert len(texts) == READS + WRITES + GREPS + COMMANDS
    leaked = sorted(k for k, text in texts.items() if SECRET in text)
    landed = sorted(p.name for p in outside.iterdir() if p.name != "f.txt")
    assert (leaked, landed) == ([], []), f"{leaked} leaked, {len(landed)} writes landed"
    # the race ran: the directory was swapped throughout, and some calls got through
    read_ok = sum(1 for r in results if r["callId"][0] == "r" and not r["isError"])
    found = sum(1 for k, text in texts.items() if k[0] == "g" and "inside" in text)
    ran = sum(1 for k, text in texts.items() if k[0] == "c" and "inside" in text)
    assert swapper.swaps > 100 and 0 < read_ok < READS and found and ran, (
        swapper.swaps,
        read_ok,
        found,
        ran,
    )
    written = sorted(p.name for p in (workspace / "d").iterdir() if p.name.startswith("w"))
    assert all(not n.endswith(".tmp") for n in written)  # no temporary left by a refusal
