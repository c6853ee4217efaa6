"""What :class:`sidecar.rpc.early.EarlyDispatch` serves while pygls loads, and what it keeps
for pygls, in order (``sidecar/rpc/early.py``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import pytest

from protocol.framing import BadHeader
from sidecar.methods.light import LightServer
from sidecar.methods.state import SidecarState
from sidecar.rpc.early import EarlyDispatch

pytestmark = pytest.mark.anyio


def light_server(state: SidecarState) -> LightServer:
    return LightServer(
        state.store, state.limits.max_message_bytes, state.started_at, state.latencies
    )


def _no_state() -> SidecarState:
    raise AssertionError("nothing is served without an early initialize")


def body(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode()


class Wire:
    """The transport side: answers written, exit codes, tasks run in a task group."""

    def __init__(self, tg: anyio.abc.TaskGroup) -> None:
        self.sent: list[dict[str, Any]] = []
        self.exits: list[int] = []
        self.answered = anyio.Event()
        self._tg = tg

    def send(self, data: bytes) -> None:
        self.sent.append(json.loads(data))
        self.answered.set()

    def spawn(self, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self._tg.start_soon(fn)

    def connect(self, dispatch: EarlyDispatch) -> None:
        dispatch.connect(self.send, self.spawn, self.exits.append)


async def test_a_real_request_is_served_through_its_route(state: SidecarState) -> None:
    async with anyio.create_task_group() as tg:
        wire = Wire(tg)
        dispatch = EarlyDispatch(light_server(state), lambda: state)
        wire.connect(dispatch)
        dispatch.handle_body(body({"id": 1, "method": "session/create", "params": {"title": "a"}}))
        await dispatch.wait_idle()  # requests run concurrently, as under pygls
        dispatch.handle_body(body({"id": 2, "method": "session/list", "params": {}}))
        await dispatch.wait_idle()
    by_id = {m["id"]: m for m in wire.sent}
    assert by_id[1]["result"]["title"] == "a"
    assert [s["title"] for s in by_id[2]["result"]["sessions"]] == ["a"]
    assert dispatch.release() == []
    counts = state.latencies.wire()["counts"]  # server/info's latencies count them
    assert isinstance(counts, dict)
    assert {m: sum(row) for m, row in counts.items()} == {"session/create": 1, "session/list": 1}


async def test_invalid_params_get_the_same_error_as_from_pygls(state: SidecarState) -> None:
    async with anyio.create_task_group() as tg:
        wire = Wire(tg)
        dispatch = EarlyDispatch(light_server(state), lambda: state)
        wire.connect(dispatch)
        dispatch.handle_body(body({"id": 7, "method": "session/list", "params": {"limit": "x"}}))
        await dispatch.wait_idle()
    [answer] = wire.sent
    assert answer["id"] == 7 and answer["error"]["code"] == -32602
    assert answer["error"]["data"]["code"] == "params.invalid"


async def test_what_needs_pygls_is_held_with_everything_after_it(state: SidecarState) -> None:
    initialized = body({"method": "initialized", "params": {}})
    run_list = body({"id": 1, "method": "run/list", "params": {}})
    later = body({"id": 2, "method": "session/list", "params": {}})
    broken = BadHeader("no length")
    async with anyio.create_task_group() as tg:
        wire = Wire(tg)
        dispatch = EarlyDispatch(light_server(state), lambda: state)
        wire.connect(dispatch)
        dispatch.handle_body(initialized)
        dispatch.handle_body(run_list)
        dispatch.handle_body(later)
        dispatch.handle_frame_error(broken)
        assert dispatch.holds_frames()
    assert wire.sent == []
    # notifications first (they need no answer), then the held frames in arrival order
    assert dispatch.release() == [initialized, run_list, later, broken]


@pytest.mark.parametrize(
    "message",
    [
        {"id": 1, "method": "shutdown"},
        {"id": 1, "method": "session/delete", "params": {"sessionId": "x"}},
        {"id": 1, "method": "no/such/method", "params": {}},
        {"id": True, "method": "session/list", "params": {}},
        {"id": 1, "method": "session/list", "params": 5},
        {"id": 1, "result": None},
    ],
)
async def test_odd_or_run_aware_frames_are_left_to_pygls(
    state: SidecarState, message: dict[str, Any]
) -> None:
    async with anyio.create_task_group() as tg:
        wire = Wire(tg)
        dispatch = EarlyDispatch(light_server(state), lambda: state)
        wire.connect(dispatch)
        dispatch.handle_body(body(message))
        dispatch.handle_body(b"{not json")
    assert wire.sent == []
    assert len(dispatch.release()) == 2


async def test_without_an_early_initialize_nothing_is_served() -> None:
    async with anyio.create_task_group() as tg:
        wire = Wire(tg)
        dispatch = EarlyDispatch(None, _no_state)
        wire.connect(dispatch)
        dispatch.handle_body(body({"id": 1, "method": "session/list", "params": {}}))
    assert wire.sent == []
    assert len(dispatch.release()) == 1


async def test_cancel_of_a_request_being_served(state: SidecarState) -> None:
    async with anyio.create_task_group() as tg:
        wire = Wire(tg)
        dispatch = EarlyDispatch(light_server(state), lambda: state)
        wire.connect(dispatch)
        dispatch.handle_body(body({"id": 3, "method": "server/sleep", "params": {"ms": 60000}}))
        await anyio.lowlevel.checkpoint()
        dispatch.handle_body(body({"method": "$/cancelRequest", "params": {"id": 3}}))
        await wire.answered.wait()
    [answer] = wire.sent
    assert answer["id"] == 3 and answer["error"]["code"] == -32800
    assert answer["error"]["data"]["code"] == "request.cancelled"
    assert dispatch.release() == []


async def test_exit_before_the_server_loaded_ends_with_code_one(state: SidecarState) -> None:
    async with anyio.create_task_group() as tg:
        wire = Wire(tg)
        dispatch = EarlyDispatch(light_server(state), lambda: state)
        wire.connect(dispatch)
        dispatch.handle_body(body({"method": "exit"}))
    assert wire.exits == [1]


async def test_a_request_method_sent_as_a_notification_runs_unanswered(
    state: SidecarState, caplog: pytest.LogCaptureFixture
) -> None:
    async with anyio.create_task_group() as tg:
        wire = Wire(tg)
        dispatch = EarlyDispatch(light_server(state), lambda: state)
        wire.connect(dispatch)
        with caplog.at_level(logging.WARNING, logger="sidecar.rpc.early"):
            dispatch.handle_body(body({"method": "session/get", "params": {"sessionId": 5}}))
            await anyio.wait_all_tasks_blocked()
    assert wire.sent == []
    assert dispatch.release() == []
    assert "session/get" in caplog.text and "Traceback" not in caplog.text
