"""A run's quiet status changes are journaled, not fsynced (``sidecar/runs/loop_state.py``).

``assembling``, ``callingModel`` and ``compacting`` only say what the sidecar does next by
itself: their ``run.statusChanged`` is written to the journal before it is sent (as every
event), but neither the journal is fsynced nor ``run.json`` rewritten for them — a run of two
rounds fsynced its journal 7 times (creation, five status changes, the end), with ``run.json``
rewritten and its directory fsynced each time.  Durable points stay where something outside
the sidecar changes next (``dispatchingTool``: the journal fsynced) and at the creation and
the end (the journal and ``run.json``).  A reader in
another process still sees the newest status: ``RunStore.get`` and the run listing take it
from the journal.  Real scripted runs go through the real run manager, store and context
service; every ``os.fsync`` is recorded with the file it syncs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio
import pytest

from sidecar.methods.state import SidecarState
from sidecar.runs.journal import RunStore
from sidecar.runs.manager import RunManager
from tests.unit.run_kit import Host, start_params

pytestmark = pytest.mark.anyio


class _Host(Host):
    """At each status change it is sent, it reads the run as another process would: a fresh
    ``RunStore`` over the same directory."""

    def __init__(self, runs_root: Path) -> None:
        super().__init__()
        self.runs_root = runs_root
        self.seen: list[tuple[str, str, str]] = []  # (status sent, status read, listed)

    def sent(self, line: bytes) -> None:
        message = json.loads(line)
        params = message.get("params", message)
        if params["type"] != "run.statusChanged":
            return
        run_id = params["runId"]
        read = RunStore(self.runs_root).get(run_id).record["status"]
        listed = RunStore(self.runs_root).list_runs(None, 10)
        status = next(r["status"] for r in listed if r["runId"] == run_id)
        self.seen.append((params["payload"]["status"], read, status))


async def test_quiet_statuses_are_journaled_not_fsynced_and_readers_see_them(
    state: SidecarState, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    host = _Host(state.store.root / "runs")
    async with anyio.create_task_group() as tg:

        def spawn(fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
            tg.start_soon(fn)

        manager = RunManager(state.store, state.context, host, spawn)
        session = await state.store.sessions.create(
            title="t", workspace_roots=[], profile_id=None, meta=None
        )
        started = await manager.start(start_params(session.session_id, "read a.py"))
        await manager.wait(started["runId"])
    run_id = started["runId"]
    assert RunStore(state.store.root / "runs").get(run_id).record["status"] == "completed"
    sent = [s for s, _, _ in host.seen]
    assert sent == ["assembling", "callingModel", "dispatchingTool", "assembling", "callingModel"]
    for status, read, listed in host.seen:  # another process reads the newest status
        assert (read, listed) == (status, status)
    journal = [p for p in synced if p.endswith(f"{run_id}/events.jsonl")]
    assert len(journal) == 3, synced  # created, dispatchingTool, the end
    records = [p for p in synced if "/" + run_id + "/" in p and "run.json" in p]
    assert len(records) == 2, synced  # created, the end: a status between is the journal's
