"""Signals as an ACP client in a terminal delivers them (the agent shares the client's process
group, so Ctrl-C reaches it): SIGINT mid-prompt cancels the turn (``cancelled``), the agent
keeps serving and no traceback is written; SIGTERM mid-prompt answers the prompt
``cancelled``, and the agent exits 0, quietly, with the turn in history."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities, ToolCallStart

from tests.e2e.acp_kit import ToolEditor, acp_agent, call_round, initialize

pytestmark = pytest.mark.anyio

NO_TERMINAL = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False
)


async def _started(editor: ToolEditor, call_id: str) -> None:
    for _ in range(500):
        if any(
            isinstance(u, ToolCallStart) and u.tool_call_id == call_id for _, u in editor.updates
        ):
            await asyncio.sleep(0.2)  # the command is running
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{call_id} never started")


def _script(tmp_path: Path) -> Path:
    rounds = [
        call_round("run_command", "c1", command="sleep 60"),
        {"text": "NOT SAID"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": rounds}))
    return script


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_a_signal_mid_prompt_cancels_it_without_a_traceback(
    tmp_path: Path, sig: signal.Signals
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    editor = ToolEditor({}, [])
    args = ("--script", str(_script(tmp_path)))
    async with acp_agent(tmp_path, tmp_path / "store", *args, editor=editor) as (conn, _):
        await initialize(conn, NO_TERMINAL)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=sid, mode_id="allow_all")
        prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("sleep")]))
        await _started(editor, "c1")
        assert editor.process is not None
        os.kill(editor.process.pid, sig)  # what Ctrl-C / a terminal's close sends the group
        answer = await asyncio.wait_for(prompt, 20)
        assert answer.stop_reason == "cancelled"
        said = " ".join(str(u) for u in editor.take())
        assert "NOT SAID" not in said  # no model call after the cancel
        if sig == signal.SIGINT:  # still serving: the next prompt is answered (its round is
            # the script's next: the one the cancelled turn did not play)
            again = await conn.prompt(session_id=sid, prompt=[text_block("again")])
            assert again.stop_reason == "end_turn"
        else:
            assert await asyncio.wait_for(editor.process.wait(), 15) == 0
    log = (tmp_path / "acp.log").read_text()
    assert "Traceback" not in log and "KeyboardInterrupt" not in log, log
