"""Bad input gets a clear error and the connection lives on (DESIGN.md §8)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from protocol.framing import encode_frame
from sidecar.client import RpcError, SidecarClient
from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio


async def still_alive(client: SidecarClient) -> None:
    pong = await client.request("server/ping", {})
    assert "time" in pong


async def error_of(client: SidecarClient, method: str, params: object) -> RpcError:
    with pytest.raises(RpcError) as err:
        await client.request(method, params)
    return err.value


async def test_invalid_params_list_every_problem_in_wire_names(sidecar: SidecarClient) -> None:
    err = await error_of(
        sidecar,
        "session/append",
        {
            "sessionId": "ses_x",
            "entries": [{"kind": "message", "role": "robot", "content": []}],
            "expectedHeadSeq": "3",
            "bogus": True,
        },
    )
    assert err.code == -32602
    assert err.data["code"] == "params.invalid"
    problems = {(e["loc"], e["type"]) for e in err.data["errors"]}
    assert ("entries.0.message.role", "literal_error") in problems
    assert ("entries.0.message.content", "too_short") in problems
    assert ("expectedHeadSeq", "int_type") in problems  # strict: no "3" -> 3 coercion
    assert ("bogus", "extra_forbidden") in problems
    assert "invalid params for session/append" in err.message
    await still_alive(sidecar)


async def test_snake_case_names_are_not_the_wire_format(sidecar: SidecarClient) -> None:
    err = await error_of(sidecar, "session/get", {"session_id": "ses_x"})
    assert err.code == -32602
    assert {e["loc"] for e in err.data["errors"]} == {"sessionId", "session_id"}


async def test_params_of_the_wrong_json_type(sidecar: SidecarClient) -> None:
    err = await error_of(sidecar, "session/list", [1, 2])
    assert err.code == -32602 and err.data["code"] == "params.invalid"
    await still_alive(sidecar)


async def test_unknown_method(sidecars: SidecarFactory) -> None:
    """-32601 with ``data.code``; a client's typo is no server fault: nothing in the log."""
    client = await sidecars.start()
    err = await error_of(client, "session/teleport", {})
    assert err.code == -32601
    assert err.data == {
        "code": "method.not_found",
        "retryable": False,
        "details": {"method": "session/teleport"},
    }
    await still_alive(client)
    assert await client.close() == 0
    assert sidecars.stderr_of(client) == ""


#: What editors send on their own (Neovim's ``:w``, VS Code's ``synchronize``, progress...).
EDITOR_NOTIFICATIONS: list[tuple[str, Any]] = [
    ("textDocument/didSave", {"textDocument": {"uri": "file:///tmp/a.py"}}),
    ("workspace/didChangeConfiguration", {"settings": {"contextSidecar": {}}}),
    ("$/progress", {"token": "p1", "value": {"kind": "end"}}),
    ("$/someFutureNotification", {}),
    ("myEditor/somethingHappened", [1, 2]),
]


async def test_unknown_notifications_are_ignored_without_a_word(sidecars: SidecarFactory) -> None:
    """LSP: a notification the server does not handle is ignored — no ``window/showMessage``
    (an error pop-up in the editor), no log line, and the connection carries on."""
    client = await sidecars.start()
    received: list[str] = []
    client.on_notification(lambda method, _params: received.append(method))
    for method, params in EDITOR_NOTIFICATIONS:
        client.notify(method, params)
    await still_alive(client)
    assert await client.close() == 0
    assert received == []
    assert sidecars.stderr_of(client) == ""


#: What clients nobody here wrote send (issue 20): no params, ``[]`` for ``{}``, params an LSP
#: type does not take, and pygls' document handlers' food.  ``...``: the frame has no params.
ODD_NOTIFICATIONS: list[tuple[str, Any]] = [
    ("initialized", ...),  # vscode-jsonrpc's sendNotification("initialized")
    ("initialized", []),
    ("workspace/didChangeConfiguration", []),  # Neovim's client:notify(method, {})
    ("workspace/didChangeConfiguration", ...),
    ("textDocument/didSave", {"uri": "x"}),
    ("$/progress", {"x": 1}),
    ("$/cancelRequest", ...),
    ("$/cancelRequest", []),
    ("$/setTrace", {}),
    ("shutdown", ...),  # a request method sent as a notification
    # pygls' built-in document handlers, for features the sidecar does not advertise
    ("textDocument/didOpen", {"textDocument": {"uri": "file:///y"}}),
    (
        "textDocument/didChange",
        {"textDocument": {"uri": "file:///x", "version": 2}, "contentChanges": [{"text": "a"}]},
    ),
    ("textDocument/didClose", {"textDocument": {"uri": "file:///never-opened"}}),
    ("window/workDoneProgress/cancel", {"token": "t"}),
    ("workspace/didChangeWorkspaceFolders", {"event": {"added": [], "removed": []}}),
]


