"""Two editor windows on one store, through the official SDK: a session another live window
writes is loaded read-only (the chat says so, a prompt answers ``session.held`` naming the
holder), until that window closes it (``session/close`` gives it back) — then the same
prompt goes through; a session whose holder was killed is taken over on load."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pytest
from acp import RequestError, text_block
from acp.schema import AgentMessageChunk

from tests.e2e.acp_kit import Editor, acp_agent, initialize, texts

pytestmark = pytest.mark.anyio


async def _told(editor: Editor) -> str:
    """What the agent said after a load: the replay, then the commands and (in the same
    batch, right after them) its note."""
    await asyncio.wait_for(editor.commands_arrived.wait(), 10)
    await asyncio.sleep(0.2)
    return texts(editor.take(), AgentMessageChunk)


def _script(tmp_path: Path, name: str, *answers: str) -> Path:
    script = tmp_path / name
    script.write_text(json.dumps({"rounds": [{"text": a} for a in answers]}))
    return script


async def test_a_session_held_by_another_window_is_read_only_until_it_is_closed(
    tmp_path: Path,
) -> None:
    store, workspace = tmp_path / "store", tmp_path / "ws"
    workspace.mkdir()
    a_script = _script(tmp_path, "a.json", "from A")
    b_script = _script(tmp_path, "b.json", "from B")
    async with acp_agent(tmp_path, store, "--script", str(a_script), log="a.log") as (a, _):
        await initialize(a)
        sid = (await a.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (await a.prompt(session_id=sid, prompt=[text_block("hi")])).stop_reason == "end_turn"
        b_editor = Editor()
        async with acp_agent(
            tmp_path, store, "--script", str(b_script), log="b.log", editor=b_editor
        ) as (b, _):
            await initialize(b)
            await b.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            said = await _told(b_editor)
            assert "from A" in said  # the history, replayed
            assert "Read-only" in said and "open in another window" in said
            with pytest.raises(RequestError) as held:
                await b.prompt(session_id=sid, prompt=[text_block("from B?")])
            data = held.value.data or {}
            assert data["code"] == "session.held"
            assert data["details"]["heldBy"]["face"] == "acp"
            # A closes it: B's same prompt goes through, at the next seq
            await a.close_session(session_id=sid)
            again = await b.prompt(session_id=sid, prompt=[text_block("from B")])
            assert again.stop_reason == "end_turn"
            history = await b.ext_method("context-sidecar/session/read", {"sessionId": sid})
    seqs = [e["seq"] for e in history["entries"]]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) == 4


async def test_a_killed_windows_session_is_taken_over_on_load(tmp_path: Path) -> None:
    store, workspace = tmp_path / "store", tmp_path / "ws"
    workspace.mkdir()
    script = _script(tmp_path, "s.json", "first", "second")
    async with acp_agent(tmp_path, store, "--script", str(script), log="a.log", killed=True) as (
        a,
        editor,
    ):
        await initialize(a)
        sid = (await a.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (await a.prompt(session_id=sid, prompt=[text_block("hi")])).stop_reason == "end_turn"
        assert editor.process is not None
        editor.process.send_signal(signal.SIGKILL)
        await editor.process.wait()
    b_editor = Editor()
    rest = _script(tmp_path, "r.json", "second")
    async with acp_agent(tmp_path, store, "--script", str(rest), log="b.log", editor=b_editor) as (
        b,
        _,
    ):
        await initialize(b)
        await b.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        assert "Read-only" not in await _told(b_editor)
        answer = await b.prompt(session_id=sid, prompt=[text_block("go on")])
        assert answer.stop_reason == "end_turn"
