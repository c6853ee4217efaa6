"""Two sidecar processes on one store, checkpointing one git workspace at once (issue 44 with
issue 43's many windows): each window's session gets its own whole checkpoints, each restore
puts back its own session's files, the store's object database stays sound (``git fsck``), and
the user's ``.git/`` is byte-identical before and after everything."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SidecarFactory
from tests.e2e.test_runs import Host

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("git") is None, reason="a real git repository"),
]


def _tree_digest(path: Path) -> str:
    digest = hashlib.sha256()
    for item in sorted(path.rglob("*")):
        digest.update(str(item.relative_to(path)).encode())
        if item.is_file() and not item.is_symlink():
            digest.update(item.read_bytes())
    return digest.hexdigest()


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


async def _turn(client: Any, sid: str, name: str, rounds: int) -> None:
    calls = [
        {
            "id": f"{name}{i}",
            "name": "write_file",
            "arguments": {"path": f"{name}.txt", "content": f"{name} round {i}\n"},
        }
        for i in range(rounds)
    ]
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": f"write {name}"}],
            "builtinTools": {"mode": "allow_all"},
            "script": {"rounds": [{"toolCalls": [c]} for c in calls] + [{"text": "done"}]},
        },
    )
    events = await Host(client).until_done(started["runId"], timeout=120)
    assert events[-1]["payload"] == {"status": "completed"}, events[-1]


async def test_two_windows_checkpoint_one_workspace(
    sidecars: SidecarFactory, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for i in range(300):
        (root / f"src{i % 7}").mkdir(exist_ok=True)
        (root / f"src{i % 7}" / f"m{i}.py").write_text(f"x = {i}\n")
    (root / "a.txt").write_text("a before\n")
    (root / "b.txt").write_text("b before\n")
    _git("init", "-q", cwd=root)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "add", "-A", cwd=root)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base", cwd=root)
    git_before = _tree_digest(root / ".git")

    one, two = await sidecars.start(), await sidecars.start()
    sid_a = (await one.request("session/create", {"title": "a", "workspaceRoots": [str(root)]}))[
        "sessionId"
    ]
    sid_b = (await two.request("session/create", {"title": "b", "workspaceRoots": [str(root)]}))[
        "sessionId"
    ]
    await asyncio.gather(_turn(one, sid_a, "a", 4), _turn(two, sid_b, "b", 4))
    assert _tree_digest(root / ".git") == git_before

    for client, sid, name in ((one, sid_a, "a"), (two, sid_b, "b")):
        listed = await client.request("checkpoint/list", {"sessionId": sid})
        turn = next(c for c in listed["checkpoints"] if c["reason"] == "turn")
        assert turn["files"] >= 302
        restored = await client.request(
            "checkpoint/restore",
            {
                "sessionId": sid,
                "checkpointId": turn["checkpointId"],
                "files": True,
                "conversation": False,
                "force": True,
            },
        )
        assert restored["status"] == "restored", restored
        assert (root / f"{name}.txt").read_text() == f"{name} before\n"
        assert _tree_digest(root / ".git") == git_before
    fsck = subprocess.run(
        ["git", "--git-dir", str(sidecars.store / "blobs"), "fsck", "--full", "--no-dangling"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