def notify_raw(client: SidecarClient, method: str, params: Any) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not ...:
        message["params"] = params
    client.send_raw(encode_frame(json.dumps(message).encode()))


def loud_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if any(w in line for w in LOUD_WORDS)]


LOUD_WORDS = ("Traceback", "ERROR", "WARNING")


async def test_odd_notifications_are_ignored_quietly_before_and_after_the_server_loads(
    sidecars: SidecarFactory,
) -> None:
    """Issue 20, items 1 and 2: ignored without an ERROR, a WARNING or a traceback in the log,
    whether they reach the early dispatch (right after ``initialize``) or pygls (once a
    ``run/*`` request, which only pygls serves, is answered)."""
    client = await sidecars.start()
    for method, params in ODD_NOTIFICATIONS:
        notify_raw(client, method, params)
    await still_alive(client)
    await client.request("session/create", {"title": "loaded"})
    await client.request("run/list", {})  # held until pygls is attached: it is now
    for method, params in ODD_NOTIFICATIONS:
        notify_raw(client, method, params)
    await still_alive(client)
    assert await client.close() == 0
    logged = sidecars.stderr_of(client)
    assert loud_lines(logged) == [], logged
    assert logged == ""


async def test_requests_to_methods_the_sidecar_does_not_have_get_minus_32601(
    sidecars: SidecarFactory,
) -> None:
    """Issue 20, item 3: no ``executeCommandProvider`` is advertised, so
    ``workspace/executeCommand`` is a method the sidecar does not have, like any LSP request
    it does not serve (whatever their params), and a notification method sent with an id."""
    client = await sidecars.start()
    await client.request("run/list", {})
    for method, params in [
        ("workspace/executeCommand", {"command": "x"}),
        ("textDocument/hover", {}),
        ("initialized", {}),
        ("$/setTrace", {"value": "off"}),
    ]:
        err = await error_of(client, method, params)
        assert (err.code, err.data) == (
            -32601,
            {"code": "method.not_found", "retryable": False, "details": {"method": method}},
        ), method
    await still_alive(client)
    assert await client.close() == 0
    assert sidecars.stderr_of(client) == ""


async def test_a_failing_notification_pops_nothing_up(sidecars: SidecarFactory) -> None:
    """A request method sent as a notification, with bad params: there is no one to answer,
    and an editor pop-up is no answer either; the log says it in one line."""
    client = await sidecars.start()
    received: list[str] = []
    client.on_notification(lambda method, _params: received.append(method))
    client.notify("session/get", {"sessionId": 5})
    await still_alive(client)
    assert await client.close() == 0
    assert received == []
    logged = sidecars.stderr_of(client)
    assert "session/get" in logged and "Traceback" not in logged


async def test_an_empty_array_stands_for_an_empty_object(sidecar: SidecarClient) -> None:
    """Neovim's ``vim.json`` encodes an empty Lua table, ``{}``, as ``[]``."""
    assert "time" in await sidecar.request("server/ping", [])
    created = await sidecar.request("session/create", {"title": "nvim", "meta": []})
    assert created.get("meta", {}) == {}
    sid = created["sessionId"]
    call = {"type": "toolCall", "callId": "c1", "name": "now", "arguments": []}
    await sidecar.request(
        "session/append",
        {
            "sessionId": sid,
            "entries": [{"kind": "message", "role": "assistant", "content": [call], "meta": []}],
        },
    )
    page = await sidecar.request("session/read", {"sessionId": sid})
    assert page["entries"][0]["content"][0]["arguments"] == {}


async def test_a_non_empty_array_is_still_not_an_object(sidecar: SidecarClient) -> None:
    sid = (await sidecar.request("session/create", {}))["sessionId"]
    call = {"type": "toolCall", "callId": "c1", "name": "now", "arguments": ["x"]}
    for method, params in (
        ("server/ping", [1]),
        ("session/create", {"meta": [{}]}),
        (
            "session/append",
            {"sessionId": sid, "entries": [{"kind": "message", "role": "user", "content": [call]}]},
        ),
    ):
        err = await error_of(sidecar, method, params)
        assert (err.code, err.data["code"]) == (-32602, "params.invalid"), method


