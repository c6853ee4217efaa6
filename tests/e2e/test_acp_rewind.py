"""``/rewind`` through the real ``context-sidecar acp`` process and the official SDK client,
as a user in Zed types it: two turns edit files through the editor (``fs/write_text_file``)
and a command deletes an untracked file and makes another; ``/rewind`` lists the
checkpoints with their turns, ``/rewind N`` shows what would change, ``/rewind N code`` is
refused for a file edited outside the agent and done with ``force``, its undo checkpoint
restores the state before it, and ``/rewind N conversation`` forks the session before the
turn (the new session replays only what came before; the source is intact)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from acp import text_block
from acp.client.connection import ClientSideConnection
from acp.schema import AgentMessageChunk, ClientCapabilities, FileSystemCapabilities

from tests.e2e.acp_kit import ToolEditor, acp_agent, call_round, texts, transcript

pytestmark = pytest.mark.anyio

CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False
)


async def said(conn: ClientSideConnection, editor: ToolEditor, sid: str, command: str) -> str:
    """What the agent answers ``command`` with (one message, no run)."""
    editor.take()
    answer = await conn.prompt(session_id=sid, prompt=[text_block(command)])
    assert answer.stop_reason == "end_turn"
    return texts(editor.take(), AgentMessageChunk)


async def test_rewind_lists_previews_restores_undoes_and_forks(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    a, notes, made = workspace / "a.txt", workspace / "notes.txt", workspace / "made.txt"
    a.write_text("one\n")
    notes.write_text("untracked notes\n")
    rounds = [
        call_round("write_file", "w1", path="a.txt", content="two\n"),
        {"text": "turn one done"},
        call_round("edit_file", "e2", path="a.txt", old_text="two", new_text="three"),
        call_round("run_command", "c2", command="rm notes.txt && echo made > made.txt"),
        {"text": "turn two done"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": rounds}))
    editor = ToolEditor({}, [])
    async with acp_agent(tmp_path, tmp_path / "store", "--script", str(script), editor=editor) as (
        conn,
        _,
    ):
        await conn.initialize(protocol_version=1, client_capabilities=CAPABILITIES)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=sid, mode_id="allow_all")
        for prompt in ("make it two", "make it three and tidy up"):
            answer = await conn.prompt(session_id=sid, prompt=[text_block(prompt)])
            assert answer.stop_reason == "end_turn"
        assert (a.read_text(), notes.exists(), made.exists()) == ("three\n", False, True)

        # the list: numbered, newest first, with the turn's text and the reasons
        listed = await said(conn, editor, sid, "/rewind")
        assert 'turn "make it two"' in listed
        assert 'turn "make it three and tidy up"' in listed
        assert "`run_command`" in listed
        wire = await conn.ext_method("context-sidecar/checkpoint/list", {"sessionId": sid})
        total = wire["total"]
        assert total == len(wire["checkpoints"]) >= 3
        # the first checkpoint of turn two (the list is newest first)
        last_turn = max(c["turnSeq"] for c in wire["checkpoints"] if c["turnSeq"] is not None)
        number, checkpoint = [
            (total - i, c) for i, c in enumerate(wire["checkpoints"]) if c["turnSeq"] == last_turn
        ][-1]
        assert checkpoint["changedFiles"] == 3, checkpoint
        line = next(x for x in listed.splitlines() if x.startswith(f"{number}. "))
        assert "make it three" in line and "3 files changed since" in line, listed

        # the preview: what restoring the files would change, nothing written
        preview = await said(conn, editor, sid, f"/rewind {number}")
        assert "`a.txt`: modified since, would be put back" in preview
        assert "`notes.txt`: deleted since, would be recreated" in preview
        assert "`made.txt`: added since, would be deleted" in preview
        assert "-two\n+three" in preview
        assert (a.read_text(), notes.exists()) == ("three\n", False)

        # an edit outside the agent: a conflict, nothing written, until `force`
        a.write_text("edited by hand\n")
        refused = await said(conn, editor, sid, f"/rewind {number} code")
        assert refused.startswith("**Not restored**"), refused
        assert "`a.txt`" in refused and f"/rewind {number} code force" in refused
        assert (a.read_text(), notes.exists(), made.exists()) == ("edited by hand\n", False, True)
        restored = await said(conn, editor, sid, f"/rewind {number} code force")
        assert restored.startswith(f"**Rewound** to checkpoint {number}"), restored
        assert (a.read_text(), notes.read_text(), made.exists()) == (
            "two\n",
            "untracked notes\n",
            False,
        )
        assert "`made.txt` deleted" in restored and "`notes.txt` recreated" in restored

        # the undo: the checkpoint the restore took first puts the hand edit back
        undo = re.search(r"Undo with `/rewind (\d+) code`", restored)
        assert undo is not None, restored
        await said(conn, editor, sid, f"/rewind {undo.group(1)} code")
        assert (a.read_text(), notes.exists(), made.exists()) == ("edited by hand\n", False, True)

        # the conversation: a new session forked before the turn's user message
        forked = await said(conn, editor, sid, f"/rewind {number} conversation")
        found = re.search(r"a new session, `([^`]+)`", forked)
        assert found is not None, forked
        fork_id = found.group(1)
        assert "make it three and tidy up" in forked  # the prompt, to edit and send again
        assert a.read_text() == "edited by hand\n"  # conversation only: files untouched
        await conn.load_session(session_id=fork_id, cwd=str(workspace), mcp_servers=[])
        replayed = transcript(editor.take())
        assert ("user_message_chunk", "make it two") in replayed
        assert ("agent_message_chunk", "turn one done") in replayed
        assert not any("make it three" in what for _, what in replayed)
        await conn.load_session(session_id=sid, cwd=str(workspace), mcp_servers=[])
        assert ("agent_message_chunk", "turn two done") in transcript(editor.take())

        # a number that is not there, and words that are not a command: said, not failed
        assert "No checkpoint 999" in await said(conn, editor, sid, "/rewind 999 code")
        assert "Usage" in await said(conn, editor, sid, "/rewind 1 sideways")


async def test_rewind_in_a_session_without_changes(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    editor = ToolEditor({}, [])
    async with acp_agent(tmp_path, tmp_path / "store", editor=editor) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=CAPABILITIES)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert "No checkpoints yet" in await said(conn, editor, sid, "/rewind")
