"""Process lifecycle: start, exit paths, the parent watch, the store lock, the trace, stdout."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from protocol import methods as m
from protocol.sessions import SessionAppendParams, SessionCreateParams, SessionRef
from sidecar.client import RpcError
from tests.conftest import SidecarFactory, assert_valid_frames
from tests.e2e.test_sessions import user

pytestmark = pytest.mark.anyio


async def test_stdin_eof_exits_zero_within_two_seconds(sidecars: SidecarFactory) -> None:
    client = await sidecars.start()
    await client.request("server/ping", {})
    started = time.monotonic()
    client.close_stdin()
    code = await client.wait(timeout=5)
    assert code == 0
    assert time.monotonic() - started < 2.0


async def test_shutdown_then_exit_is_zero(sidecars: SidecarFactory) -> None:
    client = await sidecars.start()
    assert await client.request("shutdown", None) is None
    err_after = client.start_request("session/list", {})[1]
    with pytest.raises(RpcError) as err:
        await asyncio.wait_for(err_after, 5)
    assert err.value.data_code == "server.shutting_down"
    client.notify("exit", None)
    assert await client.wait(timeout=5) == 0


async def test_exit_without_shutdown_is_one(sidecars: SidecarFactory) -> None:
    client = await sidecars.start()
    client.notify("exit", None)
    assert await client.wait(timeout=5) == 1


async def test_exits_when_the_client_process_dies(sidecars: SidecarFactory) -> None:
    parent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import time; time.sleep(60)"
    )
    try:
        client = await sidecars.start(process_id=parent.pid)
        await client.request("server/ping", {})
        parent.kill()
        await parent.wait()
        started = time.monotonic()
        code = await client.wait(timeout=5)
        assert code == 0
        assert time.monotonic() - started < 3.0
    finally:
        if parent.returncode is None:
            parent.kill()
            await parent.wait()


async def test_second_sidecar_on_a_store_writes_its_own_sessions_not_the_firsts(
    sidecars: SidecarFactory,
) -> None:
    first = await sidecars.start()
    second = await sidecars.start()
    created = await first.call(m.SESSION_CREATE, SessionCreateParams(title="shared"))
    sid = created.session_id
    assert created.held_by is not None and created.held_by.pid == first.process.pid

    info = await second.request("server/info", {})
    assert info["storeWritable"] is True
    own = await second.call(m.SESSION_CREATE, SessionCreateParams(title="mine"))
    assert own.held_by is not None and own.held_by.pid == second.process.pid
    with pytest.raises(RpcError) as err:
        await second.call(
            m.SESSION_APPEND, SessionAppendParams(session_id=sid, entries=[user("no")])
        )
    assert err.value.data_code == "session.held"
    assert err.value.data["retryable"] is True
    assert err.value.data["retryAfterMs"] > 0
    assert err.value.data["details"]["heldBy"]["pid"] == first.process.pid

    await first.call(m.SESSION_APPEND, SessionAppendParams(session_id=sid, entries=[user("a")]))
    seen = await second.call(m.SESSION_GET, SessionRef(session_id=sid))
    assert seen.head_seq == 1  # reads follow the writer's appends

    assert await first.close() == 0
    appended = await second.call(
        m.SESSION_APPEND, SessionAppendParams(session_id=sid, entries=[user("b")])
    )
    assert appended.head_seq == 2  # the lock is taken over once the writer is gone


async def test_trace_records_both_directions(sidecars: SidecarFactory, tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    client = await sidecars.start(env={"CONTEXT_SIDECAR_TRACE": str(trace)})
    await client.request("server/ping", {})
    with pytest.raises(RpcError):
        await client.request("session/get", {"sessionId": "ses_missing"})
    await client.close()
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    received = [r["message"].get("method") for r in records if r["dir"] == "recv"]
    sent = [r["message"] for r in records if r["dir"] == "send"]
    assert received[:3] == ["initialize", "initialized", "server/ping"]
    assert "shutdown" in received and "exit" in received
    assert any("capabilities" in s.get("result", {}) for s in sent)
    assert any(s.get("error", {}).get("data", {}).get("code") == "session.not_found" for s in sent)
    assert all(r["time"].endswith("Z") for r in records)


async def test_stdout_carries_frames_only(sidecars: SidecarFactory) -> None:
    """Every byte on stdout, across successes, errors and hostile input, is a valid frame."""
    client = await sidecars.start()
    sid = (await client.call(m.SESSION_CREATE, SessionCreateParams(title="frames"))).session_id
    await client.call(m.SESSION_APPEND, SessionAppendParams(session_id=sid, entries=[user("x")]))
    await client.request("session/read", {"sessionId": sid, "withTokens": True})
    await client.request("tokens/count", {"texts": ["ünïcödé ✓"]})
    for bad in ("session/nope", "session/get"):
        with pytest.raises(RpcError):
            await client.request(bad, {"sessionId": 1})
    client.send_raw(b"Content-Length: 3\r\n\r\n{x}")
    await client.request("server/ping", {})
    assert await client.close() == 0
    messages = assert_valid_frames(client.stdout_bytes)
    assert len(messages) >= 9
    assert all(("result" in msg) != ("error" in msg) for msg in messages if "id" in msg)


async def test_start_to_initialize_is_reported(sidecars: SidecarFactory) -> None:
    """Not a timing assertion: the handshake completes and names the versions."""
    client = await sidecars.start()
    result = client.initialize_result
    assert result is not None
    assert result["serverInfo"]["name"] == "context-sidecar"
    assert result["capabilities"]["experimental"]["contextSidecar"]["serverVersion"]


# --- initialize is answered before the server is imported (sidecar.rpc.handshake) -----------


def _log_text(sidecars: SidecarFactory) -> str:
    return "".join(p.read_text() for p in sorted(sidecars.log_dir.glob("*.log")))


async def test_early_initialize_answer_equals_the_servers_own(sidecars: SidecarFactory) -> None:
    """The fast answer (sent before pygls loads) and pygls' answer (when ``initialize`` is not
    the first message) are the same bytes apart from the id; pygls' replay of the early one
    agrees with it (no warning logged)."""
    early = await sidecars.start()
    early_result = early.initialize_result
    assert await early.request("run/list", {})  # the full server took over (run/* waits for it)
    await early.close()

    late = await sidecars.start(initialize=False)
    with pytest.raises(RpcError) as err:
        await late.request("server/ping", {})
    assert err.value.data_code == "server.not_initialized"
    late_result = await late.initialize()
    assert late_result == early_result
    block = late_result["capabilities"]["experimental"]["contextSidecar"]
    info = await late.request("server/info", {})
    assert {k: info[k] for k in block} == block
    # no LSP feature is advertised, and textDocumentSync asks for no document traffic: an
    # editor that finds it missing assumes defaults (Neovim sends didSave on every :w)
    assert set(late_result["capabilities"]) == {"experimental", "textDocumentSync"}
    sync = {"openClose": False, "change": 0, "save": False}
    assert late_result["capabilities"]["textDocumentSync"] == sync
    await late.close()
    assert "differs" not in _log_text(sidecars)


async def test_requests_pipelined_behind_initialize_are_answered_in_order(
    sidecars: SidecarFactory,
) -> None:
    """A client may send ``initialize`` and its first requests in one write, before the
    server is loaded: nothing read with the first frame is lost."""
    client = await sidecars.start(initialize=False)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("initialize", {"processId": None, "capabilities": {}})
    ]
    calls += [("session/create", {"title": f"pipelined {i}"}) for i in range(3)]
    started = [client.start_request(method, params) for method, params in calls]
    results = await asyncio.gather(*(future for _, future in started))
    assert "contextSidecar" in results[0]["capabilities"]["experimental"]
    # the initialize answer went out first; every request got exactly one answer
    answered = [msg["id"] for msg in assert_valid_frames(client.stdout_bytes) if "id" in msg]
    assert answered[0] == started[0][0]
    assert sorted(answered) == sorted(msg_id for msg_id, _ in started)
    listed = await client.request("session/list", {})
    assert {s["title"] for s in listed["sessions"]} == {f"pipelined {i}" for i in range(3)}


async def test_eof_right_after_initialize_exits_zero(sidecars: SidecarFactory) -> None:
    client = await sidecars.start(initialize=False)
    _, answer = client.start_request("initialize", {"processId": None, "capabilities": {}})
    client.close_stdin()
    assert "capabilities" in await asyncio.wait_for(answer, 10)
    assert await client.wait(timeout=10) == 0


async def test_the_trace_records_the_early_initialize(
    sidecars: SidecarFactory, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    client = await sidecars.start(args=("--trace", str(trace)))
    await client.request("server/ping", {})
    await client.close()
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    first_two = [
        (r["dir"], r["message"].get("method"), "result" in r["message"]) for r in records[:2]
    ]
    assert first_two == [("recv", "initialize", False), ("send", None, True)]


@pytest.mark.parametrize(
    "odd",
    [{"processId": "nope"}, {"rootUri": 5}, {"workspaceFolders": "x"}, {"clientInfo": []}],
)
async def test_an_initialize_the_early_check_refuses_is_left_to_the_server(
    sidecars: SidecarFactory, odd: dict[str, Any]
) -> None:
    """Odd params are not answered early: the answer is exactly the one the server gives when
    ``initialize`` is not the first message, and the connection lives on either way."""

    async def outcome(client: Any) -> Any:
        try:
            params = {"processId": None, "capabilities": {}, **odd}
            return await client.request("initialize", params)
        except RpcError as exc:
            return exc.code, exc.data_code

    first = await sidecars.start(initialize=False)
    early = await outcome(first)
    later = await sidecars.start(initialize=False)
    with pytest.raises(RpcError):
        await later.request("server/ping", {})  # initialize is no longer the first message
    assert await outcome(later) == early
    for client in (first, later):
        if isinstance(early, tuple):  # refused: a well-formed initialize still works
            assert (await client.initialize())["serverInfo"]["name"] == "context-sidecar"
        assert await client.request("server/ping", {})
        await client.close()
    assert "differs" not in _log_text(sidecars)


async def test_sidecars_started_back_to_back_both_write_the_store(
    sidecars: SidecarFactory,
) -> None:
    """No store-wide writer any more (issue 43): each of two sidecars started at once
    creates and appends to its own sessions, answered by the first-requests route too."""
    for _ in range(2):
        first = await sidecars.start()
        second = await sidecars.start()
        for client in (first, second):
            assert (await client.request("server/info", {}))["storeWritable"] is True
            created = await client.request("session/create", {"title": "mine"})
            assert created["heldBy"]["pid"] == client.process.pid
            await client.request(
                "session/append",
                {"sessionId": created["sessionId"], "entries": [{"kind": "note", "text": "x"}]},
            )
        await second.close()
        await first.close()


async def test_a_request_after_stdin_closed_fails_at_once_and_leaves_nothing_pending(
    sidecars: SidecarFactory,
) -> None:
    client = await sidecars.start()
    client.close_stdin()
    with pytest.raises(ConnectionError):
        client.start_request("server/ping", {})
    assert not client._pending  # no orphan future to fail later with nobody reading it
    assert await client.wait(timeout=10) == 0


async def test_trace_redacts_credentials_not_lsp_fields(
    sidecars: SidecarFactory, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    legend = {"tokenTypes": ["keyword"], "tokenModifiers": ["static"]}
    client = await sidecars.start(
        env={"CONTEXT_SIDECAR_TRACE": str(trace)},
        capabilities={"textDocument": {"semanticTokens": legend}},
    )
    for params in (
        {"workDoneToken": "wd-1", "partialResultToken": "pr-1"},
        {"limit": 5, "apiKey": "sk-live-1", "authToken": "tok-live-2"},
    ):
        with pytest.raises(RpcError):  # unknown fields, refused; the trace keeps them first
            await client.request("session/list", params)
    await client.close()
    traced = [json.loads(line)["message"] for line in trace.read_text().splitlines()]
    capabilities = traced[0]["params"]["capabilities"]
    assert capabilities["textDocument"]["semanticTokens"] == legend
    lists = [m["params"] for m in traced if m.get("method") == "session/list"]
    assert lists[0] == {"workDoneToken": "wd-1", "partialResultToken": "pr-1"}
    assert lists[1] == {"limit": 5, "apiKey": "[redacted]", "authToken": "[redacted]"}


async def test_a_normal_session_writes_nothing_to_stderr(sidecars: SidecarFactory) -> None:
    """Neovim copies every stderr line into ``lsp.log`` as ``[ERROR]``: at the default level a
    session that goes as it should — including a tool call the run withdrew and the host
    answered late anyway, and a cancel of a request already answered, both of which LSP
    allows — leaves stderr empty."""
    from tests.e2e.test_runs import TOOLS, TWO_ROUNDS, Host

    client = await sidecars.start()
    host = Host(client)
    sid = (await client.call(m.SESSION_CREATE, SessionCreateParams(title="quiet"))).session_id
    await client.call(m.SESSION_APPEND, SessionAppendParams(session_id=sid, entries=[user("x")]))
    await client.request("session/read", {"sessionId": sid, "withTokens": True})
    turn = [{"type": "text", "text": "go"}]
    await client.request("context/assemble", {"sessionId": sid, "userTurn": turn})
    start = {"sessionId": sid, "userTurn": turn, "tools": TOOLS}
    run = await client.request("run/start", {**start, "script": TWO_ROUNDS})
    await host.until_done(run["runId"])

    entered, release, answered = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def late_tool(params: Any) -> Any:
        entered.set()
        await release.wait()
        answered.set()  # the reply is written as this handler returns, before the test resumes
        return {"content": [{"type": "text", "text": "too late"}]}

    client.on_request("tool/execute", late_tool)
    run = await client.request("run/start", {**start, "script": TWO_ROUNDS})
    await asyncio.wait_for(entered.wait(), 10)
    await client.request("run/cancel", {"runId": run["runId"]})
    await host.until(lambda: bool(host.cancels))  # the sidecar withdrew its tool/execute
    release.set()
    await asyncio.wait_for(answered.wait(), 5)
    await client.request("server/ping", {})  # the late answer has been read by now
    answered_id, pong = client.start_request("server/ping", {})
    await pong
    client.cancel(answered_id)  # a cancel that crossed the answer: normal in LSP too
    await client.request("server/ping", {})
    assert await client.close() == 0
    assert sidecars.stderr_of(client) == ""


# --- raw-JSON hosts: every optional LSP field may be missing (issue 11 item 7) ---------------


@pytest.mark.parametrize("first", [True, False], ids=["early-answer", "pygls-answer"])
async def test_initialize_without_process_id_is_served(
    sidecars: SidecarFactory, first: bool
) -> None:
    """Tauri/Electron hosts send only ``capabilities``: the answer comes, the sidecar stays
    up (it died with ``KeyError: 'processId'`` after answering), requests are served."""
    client = await sidecars.start(initialize=False)
    if not first:  # a request before initialize: pygls, not the early path, answers it
        with pytest.raises(RpcError):
            await client.request("server/ping", {})
    result = await client.request("initialize", {"capabilities": {}})
    assert "contextSidecar" in result["capabilities"]["experimental"]
    client.notify("initialized", {})
    assert "time" in await client.request("server/ping", {})
    assert await client.close() == 0
    assert sidecars.stderr_of(client) == ""


@pytest.mark.parametrize(
    ("params", "loc"),
    [
        ({}, "capabilities"),
        ({"processId": "me", "capabilities": {}}, "processId"),
        ({"capabilities": {}, "clientInfo": {"version": "1"}}, "clientInfo.name"),
        ({"capabilities": {}, "trace": "loud"}, "trace"),
    ],
)
async def test_a_bad_initialize_gets_params_invalid_with_errors(
    sidecars: SidecarFactory, params: dict[str, Any], loc: str
) -> None:
    client = await sidecars.start(initialize=False)
    with pytest.raises(RpcError) as err:
        await client.request("initialize", params)
    assert err.value.code == -32602 and err.value.data_code == "params.invalid"
    assert loc in [e["loc"] for e in err.value.data["errors"]], err.value.data
    # the connection survives: a good initialize follows
    assert "capabilities" in await client.request("initialize", {"capabilities": {}})
    assert "time" in await client.request("server/ping", {})
    assert await client.close() == 0


async def test_requests_right_after_initialize_are_served_while_the_server_loads(
    sidecars: SidecarFactory,
) -> None:
    """Sent at once after ``initialize`` (as editors do): the connection-free ones are served
    before pygls has loaded, the rest are held and answered by pygls, every one exactly once
    (``sidecar/rpc/early.py``)."""
    client = await sidecars.start(args=("-vv",))
    pending = [
        client.start_request("session/create", {"title": "first"})[1],
        client.start_request("session/list", {})[1],
        client.start_request("run/list", {})[1],  # held for pygls
        client.start_request("session/list", {})[1],  # held: it came after a held one
        client.start_request("server/ping", {})[1],
    ]
    created, _, runs, listed, pong = await asyncio.wait_for(asyncio.gather(*pending), 30)
    assert created["title"] == "first"
    assert runs == {"runs": []}
    assert [s["sessionId"] for s in listed["sessions"]] == [created["sessionId"]]
    assert "time" in pong
    log = sidecars.stderr_of(client)  # light requests answered early, one way or the other
    assert "while the server loaded" in log or "before the event loop started" in log, log
    ids = [m["id"] for m in assert_valid_frames(client.stdout_bytes) if "id" in m]
    assert sorted(ids) == sorted(set(ids))
