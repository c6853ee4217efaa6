"""A run started with ``_context-sidecar/run/start`` obeys the session's approval mode (issue
18, item 3): its tool calls go through the same decision as a prompt's, even when the run
names none of them in ``approvalRequired``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, FileSystemCapabilities

from sidecar.tools.catalog import DEFINITIONS
from tests.e2e.acp_kit import ToolEditor, acp_agent, call_round, initialize

pytestmark = pytest.mark.anyio

CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)


async def _run(
    conn: ClientSideConnection, editor: ToolEditor, sid: str, rounds: list[dict[str, Any]]
) -> dict[str, str]:
    """Start a run with the editor tools and no ``approvalRequired``; its results by call."""
    started = await conn.ext_method(
        "context-sidecar/run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "change things"}],
            "subscribe": True,
            "tools": [DEFINITIONS[n] for n in ("read_file", "write_file", "run_command")],
            "profile": {"modelBinding": {"provider": "scripted", "modelId": "s"}},
            "script": {"rounds": rounds},
        },
    )
    run_id = started["runId"]
    for _ in range(300):
        if any(
            p["runId"] == run_id and p["type"] == "run.completed"
            for _, p in editor.extension_notifications
        ):
            break
        await asyncio.sleep(0.1)
    history = await conn.ext_method("context-sidecar/session/read", {"sessionId": sid})
    return {
        p["callId"]: p["content"][0]["text"]
        for e in history["entries"]
        for p in e.get("content", [])
        if p.get("type") == "toolResult"
    }


async def test_run_start_obeys_the_sessions_approval_mode(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("keep me\n")
    editor = ToolEditor({}, ["allow_once"])
    async with acp_agent(tmp_path, tmp_path / "store", editor=editor) as (conn, _):
        await initialize(conn, CAPABILITIES)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id

        # read_only: the write and the command are refused without asking; reads run
        await conn.set_session_mode(session_id=sid, mode_id="read_only")
        results = await _run(
            conn,
            editor,
            sid,
            [
                call_round("write_file", "w1", path="a.py", content="overwritten\n"),
                call_round("run_command", "c1", command="echo ran > ran.txt"),
                call_round("read_file", "r1", path="a.py"),
                {"text": "done"},
            ],
        )
        assert (workspace / "a.py").read_text() == "keep me\n"
        assert editor.created == [] and not (workspace / "ran.txt").exists()
        assert results["w1"] == "not approved: refused: the session is in Read only mode"
        assert results["c1"] == "not approved: refused: the session is in Read only mode"
        assert results["r1"] == "1\tkeep me"
        assert editor.asked == []

        # ask: the client is asked (session/request_permission) before the write
        await conn.set_session_mode(session_id=sid, mode_id="ask")
        results = await _run(
            conn,
            editor,
            sid,
            [call_round("write_file", "w2", path="a.py", content="asked\n"), {"text": "ok"}],
        )
        assert [a.tool_call_id for a in editor.asked] == ["w2"]
        assert results["w2"].startswith("wrote ")
        assert (workspace / "a.py").read_text() == "asked\n"
