"""The ACP face's look-around tools end when they must (issue 40 item 2), through the real
``context-sidecar acp`` process: a grep that blocks (ripgrep waiting in the ``open`` of a FIFO
ignore file) is cancelled at once by ``session/cancel``, and the process exits within a second
of its stdin closing with the grep still blocked, exit code 0; no ripgrep is left running.
(The limits themselves are the core's, tested through ``serve`` in
``test_tool_time_bounds.py``: the ACP face runs these tools with the same ``BuiltinTools``.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import ToolCallStart

from tests.e2e.acp_kit import Editor, acp_agent, call_round, initialize
from tests.e2e.time_bounds_kit import stuck_dir, wait_no_ripgrep

pytestmark = pytest.mark.anyio


class Watching(Editor):
    """An editor that notes when a tool call starts."""

    def __init__(self) -> None:
        super().__init__()
        self.tool_started = asyncio.Event()

    async def session_update(self, session_id: str, update: object, **kwargs: object) -> None:
        await super().session_update(session_id, update, **kwargs)
        if isinstance(update, ToolCallStart):
            self.tool_started.set()


def _script(tmp_path: Path, token: str) -> Path:
    script = tmp_path / "script.json"
    rounds = [call_round("grep", "g1", pattern=token, path="stuck"), {"text": "done"}]
    script.write_text(json.dumps({"rounds": rounds}))
    return script


async def test_session_cancel_during_a_stuck_grep(tmp_path: Path) -> None:
    token = f"stuck{uuid.uuid4().hex[:8]}"
    workspace = tmp_path / "repo"
    stuck_dir(workspace)
    editor = Watching()
    script = _script(tmp_path, token)
    async with acp_agent(tmp_path, tmp_path / "store", "--script", str(script), editor=editor) as (
        conn,
        _,
    ):
        await initialize(conn)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("look")]))
        await asyncio.wait_for(editor.tool_started.wait(), 30)
        await asyncio.sleep(0.3)  # ripgrep is blocked in the FIFO's open by now
        started = time.monotonic()
        await conn.cancel(session_id=sid)
        answer = await asyncio.wait_for(prompt, 10)
        answered = time.monotonic() - started
        assert answer.stop_reason == "cancelled"
        assert answered < 2.0, answered
        assert wait_no_ripgrep(token) == []


async def test_stdin_closed_during_a_stuck_grep(tmp_path: Path) -> None:
    token = f"stuck{uuid.uuid4().hex[:8]}"
    workspace = tmp_path / "repo"
    stuck_dir(workspace)
    editor = Watching()
    script = _script(tmp_path, token)
    async with acp_agent(tmp_path, tmp_path / "store", "--script", str(script), editor=editor) as (
        conn,
        _,
    ):
        await initialize(conn)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("look")]))
        await asyncio.wait_for(editor.tool_started.wait(), 30)
        await asyncio.sleep(0.3)
        process = editor.process
        assert process is not None and process.stdin is not None
        started = time.monotonic()
        process.stdin.close()
        code = await asyncio.wait_for(process.wait(), 10)
        exited = time.monotonic() - started
        prompt.cancel()
        with contextlib.suppress(BaseException):
            await prompt
        assert code == 0
        assert exited < 3.0, exited  # measured well under a second; slack for a loaded CI
        assert wait_no_ripgrep(token) == []
