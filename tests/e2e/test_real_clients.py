"""Clients nobody on the project wrote, driving the real ``context-sidecar serve``.

An extension author does not use ``sidecar.client``: they take the JSON-RPC client of their
language or their editor's built-in LSP client and point it at ``python -m sidecar serve``.
These tests do exactly that, with nothing of ours on the client side:

- pygls 2.1's plain ``pygls.client.JsonRPCClient`` (default converter: params and results arrive
  as namedtuples) through a scripted run with a host tool, a cancelled run and a re-subscription;
- Neovim's built-in ``vim.lsp.start`` (not editors/neovim) attached to a real file buffer that is
  edited and written several times, then ``:messages`` and ``lsp.log`` read back.

The node ``vscode-jsonrpc`` client is editors/host/test/vscode-jsonrpc.test.ts.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from pygls.client import JsonRPCClient
from pygls.exceptions import JsonRpcException

from tests.e2e.test_neovim_plugin import nvim_binary

REPO = Path(__file__).resolve().parents[2]
SERVE = ("-m", "sidecar", "serve")

READ_FILE = {
    "name": "read_file",
    "description": "Read a workspace file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}
TOOL_SCRIPT = {
    "rounds": [
        {
            "deltas": ["Let me read ", "a.py."],
            "toolCalls": [{"id": "call_1", "name": "read_file", "arguments": {"path": "a.py"}}],
        },
        {"text": "a.py prints hello."},
    ]
}
# Long enough that the run is still streaming when the test cancels it (it never has to finish).
SLOW_SCRIPT = {"rounds": [{"deltas": [f"w{i} " for i in range(400)], "delayMs": 25}]}
MESSAGE_TYPE_ERROR = 1  # LSP MessageType.Error


class AuthorsClient(JsonRPCClient):
    """What an extension author writes on pygls' JsonRPCClient: handlers for what the server
    sends (``run/event``, ``tool/execute``, ``window/*``), nothing else."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[dict[str, Any]] = []
        self.tool_calls: list[dict[str, Any]] = []
        self.shown: list[tuple[int, str]] = []
        self.errors: list[str] = []
        self.starts: list[Future[Any]] = []
        self.stderr = b""
        self.returncode: int | None = None
        # pygls passes the client to a handler whose first parameter is named ``ls``
        self.feature("run/event")(_on_run_event)
        self.feature("tool/execute")(_on_tool_execute)
        self.feature("window/showMessage")(_on_message)
        self.feature("window/logMessage")(_on_message)

    def report_server_error(self, error: Exception, source: Any) -> None:
        self.errors.append(f"{source.__name__}: {error!r}")

    async def server_exit(self, server: asyncio.subprocess.Process) -> None:
        assert server.stderr is not None
        self.stderr = await server.stderr.read()
        self.returncode = server.returncode

    async def request(self, method: str, params: Any) -> Any:
        return await asyncio.wait_for(self.protocol.send_request_async(method, params), 15)

    async def start_run(self, params: dict[str, Any]) -> Any:
        future = self.protocol.send_request("run/start", params)
        self.starts.append(future)
        return await asyncio.wait_for(asyncio.wrap_future(future), 15)

    def of(self, run_id: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["runId"] == run_id]

    async def until(self, predicate: Any, timeout: float = 15) -> None:
        async def wait() -> None:
            while not predicate():
                await asyncio.sleep(0.01)

        await asyncio.wait_for(wait(), timeout)

    async def until_completed(self, run_id: str) -> list[dict[str, Any]]:
        await self.until(lambda: any(e["type"] == "run.completed" for e in self.of(run_id)))
        return self.of(run_id)


def _on_run_event(ls: AuthorsClient, params: Any) -> None:
    event = params._asdict()
    # Which run/start answers had arrived when this event did (pygls resolves a request's
    # future as it reads the answer, in stream order).
    answered = {f.result().runId for f in ls.starts if f.done() and f.exception() is None}
    event["afterAnswer"] = event["runId"] in answered
    event["payload"] = params.payload._asdict()
    ls.events.append(event)


async def _on_tool_execute(ls: AuthorsClient, params: Any) -> dict[str, Any]:
    ls.tool_calls.append({"callId": params.callId, "path": params.arguments.path})
    return {"content": [{"type": "text", "text": f"contents of {params.arguments.path}"}]}


def _on_message(ls: AuthorsClient, params: Any) -> None:
    ls.shown.append((int(params.type), str(params.message)))


def _seqs(events: list[dict[str, Any]]) -> list[int]:
    return [int(e["seq"]) for e in events]


@pytest.mark.anyio
async def test_pygls_jsonrpc_client_runs_a_tool_cancels_and_resubscribes(tmp_path: Path) -> None:
    client = AuthorsClient()
    await client.start_io(sys.executable, *SERVE, "--store", str(tmp_path / "store"))
    try:
        init = await client.request(
            "initialize",
            {"processId": os.getpid(), "clientInfo": {"name": "pygls-author"}, "capabilities": {}},
        )
        assert init.capabilities.experimental.contextSidecar.protocolVersion
        client.protocol.notify("initialized", {})
        session = await client.request("session/create", {"title": "outside author"})

        # 1. a scripted run whose model calls a host tool
        first = await client.start_run(
            {
                "sessionId": session.sessionId,
                "userTurn": [{"type": "text", "text": "What does a.py do?"}],
                "tools": [READ_FILE],
                "script": TOOL_SCRIPT,
            }
        )
        events = await client.until_completed(first.runId)
        assert client.tool_calls == [{"callId": "call_1", "path": "a.py"}]
        assert _seqs(events) == list(range(1, len(events) + 1))
        assert events[-1]["payload"] == {"status": "completed"}
        results = [e for e in events if e["type"] == "tool.resultStored"]
        assert len(results) == 1
        deltas = [e["payload"]["text"] for e in events if e["type"] == "model.delta"]
        assert deltas == ["Let me read ", "a.py.", "a.py prints hello."]

        # 2. a second run: leave it, come back with afterSeq, then cancel it mid-way
        second = await client.start_run(
            {
                "sessionId": session.sessionId,
                "userTurn": [{"type": "text", "text": "Talk for a while."}],
                "script": SLOW_SCRIPT,
            }
        )
        run_id = second.runId
        await client.until(lambda: sum(e["type"] == "model.delta" for e in client.of(run_id)) >= 2)
        await client.request("run/unsubscribe", {"runId": run_id})
        last_seen = max(_seqs(client.of(run_id)))
        # the journal moves on while nobody listens (polled, not timed)
        while (await client.request("run/get", {"runId": run_id})).headSeq < last_seen + 3:
            await asyncio.sleep(0.02)
        again = await client.request("run/subscribe", {"runId": run_id, "afterSeq": last_seen})
        assert again.live is True and again.replayed >= 3
        await client.until(lambda: max(_seqs(client.of(run_id))) > again.headSeq)
        cancelled = await client.request("run/cancel", {"runId": run_id})
        assert cancelled.status == "cancelled"
        events = await client.until_completed(run_id)
        assert _seqs(events) == list(range(1, len(events) + 1))  # every event exactly once
        assert events[-1]["type"] == "run.completed"
        assert events[-1]["payload"] == {"status": "cancelled"}

        # a host keying its listeners on run/start's answer loses nothing (issue 11, item 9)
        early = [(e["runId"], e["seq"], e["type"]) for e in client.events if not e["afterAnswer"]]
        assert early == []

        # a domain error is a JSON-RPC error with a dotted data.code, no traceback
        with pytest.raises(JsonRpcException) as unknown:
            await client.request("run/get", {"runId": "run_nope"})
        data = unknown.value.data
        assert unknown.value.code == -32000 and isinstance(data, dict)
        assert data["code"] == "run.not_found" and "Traceback" not in json.dumps(data)

        await client.request("shutdown", None)
        client.protocol.notify("exit", None)
        await asyncio.wait_for(client.stop(), 15)  # type: ignore[no-untyped-call]
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
            await client._server.wait()

    assert client.returncode == 0
    assert client.errors == []
    assert [m for m in client.shown if m[0] == MESSAGE_TYPE_ERROR] == []
    # at the default log level a normal session writes nothing to stderr (issue 11, item 11)
    assert client.stderr.decode(errors="replace") == ""


NVIM_SCRIPT = REPO / "tests" / "data" / "real_clients" / "nvim_plain_lsp.lua"


def _errors_in(text: str) -> list[str]:
    return [line for line in text.splitlines() if "error" in line.lower() or "E5108" in line]


def test_neovim_plain_vim_lsp_start_writes_a_buffer_without_errors(tmp_path: Path) -> None:
    nvim = nvim_binary()
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.py").write_text('print("hello")\n')
    state = tmp_path / "state"
    result_path = tmp_path / "result.json"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(state),  # lsp.log lands in $XDG_STATE_HOME/nvim/lsp.log
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PYTHONPATH": str(REPO),
        "CS_PYTHON": sys.executable,
        "CS_STORE": str(tmp_path / "store"),
        "CS_ROOT": str(project),
        "CS_RESULT": str(result_path),
    }
    cmd = [str(nvim), "--headless", "-u", "NONE", "-i", "NONE", "-l", str(NVIM_SCRIPT)]
    try:
        proc = subprocess.run(
            cmd, cwd=project, env=env, capture_output=True, text=True, timeout=60, check=False
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"nvim timed out\n--- stdout\n{exc.stdout!r}\n--- stderr\n{exc.stderr!r}")
    output = f"--- nvim stdout\n{proc.stdout}\n--- nvim stderr\n{proc.stderr}"
    assert result_path.is_file(), f"nvim exited {proc.returncode} without a result\n{output}"
    result = json.loads(result_path.read_text())
    log_path = Path(result["log"])
    log = log_path.read_text() if log_path.is_file() else ""
    report = f"{json.dumps(result, indent=1)}\n--- lsp.log\n{log}\n{output}"

    assert result.get("error") is None, report
    assert result["steps"] == [
        "initialized",
        "chatter before the server loaded",
        "written",
        "chatter once the server loaded",
        "pinged",
        "stopped",
    ], report
    assert result["attached"] is True and result["still_attached"] is True, report
    assert result["file"] == ['print("hello")', "print(1)", "print(2)", "print(3)"], report
    assert result["ping_empty_dict"] == {"ok": True}, report
    assert result["exit"] == {"code": 0, "signal": 0}, report
    assert proc.returncode == 0, report
    # each :w sent textDocument/didSave; nothing the editor did may pop up an error (item 6)
    assert _errors_in(result["messages_while_attached"]) == [], report
    assert _errors_in(result["messages"]) == [], report
    # Neovim copies every stderr line of the server into lsp.log as [ERROR] (item 11), the
    # WARNINGs and tracebacks of notifications it sent on its own included (issue 20)
    assert [line for line in log.splitlines() if "[ERROR]" in line] == [], report
    # `{}` from Lua is `[]` on the wire: still the empty params object (item 8)
    assert result["ping_empty_table"] == {"ok": True}, report
    # no execute-command capability: -32601, as for any method the server does not have
    assert result["execute_command"] == {"code": -32601, "data_code": "method.not_found"}, report
