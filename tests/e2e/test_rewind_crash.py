"""``kill -9`` in the middle of a restore (issue 44): every file is as it was or as restored,
the journal says which, and the store reopens clean — the next restore closes the
interrupted one and finishes the job.

The sidecar is slowed down after each restored file (:data:`STALL_ENV`) so that the kill
lands between two files, and killed once the journal shows two of them done.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sidecar.checkpoints.restore import STALL_ENV
from tests.conftest import SidecarFactory
from tests.e2e.crashkit import checkpoint_journal
from tests.e2e.test_runs import Host

pytestmark = pytest.mark.anyio

FILES = [f"f{i}.txt" for i in range(6)]


async def test_kill_9_during_a_restore(sidecars: SidecarFactory, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for name in FILES:
        (root / name).write_text(f"{name} before the turn\n")
    client = await sidecars.start(env={STALL_ENV: "0.3"})
    host = Host(client)
    sid = (
        await client.request("session/create", {"title": "crash", "workspaceRoots": [str(root)]})
    )["sessionId"]
    calls = [
        {"id": f"w{i}", "name": "write_file", "arguments": {"path": n, "content": "by the agent\n"}}
        for i, n in enumerate(FILES)
    ]
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "rewrite them all"}],
            "builtinTools": {"mode": "allow_all"},
            "script": {"rounds": [{"toolCalls": calls}, {"text": "done"}]},
        },
    )
    events = await host.until_done(started["runId"], timeout=60)
    assert events[-1]["payload"] == {"status": "completed"}, events[-1]
    listed = await client.request("checkpoint/list", {"sessionId": sid})
    turn = next(c for c in listed["checkpoints"] if c["reason"] == "turn")
    assert turn["changedFiles"] == len(FILES)

    request = asyncio.ensure_future(
        client.request(
            "checkpoint/restore",
            {
                "sessionId": sid,
                "checkpointId": turn["checkpointId"],
                "files": True,
                "conversation": False,
            },
        )
    )

    async def two_done() -> None:
        while sum(r["type"] == "restored" for r in checkpoint_journal(sidecars.store, sid)) < 2:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(two_done(), 30)
    client.kill()  # SIGKILL, mid-restore
    with pytest.raises(Exception):  # noqa: B017 - the connection is gone, however it says so
        await asyncio.wait_for(request, 10)
    await client.wait()

    journal = checkpoint_journal(sidecars.store, sid)
    (begun,) = [r for r in journal if r["type"] == "restore"]
    assert {s["path"] for s in begun["plan"]} == set(FILES)
    done = {r["path"] for r in journal if r["type"] == "restored"}
    assert 2 <= len(done) < len(FILES)
    assert not [r for r in journal if r["type"] == "restoreEnd"]
    for name in FILES:
        text = (root / name).read_text()
        assert text in (f"{name} before the turn\n", "by the agent\n"), name
        if name in done:
            assert text == f"{name} before the turn\n", name
    in_flight = [n for n in FILES if n not in done and "before" in (root / n).read_text()]
    assert len(in_flight) <= 1  # renamed, killed before its journal line
    assert sorted(p.name for p in root.iterdir()) == FILES  # no temporary file left

    # the store reopens clean; the next restore closes the interrupted one and finishes
    again = await sidecars.start()
    listed = await again.request("checkpoint/list", {"sessionId": sid})
    assert listed["total"] >= 3
    finished = await again.request(
        "checkpoint/restore",
        {
            "sessionId": sid,
            "checkpointId": turn["checkpointId"],
            "files": True,
            "conversation": False,
        },
    )
    assert finished["status"] == "restored", finished
    assert {r["path"] for r in finished["restored"]} == set(FILES) - done - set(in_flight)
    for name in FILES:
        assert (root / name).read_text() == f"{name} before the turn\n"
    ends = [r for r in checkpoint_journal(sidecars.store, sid) if r["type"] == "restoreEnd"]
    assert ends[0]["restoreId"] == begun["restoreId"] and ends[0]["interrupted"] is True
    assert "interrupted" not in ends[1]
