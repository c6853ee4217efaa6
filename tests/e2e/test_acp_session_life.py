"""``session/close``, ``session/resume`` and ``session/delete`` through the official SDK, as
the current ACP schema has them: close cancels the prompt going on (it answers
``cancelled``), closes the session's MCP servers and keeps its history; resume reopens it
without a replay; delete closes it and moves it to the store's trash (``session/list`` no
longer shows it, ``session/load`` says it is not found)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from acp import RequestError, text_block
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    McpServerStdio,
    ToolCallStart,
    UserMessageChunk,
)

from tests.e2e.acp_kit import MCP_SERVER, ToolEditor, acp_agent, call_round, is_running

pytestmark = pytest.mark.anyio

NO_TERMINAL = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False
)


async def test_close_resume_and_delete(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    rounds = [
        {"text": "first answer"},
        call_round("run_command", "c1", command="sleep 60"),
        {"text": "NOT SAID"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": rounds}))
    pid_file = tmp_path / "mcp.pid"
    server = McpServerStdio(
        name="calc", command=sys.executable, args=[str(MCP_SERVER), str(pid_file)], env=[]
    )
    editor = ToolEditor({}, [])
    async with acp_agent(tmp_path, tmp_path / "store", "--script", str(script), editor=editor) as (
        conn,
        _,
    ):
        init = await conn.initialize(protocol_version=1, client_capabilities=NO_TERMINAL)
        caps = init.agent_capabilities
        assert caps is not None and caps.session_capabilities is not None
        assert caps.session_capabilities.close is not None
        assert caps.session_capabilities.resume is not None
        assert caps.session_capabilities.delete is not None
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[server])).session_id
        mcp_pid = int(pid_file.read_text())
        assert is_running(mcp_pid)
        await conn.set_session_mode(session_id=sid, mode_id="allow_all")
        answer = await conn.prompt(session_id=sid, prompt=[text_block("hello")])
        assert answer.stop_reason == "end_turn"

        # close while a prompt runs: it answers cancelled, the MCP server ends
        prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("sleep")]))
        for _ in range(500):
            if any(isinstance(u, ToolCallStart) for _, u in editor.updates):
                break
            await asyncio.sleep(0.02)
        await conn.close_session(session_id=sid)
        assert (await asyncio.wait_for(prompt, 10)).stop_reason == "cancelled"
        for _ in range(200):
            if not is_running(mcp_pid):
                break
            await asyncio.sleep(0.05)
        assert not is_running(mcp_pid)

        # resume: no replay, the session answers again
        editor.take()
        resumed = await conn.resume_session(session_id=sid, cwd=str(workspace), mcp_servers=[])
        assert resumed.modes is not None
        assert not [u for u in editor.take() if isinstance(u, UserMessageChunk)]
        listed = await conn.list_sessions()
        assert sid in [s.session_id for s in listed.sessions]

        # delete: gone from the list, not found afterwards; history went to the trash
        # the Python SDK's client has no delete_session (0.12): sent as the schema has it
        assert await conn._conn.send_request("session/delete", {"sessionId": sid}) in ({}, None)
        listed = await conn.list_sessions()
        assert sid not in [s.session_id for s in listed.sessions]
        with pytest.raises(RequestError):
            await conn.load_session(session_id=sid, cwd=str(workspace), mcp_servers=[])
        with pytest.raises(RequestError):
            await conn.close_session(session_id=sid)
    said = " ".join(str(u) for _, u in editor.updates)
    assert "NOT SAID" not in said
