"""``kill -9`` in the middle of a checkpoint's capture (issue 44): the store reopens clean.

A first checkpoint of a tree of many files hashes and stores every one of them, which takes
seconds; the sidecar is killed once some of its objects are on disk and before the checkpoint
is recorded.  Then: the object database is sound by git's own check (``git fsck`` on the
store's blob directory, which is laid out as a bare repository: no corrupt or truncated
object, whatever was half written); the journal holds no checkpoint that points at a tree the
store lacks; a new sidecar on the same store takes the next run's checkpoint, whose tree git
reads whole, and restores from it.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SidecarFactory
from tests.e2e.crashkit import checkpoint_journal
from tests.e2e.test_runs import Host

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("git") is None, reason="git checks the object database"),
]

FILES = 6_000


def _objects(store: Path) -> int:
    root = store / "blobs" / "objects"
    return (
        sum(1 for d in root.iterdir() if len(d.name) == 2 for _ in d.iterdir())
        if root.exists()
        else 0
    )


def _git(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "--git-dir", str(store / "blobs"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def _run(client: Any, sid: str, text: str) -> str:
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": text}],
            "builtinTools": {"mode": "allow_all"},
            "script": {
                "rounds": [
                    {
                        "toolCalls": [
                            {
                                "id": "w0",
                                "name": "write_file",
                                "arguments": {"path": "d0/f0.txt", "content": "by the agent\n"},
                            }
                        ]
                    },
                    {"text": "done"},
                ]
            },
        },
    )
    return str(started["runId"])


async def test_kill_9_during_a_capture(sidecars: SidecarFactory, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    for i in range(FILES):
        d = root / f"d{i % 60}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.txt").write_text(f"file {i}\n" + "x" * (i % 997) + "\n")
    client = await sidecars.start()
    sid = (
        await client.request("session/create", {"title": "crash", "workspaceRoots": [str(root)]})
    )["sessionId"]
    before = _objects(sidecars.store)
    await _run(client, sid, "first")

    async def some_stored() -> None:
        while _objects(sidecars.store) < before + 200:
            await asyncio.sleep(0.005)

    await asyncio.wait_for(some_stored(), 60)
    client.kill()  # SIGKILL, mid-capture
    await client.wait()
    # killed midway, not after: fewer objects than the files (and their trees) need
    assert _objects(sidecars.store) < before + FILES, "the capture finished: a larger tree"

    fsck = _git(sidecars.store, "fsck", "--full", "--no-dangling")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    for record in checkpoint_journal(sidecars.store, sid):
        for root_state in record.get("roots") or []:
            tree = str(root_state["tree"])
            assert _git(sidecars.store, "cat-file", "-e", tree).returncode == 0, record

    # the store reopens clean: the next run's checkpoint is whole and restores
    again = await sidecars.start()
    host = Host(again)
    run = await _run(again, sid, "second")
    events = await host.until_done(run, timeout=120)
    assert events[-1]["payload"] == {"status": "completed"}, events[-1]
    listed = await again.request("checkpoint/list", {"sessionId": sid})
    turn = next(c for c in listed["checkpoints"] if c["reason"] == "turn")
    assert turn["files"] == FILES
    assert (root / "d0" / "f0.txt").read_text() == "by the agent\n"
    restored = await again.request(
        "checkpoint/restore",
        {
            "sessionId": sid,
            "checkpointId": turn["checkpointId"],
            "files": True,
            "conversation": False,
        },
    )
    assert restored["status"] == "restored", restored
    assert (root / "d0" / "f0.txt").read_text() == "file 0\n\n"
    for record in checkpoint_journal(sidecars.store, sid):
        for root_state in record.get("roots") or []:
            listing = _git(sidecars.store, "ls-tree", "-r", str(root_state["tree"]))
            assert listing.returncode == 0, listing.stderr
    fsck = _git(sidecars.store, "fsck", "--full", "--no-dangling")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