async def test_bad_json_is_a_parse_error_and_the_stream_recovers(
    sidecar: SidecarClient,
) -> None:
    replies: list[dict[str, Any]] = []
    sidecar.send_raw(encode_frame(b'{"jsonrpc": "2.0", "id": 99, "method": '))
    sidecar.send_raw(encode_frame(b"[]"))
    sidecar.send_raw(encode_frame(b'"just a string"'))
    await still_alive(sidecar)
    for message in _decode_all(sidecar.stdout_bytes):
        if message.get("id") is None and "error" in message:
            replies.append(message)
    codes = [(r["error"]["code"], r["error"]["data"]["code"]) for r in replies]
    assert codes == [
        (-32700, "request.parse_error"),
        (-32600, "request.invalid"),
        (-32600, "request.invalid"),
    ]


async def raw_replies(client: SidecarClient, ids: set[int]) -> dict[object, dict[str, Any]]:
    """Wait for the answers to requests sent with ``send_raw`` (answers may come in any order)."""
    deadline = time.monotonic() + 10
    while True:
        replies = {m.get("id"): m for m in _decode_all(client.stdout_bytes)}
        if ids <= set(replies) or time.monotonic() > deadline:
            return replies
        await asyncio.sleep(0.02)


def _decode_all(data: bytes | bytearray) -> list[dict[str, Any]]:
    from tests.conftest import assert_valid_frames

    return assert_valid_frames(bytes(data))


async def test_oversized_message_is_refused_and_the_next_request_works(
    sidecars: SidecarFactory,
) -> None:
    client = await sidecars.start(args=("--max-message-bytes", "65536"))
    assert client.capabilities["limits"]["maxMessageBytes"] == 65536
    big = "x" * 200_000
    err = await error_of(client, "tokens/count", {"texts": [big]})
    assert err.code == -32600
    assert err.data["code"] == "request.too_large"
    assert err.data["details"]["limit"] == 65536
    assert err.data["details"]["size"] > 200_000
    assert err.data["details"]["method"] == "tokens/count"
    counted = await client.request("tokens/count", {"texts": ["still here"]})
    assert counted["total"] > 0


async def test_bad_headers_resync(sidecar: SidecarClient) -> None:
    sidecar.send_raw(b"Content-Length: abc\r\n\r\n")
    sidecar.send_raw(b"X-No-Length: 1\r\n\r\n")
    await still_alive(sidecar)
    # a bare \n line ending and a lowercase header name are tolerated
    body = json.dumps({"jsonrpc": "2.0", "id": 4242, "method": "server/ping"}).encode()
    sidecar.send_raw(b"content-length: %d\n\n%s" % (len(body), body))
    await still_alive(sidecar)
    answered = [m for m in _decode_all(sidecar.stdout_bytes) if m.get("id") == 4242]
    assert answered and "result" in answered[0]


async def test_requests_before_initialize_are_refused(sidecars: SidecarFactory) -> None:
    client = await sidecars.start(initialize=False)
    err = await error_of(client, "session/list", {})
    assert err.code == -32002 and err.data["code"] == "server.not_initialized"
    await client.initialize()
    await client.request("session/list", {})


async def test_cancel_request_answers_minus_32800(sidecar: SidecarClient) -> None:
    msg_id, future = sidecar.start_request("server/sleep", {"ms": 30_000})
    await asyncio.sleep(0.2)
    started = time.monotonic()
    sidecar.cancel(msg_id)
    with pytest.raises(RpcError) as err:
        await asyncio.wait_for(future, 5)
    assert err.value.code == -32800
    assert err.value.data["code"] == "request.cancelled"
    assert time.monotonic() - started < 5
    await still_alive(sidecar)


async def test_non_ascii_bodies_are_counted_in_bytes(sidecar: SidecarClient) -> None:
    text = "héllo wörld — 你好, 🌍"
    session = await sidecar.request("session/create", {"title": text})
    assert session["title"] == text
    # the raw frames must carry byte lengths: decode stdout strictly
    assert any(text in json.dumps(m, ensure_ascii=False) for m in _decode_all(sidecar.stdout_bytes))


async def test_lone_surrogates(sidecar: SidecarClient) -> None:
    """JSON may escape a lone surrogate; typed text refuses it, free-form meta keeps it."""
    title = b'{"jsonrpc":"2.0","id":77,"method":"session/create","params":{"title":"a\\ud800b"}}'
    meta = b'{"jsonrpc":"2.0","id":78,"method":"session/create","params":{"meta":{"k":"\\udfff"}}}'
    sidecar.send_raw(encode_frame(title))
    sidecar.send_raw(encode_frame(meta))
    replies = await raw_replies(sidecar, {77, 78})
    refused = replies[77]["error"]
    assert refused["code"] == -32602
    assert refused["data"]["errors"][0]["type"] == "string_unicode"
    kept = replies[78]["result"]
    assert kept["meta"] == {"k": "\udfff"}
    listed = await sidecar.request("session/list", {})
    assert listed["sessions"][0]["meta"] == {"k": "\udfff"}
