"""A permission the editor answers ``cancelled`` ends the turn (ACP: the outcome means the
client is cancelling the prompt turn): the prompt answers ``cancelled`` and the model is not
called again — with or without the ``session/cancel`` agent-shell sends ~60 ms later."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import (
    AgentMessageChunk,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from tests.e2e.acp_kit import ToolEditor, acp_agent, call_round, initialize, texts

pytestmark = pytest.mark.anyio

CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False
)


class CancellingEditor(ToolEditor):
    """Answers every permission request ``cancelled`` (and, like agent-shell, may send
    ``session/cancel`` a moment later)."""

    def __init__(self, then_cancel: bool) -> None:
        super().__init__({}, [])
        self.then_cancel = then_cancel
        self.conn: Any = None

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **_: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        if self.then_cancel:

            async def cancel_later() -> None:
                await asyncio.sleep(0.06)
                await self.conn.cancel(session_id=session_id)

            asyncio.get_running_loop().create_task(cancel_later())
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


@pytest.mark.parametrize("then_cancel", [False, True])
async def test_a_cancelled_permission_ends_the_turn(tmp_path: Path, then_cancel: bool) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    rounds = [
        call_round("write_file", "w1", path="a.txt", content="x"),
        {"text": "ANOTHER MODEL ROUND"},
        {"text": "the next prompt"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": rounds}))
    editor = CancellingEditor(then_cancel)
    async with acp_agent(tmp_path, tmp_path / "store", "--script", str(script), editor=editor) as (
        conn,
        _,
    ):
        editor.conn = conn
        await initialize(conn, CAPABILITIES)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("write a.txt")])
        assert answer.stop_reason == "cancelled"
        await asyncio.sleep(0.2)  # a late session/cancel lands on no prompt: not an error
        said = texts(editor.take(), AgentMessageChunk)
        # the session goes on: the next prompt plays the script's next round
        again = await conn.prompt(session_id=sid, prompt=[text_block("go on")])
        assert again.stop_reason == "end_turn"
        runs = await conn.ext_method("context-sidecar/run/list", {"sessionId": sid})
    assert "ANOTHER MODEL ROUND" not in said
    assert [a.tool_call_id for a in editor.asked] == ["w1"]
    assert not (workspace / "a.txt").exists()
    assert [r["status"] for r in runs["runs"]][-2:] in (
        ["cancelled", "completed"],
        ["completed", "cancelled"],  # newest first
    )
