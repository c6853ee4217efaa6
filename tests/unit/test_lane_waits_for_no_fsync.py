"""The CPU lane never waits for an fsync (``sidecar/aio.py``).

The lane runs one job at a time: an assembly, a lowering, a token count.  A job that also
wrote its result durably held the lane for the disk's time — a run round's snapshot (a blob:
write, fsync, rename, fsync of the directory) was stored from inside the lane, so every
``context/assemble`` and every other run's round queued behind that fsync, and ``make soak``'s
tails followed the disk.  The computing half (the snapshot's bytes and id) stays in the lane,
the waiting half (:meth:`~sidecar.inputs.snapshots.EncodedSnapshot.put`) runs in a worker
thread.  So do the blobs a captured input refers to (its AGENTS.md, pinned files): captured in
the lane, stored after it (:meth:`~sidecar.context.capture.Material.store_input`).  Here real
scripted runs (a tool round through the host, then an answer), an ``input/freeze`` and a
``snapshot/assemble`` go through the real run manager, store and context service, in a
workspace with an AGENTS.md, with every ``os.fsync`` recorded: some ran (the snapshots, the
inputs and their instructions are stored, durably), none in the lane.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol.inputs import InputFreezeParams
from protocol.snapshots import SnapshotAssembleParams
from sidecar.aio import in_cpu_lane, in_lane
from sidecar.inputs.loading import load_frozen_input
from sidecar.inputs.snapshots import load_snapshot
from sidecar.methods.inputs import freeze, snapshot_assemble
from sidecar.methods.state import SidecarState
from sidecar.runs.manager import RunManager
from tests.unit.run_kit import Host, start_params

pytestmark = pytest.mark.anyio


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "AGENTS.md").write_text("# Rules\n\nRun the tests before every commit.\n")
    return root


def _instructions_stored(state: SidecarState, input_id: str) -> None:
    frozen = load_frozen_input(state.store, input_id)
    assert frozen.instructions, "the AGENTS.md was captured"
    for item in frozen.instructions:
        assert state.store.blobs.has(item.blob)


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every ``os.fsync`` from now on: whether it ran in the CPU lane."""
    seen: list[bool] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        seen.append(in_lane())
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


async def test_the_lane_marks_its_jobs() -> None:
    assert not in_lane()
    assert await in_cpu_lane(in_lane)
    assert not in_lane()


async def test_a_runs_rounds_store_their_snapshots_outside_the_lane(
    state: SidecarState, workspace: Path, fsyncs: list[bool]
) -> None:
    host = Host()
    async with anyio.create_task_group() as tg:

        def spawn(fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
            tg.start_soon(fn)

        manager = RunManager(state.store, state.context, host, spawn)
        session = await state.store.sessions.create(
            title="t", workspace_roots=[str(workspace)], profile_id=None, meta=None
        )
        for turn in range(2):
            started = await manager.start(start_params(session.session_id, f"read ({turn})"))
            await manager.wait(started["runId"])
            record = manager.runs.get(started["runId"]).record
            assert record["status"] == "completed"
            _instructions_stored(state, record["inputId"])
    assembled = [
        event for line in host.events if (event := _event(line))["type"] == "context.assembled"
    ]
    assert len(assembled) == 4  # two rounds a run
    for event in assembled:  # each round's snapshot is stored
        load_snapshot(state.store.blobs, event["payload"]["snapshotId"])
    assert fsyncs, "the runs wrote durably"
    assert not any(fsyncs), f"{sum(fsyncs)} of {len(fsyncs)} fsyncs ran in the CPU lane"


async def test_input_freeze_and_snapshot_assemble_store_outside_the_lane(
    state: SidecarState, workspace: Path, fsyncs: list[bool]
) -> None:
    session = await state.store.sessions.create(
        title="t", workspace_roots=[str(workspace)], profile_id=None, meta=None
    )
    frozen = await freeze(
        state,
        InputFreezeParams.model_validate(
            {"sessionId": session.session_id, "userTurn": [{"type": "text", "text": "hi"}]},
            by_alias=True,
        ),
    )
    _instructions_stored(state, frozen["inputId"])
    assert not any(fsyncs), "input/freeze: an fsync in the CPU lane"
    answer = await snapshot_assemble(
        state,
        SnapshotAssembleParams.model_validate(
            {"sessionId": session.session_id, "inputId": frozen["inputId"]},
            by_alias=True,
        ),
    )
    snapshot = load_snapshot(state.store.blobs, answer["snapshotId"])
    assert snapshot["sessionId"] == session.session_id
    assert fsyncs, "the snapshot is stored durably"
    assert not any(fsyncs), f"{sum(fsyncs)} of {len(fsyncs)} fsyncs ran in the CPU lane"


def _event(line: bytes) -> dict[str, Any]:
    import json

    message = json.loads(line)
    return message.get("params", message)  # type: ignore[no-any-return]
