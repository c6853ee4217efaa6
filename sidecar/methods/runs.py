"""``run/*``: start, get, list, subscribe, unsubscribe, cancel, resume."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol import methods as m
from protocol.runs import (
    Run,
    RunGetParams,
    RunListParams,
    RunListResult,
    RunResumeParams,
    RunStartParams,
    RunStartResult,
    RunSubscribeParams,
    RunSubscribeResult,
    RunUnsubscribeParams,
)
from sidecar.methods.route import route

if TYPE_CHECKING:
    from sidecar.methods.state import SidecarState

__all__ = ["ROUTES"]


def _run(record: dict[str, Any]) -> Run:
    return Run.model_validate(record, by_alias=True)


async def start(state: SidecarState, p: RunStartParams) -> RunStartResult:
    state.store.require_writable()  # before the input's blobs and the run journal are written
    return RunStartResult.model_validate(await state.runs.start(p), by_alias=True)


async def get(state: SidecarState, p: RunGetParams) -> Run:
    return _run(state.runs.get(p.run_id))


async def list_(state: SidecarState, p: RunListParams) -> RunListResult:
    return RunListResult(runs=[_run(r) for r in state.runs.list_runs(p.session_id, p.limit)])


async def subscribe(state: SidecarState, p: RunSubscribeParams) -> RunSubscribeResult:
    return RunSubscribeResult.model_validate(
        state.runs.subscribe(p.run_id, p.after_seq), by_alias=True
    )


async def unsubscribe(state: SidecarState, p: RunUnsubscribeParams) -> Run:
    state.runs.unsubscribe(p.run_id)
    return _run(state.runs.get(p.run_id))


async def cancel(state: SidecarState, p: RunGetParams) -> Run:
    state.runs.cancel(p.run_id)
    await state.runs.wait(p.run_id)
    return _run(state.runs.get(p.run_id))


async def resume(state: SidecarState, p: RunResumeParams) -> RunStartResult:
    state.store.require_writable()
    return RunStartResult.model_validate(await state.runs.resume(p), by_alias=True)


ROUTES = (
    route(m.RUN_START, start),
    route(m.RUN_GET, get),
    route(m.RUN_LIST, list_),
    route(m.RUN_SUBSCRIBE, subscribe),
    route(m.RUN_UNSUBSCRIBE, unsubscribe),
    route(m.RUN_CANCEL, cancel),
    route(m.RUN_RESUME, resume),
)
