"""Runs and assemblies are freed by reference counting, not left to the cyclic collector.

A run loop and its rounds pointed at one another, and the sent-body accounting walked each
block with a recursive closure: left as cycles, every finished run (its prompts, its request
shapes) waited for a full collection, and ``make soak``'s full collections grew with the runs
of the last minute.  Here real scripted runs (a tool round through the host, then an answer)
and assemblies go through the real run manager, store and context service with the collector
off, after a first use has built what lives as long as the process; what a collection then
finds unreachable is kept (``DEBUG_SAVEALL``) and must be nothing.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol.context import ContextAssembleParams
from sidecar.context.service import ContextService
from sidecar.context.tokens import Tokenizers
from sidecar.runs.compaction import Compaction
from sidecar.runs.loop import RunLoop
from sidecar.runs.manager import RunManager
from sidecar.runs.model_round import ModelRound
from sidecar.runs.tool_round import ToolRound
from sidecar.store import Store
from tests.unit.run_kit import Host, start_params

pytestmark = pytest.mark.anyio

RUN_PARTS = (RunLoop, ModelRound, ToolRound, Compaction)


def _garbage_kinds() -> list[str]:
    """What a collection finds unreachable now (the collector saving it all)."""
    gc.collect()
    return sorted({f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage})


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _assemble_params(session_id: str) -> ContextAssembleParams:
    return ContextAssembleParams.model_validate(
        {
            "sessionId": session_id,
            "userTurn": [{"type": "text", "text": "next"}],
            "date": "2026-11-30",
            "profile": {"model": "claude-sonnet-4-5", "window": 200_000, "maxOutput": 4096},
        },
        by_alias=True,
    )


@pytest.mark.usefixtures("collector_off")
async def test_runs_and_assemblies_leave_nothing_to_the_cyclic_collector(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    try:
        service = ContextService(store, Tokenizers.discover(), home=tmp_path / "home")
        host = Host()
        async with anyio.create_task_group() as tg:

            def spawn(fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
                tg.start_soon(fn)

            manager = RunManager(store, service, host, spawn)
            session = await store.sessions.create(
                title="t", workspace_roots=[], profile_id=None, meta=None
            )

            async def run(turn: int) -> None:
                started = await manager.start(start_params(session.session_id, f"read ({turn})"))
                await manager.wait(started["runId"])
                record = manager.runs.get(started["runId"]).record
                assert record["status"] == "completed", record

            # first use builds what lives as long as the process (pydantic's validators...)
            await run(0)
            service.assemble(_assemble_params(session.session_id))
            gc.collect()
            gc.disable()
            gc.set_debug(gc.DEBUG_SAVEALL)
            for turn in range(1, 4):
                await run(turn)
                service.assemble(_assemble_params(session.session_id))
        assert host.events, "the runs' events reached the host"
        kinds = _garbage_kinds()
        parts = [o for o in gc.garbage if isinstance(o, RUN_PARTS)]
        assert parts == [], "a run loop was left as a cycle"
        assert kinds == []
    finally:
        store.close()
