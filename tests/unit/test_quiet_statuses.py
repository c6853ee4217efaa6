"""A run's quiet status changes are journaled, not fsynced (``sidecar/runs/loop_state.py``).

``assembling``, ``callingModel`` and ``compacting`` only say what the sidecar does next by
itself: their ``run.statusChanged`` is written to the journal before it is sent (as every
event), but neither the journal is fsynced nor ``run.json`` rewritten for them — a run of two
rounds fsynced its journal 7 times (creation, five status changes, the end), with ``run.json``
rewritten and its directory fsynced each time.  Durable points stay where something outside
the sidecar changes next (``dispatchingTool``) and at the creation and the end.  A reader in
another process still sees the newest status: ``RunStore.get`` and the run listing take it
from the journal.  Real scripted runs go through the real run manager, store and context
service; every ``os.fsync`` is recorded with the file it syncs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import pytest

from protocol.runs import RunStartParams
from sidecar.methods.state import SidecarState
from sidecar.runs.journal import RunStore
from sidecar.runs.manager import RunManager

pytestmark = pytest.mark.anyio

SCRIPT = {
    "rounds": [
        {
            "deltas": ["Reading."],
            "toolCalls": [{"name": "read_file", "arguments": {"path": "a.py"}}],
            "usage": {"inputTokens": 10, "outputTokens": 2},
        },
        {"deltas": ["Done."], "usage": {"inputTokens": 12, "outputTokens": 1}},
    ]
}
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


class _Host:
    """A host that executes every tool and, at each status change it is sent, reads the run
    as another process would: a fresh ``RunStore`` over the same directory."""

    def __init__(self, runs_root: Any) -> None:
        self.runs_root = runs_root
        self.seen: list[tuple[str, str, str]] = []  # (status sent, status read, listed)

    def notify(self, method: str, params: Any) -> None:
        pass

    def host_assembles(self) -> bool:
        return False

    def backlog(self) -> int:
        return 0

    async def request(self, method: str, params: Any, timeout_s: float) -> Any:
        assert method == "tool/execute"
        return {"content": [{"type": "text", "text": "def main() -> None: ..."}]}

    def send_event(
        self, line: bytes, journaled: Callable[[], None], event: dict[str, Any] | None = None
    ) -> None:
        journaled()  # the journal is written before the event leaves
        import json

        message = json.loads(line)
        params = message.get("params", message)
        if params["type"] != "run.statusChanged":
            return
        reader = RunStore(self.runs_root)
        read = reader.get(params["runId"]).record["status"]
        listed = next(
            r for r in RunStore(self.runs_root).list_runs(None, 10) if r["runId"] == params["runId"]
        )["status"]
        self.seen.append((params["payload"]["status"], read, listed))

    def after_answer(self, fn: Callable[[], object]) -> None:
        fn()


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
        params = RunStartParams.model_validate(
            {
                "sessionId": session.session_id,
                "userTurn": [{"type": "text", "text": "read a.py"}],
                "tools": TOOLS,
                "script": SCRIPT,
            },
            by_alias=True,
        )
        started = await manager.start(params)
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
    assert len(records) == 3, synced
