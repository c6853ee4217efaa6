"""``session/fork`` (the SDK's ``fork_session``) through the real ``context-sidecar acp``
process: advertised in ``sessionCapabilities``; the fork is a new session with the source's
history (``session/load`` of it replays the same transcript), its settings (the approval mode)
and commands, answers prompts of its own, and leaves the source as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp import RequestError, text_block
from acp.schema import AgentMessageChunk

from tests.e2e.acp_kit import Editor, acp_agent, texts, transcript

pytestmark = pytest.mark.anyio


async def test_fork_copies_the_history_and_settings_and_leaves_the_source(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    rounds = [{"text": "first answer"}, {"text": "answer in the fork"}]
    script.write_text(json.dumps({"rounds": rounds}))
    editor = Editor()
    async with acp_agent(tmp_path, tmp_path / "store", "--script", str(script), editor=editor) as (
        conn,
        _,
    ):
        init = await conn.initialize(protocol_version=1)
        caps = init.agent_capabilities
        assert caps is not None and caps.session_capabilities is not None
        assert caps.session_capabilities.fork is not None
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=sid, mode_id="allow_all")
        answer = await conn.prompt(session_id=sid, prompt=[text_block("hello")])
        assert answer.stop_reason == "end_turn"
        editor.take()

        editor.commands_arrived.clear()
        forked = await conn.fork_session(session_id=sid, cwd=str(workspace), mcp_servers=[])
        fork_id = forked.session_id
        assert fork_id != sid
        assert forked.modes is not None and forked.modes.current_mode_id == "allow_all"
        await editor.commands_arrived.wait()
        assert "rewind" in [c.name for c in editor.commands[fork_id].available_commands]

        # the fork holds the source's history: loading each replays the same transcript
        await conn.load_session(session_id=sid, cwd=str(workspace), mcp_servers=[])
        source_replay = transcript(editor.take())
        await conn.load_session(session_id=fork_id, cwd=str(workspace), mcp_servers=[])
        assert transcript(editor.take()) == source_replay
        assert ("agent_message_chunk", "first answer") in source_replay

        # a prompt in the fork goes to the fork only
        answer = await conn.prompt(session_id=fork_id, prompt=[text_block("go on")])
        assert answer.stop_reason == "end_turn"
        said = [(s, u) for s, u in editor.updates if isinstance(u, AgentMessageChunk)]
        assert {s for s, _ in said} == {fork_id}
        assert texts(editor.take(), AgentMessageChunk) == "answer in the fork"
        source = await conn.ext_method("context-sidecar/session/read", {"sessionId": sid})
        fork = await conn.ext_method("context-sidecar/session/read", {"sessionId": fork_id})
        assert len(fork["entries"]) > len(source["entries"])
        source_texts = [e.get("content") for e in source["entries"]]
        assert [e.get("content") for e in fork["entries"]][: len(source_texts)] == source_texts
        listed = [s.session_id for s in (await conn.list_sessions()).sessions]
        assert {sid, fork_id} <= set(listed)

        # a session that does not exist: not found, no session made
        with pytest.raises(RequestError) as raised:
            await conn.fork_session(session_id="sess_nope", cwd=str(workspace), mcp_servers=[])
        assert isinstance(raised.value.data, dict)
        assert raised.value.data["code"] == "session.not_found"
        assert len((await conn.list_sessions()).sessions) == len(listed)
