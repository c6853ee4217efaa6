"""What ``session/load`` replays, and what a failed prompt leaves for the next one (issue 18,
item 7), through the real ``context-sidecar acp`` process:

- a call that never returned (cancelled mid-command, or its process killed) replays
  ``failed`` with the reason, never ``pending`` — and is failed live too;
- writes and edits replay with their diffs (the file before and after), a command with its
  output as text (the terminal is gone);
- a prompt whose run failed (a loopback provider answering 500) is not merged into the next
  user message: the retry sends its text once.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import (
    ClientCapabilities,
    FileEditToolCallContent,
    FileSystemCapabilities,
    ToolCallProgress,
)

from tests.e2e.acp_kit import ToolEditor, acp_agent, call_round, initialize, tool_text
from tests.unit.test_providers import FakeServer, Reply

pytestmark = pytest.mark.anyio

CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)
OPENAI_TEXT = (Path(__file__).parents[1] / "data" / "providers" / "openai_text.sse").read_bytes()


def _finals(updates: list[Any]) -> dict[str, ToolCallProgress]:
    return {u.tool_call_id: u for u in updates if isinstance(u, ToolCallProgress)}


async def test_load_replays_diffs_outputs_and_calls_that_never_returned(tmp_path: Path) -> None:
    store, workspace = tmp_path / "store", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("x = 1\ny = 2\n")
    (workspace / "b.py").write_text("old b\n")
    rounds = [
        call_round("write_file", "w1", path="b.py", content="new b\n"),
        call_round("edit_file", "e1", path="a.py", old_text="y = 2", new_text="y = 3"),
        call_round("run_command", "t1", command="echo out-of-t1"),
        {"text": "done"},
        call_round("run_command", "t2", command="exec sleep 60"),  # cancelled
        call_round("run_command", "t3", command="exec sleep 60"),  # its process killed
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": rounds}))
    args = ("--script", str(script))
    editor = ToolEditor({}, [])
    async with acp_agent(tmp_path, store, *args, editor=editor) as (conn, _):
        await initialize(conn, CAPABILITIES)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=sid, mode_id="allow_all")
        answer = await conn.prompt(session_id=sid, prompt=[text_block("work")])
        assert answer.stop_reason == "end_turn"
        live = _finals(editor.take())
        editor.terminal_started.clear()
        waiting = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("wait")]))
        await asyncio.wait_for(editor.terminal_started.wait(), 30)
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(waiting, 30)).stop_reason == "cancelled"
        cancelled = _finals(editor.take())
    # the cancelled command is failed live, with the reason
    assert cancelled["t2"].status == "failed"
    assert tool_text(cancelled["t2"]).startswith("cancelled:")

    script.write_text(json.dumps({"rounds": rounds[5:]}))
    editor = ToolEditor({}, [])
    async with acp_agent(tmp_path, store, *args, editor=editor, killed=True) as (conn, _):
        await initialize(conn, CAPABILITIES)
        await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        editor.take()
        killed = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("again")]))
        await asyncio.wait_for(editor.terminal_started.wait(), 30)
        assert editor.process is not None
        os.kill(editor.process.pid, signal.SIGKILL)
        with pytest.raises(Exception):  # noqa: B017 - the connection is gone, however it says so
            await asyncio.wait_for(killed, 30)

    editor = ToolEditor({}, [])
    async with acp_agent(tmp_path, store, log="acp-3.log", editor=editor) as (conn, _):
        await initialize(conn, CAPABILITIES)
        await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        replay = editor.take()
    final = _finals(replay)
    # never pending: every call's last replayed update is final, in the order of the turns
    assert {c: u.status for c, u in final.items()} == {
        "w1": "completed",
        "e1": "completed",
        "t1": "completed",
        "t2": "failed",
        "t3": "failed",
    }
    assert tool_text(final["t2"]) == tool_text(cancelled["t2"])
    assert "the sidecar stopped before this call returned" in tool_text(final["t3"])
    # writes and edits with their diffs, as live: the whole file before and after
    for call_id, path, before, after in (
        ("w1", "b.py", "old b\n", "new b\n"),
        ("e1", "a.py", "x = 1\ny = 2\n", "x = 1\ny = 3\n"),
    ):
        assert final[call_id].content == live[call_id].content
        [diff] = final[call_id].content or []
        assert isinstance(diff, FileEditToolCallContent)
        assert (diff.path, diff.old_text, diff.new_text) == (str(workspace / path), before, after)
    # the command's output, as text (its terminal is gone)
    assert tool_text(final["t1"]) == "```\nout-of-t1\n\n[exit code 0]\n```"


async def test_a_failed_prompt_is_not_sent_again_with_the_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = FakeServer()
    await server.start()
    failing = Reply(
        500, b'{"error": {"message": "boom"}}', {"retry-after": "0"}, "application/json"
    )
    server.script(failing, failing, failing, Reply(body=OPENAI_TEXT))
    monkeypatch.setenv("CS_ACP_TEST_KEY", "sk-loopback-0d9e")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    profile = tmp_path / "profile.json"
    binding = {
        "provider": "openai",
        "modelId": "gpt-4o",
        "baseUrl": server.url + "/v1",
        "connectionRef": "env:CS_ACP_TEST_KEY",
    }
    profile.write_text(json.dumps({"modelBinding": binding}))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    try:
        async with acp_agent(tmp_path, tmp_path / "store", "--profile", str(profile)) as (
            conn,
            editor,
        ):
            await initialize(conn)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            with pytest.raises(RequestError):
                await conn.prompt(session_id=sid, prompt=[text_block("trigger a 500")])
            failed_requests = len(server.requests)
            answer = await conn.prompt(session_id=sid, prompt=[text_block("trigger a 500")])
            assert answer.stop_reason == "end_turn"
            # the failed prompt is still history: a load shows it
            editor.take()
            await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            shown = [
                u for u in editor.take() if getattr(u, "session_update", "") == "user_message_chunk"
            ]
    finally:
        await server.stop()
    assert failed_requests >= 1 and len(server.requests) == failed_requests + 1
    retry = server.requests[-1].body
    users = [m for m in retry["messages"] if m["role"] == "user"]
    assert json.dumps(users).count("trigger a 500") == 1, users
    assert len(shown) == 2
