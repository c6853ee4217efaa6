"""``sidecar.methods.route.bind``: lifecycle check, validation at the edge, error mapping."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from protocol import methods as m
from protocol.methods import MethodSpec
from protocol.sessions import SessionRef
from sidecar.errors import NotFoundError
from sidecar.methods.errors import MethodError
from sidecar.methods.route import Route, bind
from sidecar.methods.state import SidecarState
from sidecar.methods.table import ROUTES

pytestmark = pytest.mark.anyio

Feature = Callable[[Any], Awaitable[Any]]


def custom(
    spec: MethodSpec[Any, Any], handler: Callable[[SidecarState, Any], Awaitable[Any]]
) -> Route:
    return Route(spec, handler)


def route(name: str) -> Route:
    return next(r for r in ROUTES if r.spec.name == name)


async def call(feature: Feature, params: Any) -> MethodError:
    with pytest.raises(MethodError) as info:
        await feature(params)
    return info.value


def everything_said(exc: MethodError) -> str:
    """All a client would see of an error: its message and its data."""
    return exc.message + str(exc) + json.dumps(exc.data)


async def test_valid_params_reach_the_handler_and_results_are_wire_json(
    state: SidecarState,
) -> None:
    create = bind(state, route("session/create"))
    result = await create({"title": "hi", "workspaceRoots": ["/w"]})
    assert isinstance(result, dict)
    assert result["title"] == "hi"
    assert result["workspaceRoots"] == ["/w"]
    assert result["headSeq"] == 0
    assert "profileId" not in result  # None is omitted on the wire
    got = await bind(state, route("session/get"))({"sessionId": result["sessionId"]})
    assert got == result
    assert (await bind(state, route("session/list"))(None))["sessions"] == [result]


async def test_invalid_params_are_32602_with_every_error_in_camel_case(
    state: SidecarState,
) -> None:
    append = bind(state, route("session/append"))
    exc = await call(
        append,
        {
            "session_id": "ses_x",
            "entries": [{"kind": "message", "role": "robot", "content": []}],
            "expectedHeadSeq": "1",
        },
    )
    assert exc.code == -32602
    data = exc.data
    assert isinstance(data, dict)
    assert data["code"] == "params.invalid"
    errors = {(e["loc"], e["type"]) for e in data["errors"]}
    assert ("sessionId", "missing") in errors
    assert ("session_id", "extra_forbidden") in errors
    assert ("expectedHeadSeq", "int_type") in errors
    assert ("entries.0.message.role", "literal_error") in errors
    assert ("entries.0.message.content", "too_short") in errors
    assert all(set(e) == {"loc", "msg", "type"} for e in data["errors"])
    assert "session/append" in exc.message
    assert "(and 4 more)" in exc.message


@pytest.mark.parametrize(
    ("name", "params", "loc", "kind"),
    [
        ("session/read", {"sessionId": "s", "limit": 0}, "limit", "greater_than_equal"),
        ("session/read", {"sessionId": "s", "withTokens": 1}, "withTokens", "bool_type"),
        ("session/list", {"limit": 5.0}, "limit", "int_type"),
        ("session/create", ["not", "an", "object"], "", "model_type"),
        ("tokens/count", {"texts": []}, "texts", "too_short"),
        ("server/ping", {"unexpected": True}, "unexpected", "extra_forbidden"),
    ],
)
async def test_each_kind_of_bad_params_is_32602(
    state: SidecarState, name: str, params: Any, loc: str, kind: str
) -> None:
    exc = await call(bind(state, route(name)), params)
    assert exc.code == -32602
    assert isinstance(exc.data, dict)
    assert exc.data["code"] == "params.invalid"
    assert [(e["loc"], e["type"]) for e in exc.data["errors"]] == [(loc, kind)]


async def test_omitted_params_mean_an_empty_object(state: SidecarState) -> None:
    result = await bind(state, route("server/ping"))(None)
    assert isinstance(result, dict) and "time" in result


async def test_domain_error_is_32000_with_its_code(state: SidecarState) -> None:
    missing = "ses_01ARZ3NDEKTSV4RRFFQ69G5FAV"
    exc = await call(bind(state, route("session/get")), {"sessionId": missing})
    assert exc.code == -32000
    assert exc.data == {
        "code": "session.not_found",
        "retryable": False,
        "details": {"sessionId": missing},
    }
    assert missing in exc.message


async def test_handler_raising_not_found_is_mapped(state: SidecarState) -> None:
    async def handler(_: SidecarState, params: SessionRef) -> None:
        raise NotFoundError("blob.not_found", f"no blob for {params.session_id}")

    exc = await call(bind(state, custom(m.SESSION_GET, handler)), {"sessionId": "abc"})
    assert exc.code == -32000
    assert isinstance(exc.data, dict)
    assert exc.data["code"] == "blob.not_found"
    assert exc.message == "no blob for abc"


async def test_unexpected_exception_is_32603_without_details(
    state: SidecarState, caplog: pytest.LogCaptureFixture
) -> None:
    async def handler(_: SidecarState, __: Any) -> None:
        raise RuntimeError("secret detail")

    feature = bind(state, custom(m.SERVER_PING, handler))
    with caplog.at_level(logging.ERROR, logger="sidecar.methods.errors"):
        exc = await call(feature, {})
    assert exc.code == -32603
    assert isinstance(exc.data, dict)
    assert exc.data["code"] == "server.internal"
    error_id = exc.data["details"]["errorId"]
    assert isinstance(error_id, str) and error_id.startswith("err_")
    assert error_id in exc.message
    said = everything_said(exc)
    assert "secret detail" not in said
    assert "Traceback" not in said
    assert "RuntimeError" not in said
    assert exc.__cause__ is None
    # The details go to the log, under the same errorId.
    logged = [r for r in caplog.records if error_id in r.getMessage()]
    assert logged and logged[0].exc_info is not None
    assert "secret detail" in caplog.text


async def test_before_initialize_is_32002(state: SidecarState) -> None:
    state.initialized = False
    calls: list[Any] = []

    async def handler(_: SidecarState, params: Any) -> None:
        calls.append(params)

    feature = bind(state, custom(m.SERVER_PING, handler))
    for params in ({}, {"bad": 1}):
        exc = await call(feature, params)
        assert exc.code == -32002
        assert isinstance(exc.data, dict)
        assert exc.data["code"] == "server.not_initialized"
        assert "server/ping" in exc.message
    assert calls == []
    state.initialized = True
    assert await feature({}) is None
    assert len(calls) == 1


async def test_cancellation_propagates(state: SidecarState) -> None:
    sleep = bind(state, route("server/sleep"))

    async def call_sleep() -> Any:
        return await sleep({"ms": 10_000})

    task = asyncio.get_running_loop().create_task(call_sleep())
    await asyncio.sleep(0.05)
    task.cancel()
    await asyncio.wait({task}, timeout=5)
    assert task.cancelled()


async def test_feature_is_named_after_the_method(state: SidecarState) -> None:
    assert bind(state, route("session/create")).__name__ == "rpc_session_create"
