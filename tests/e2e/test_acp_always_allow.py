""" "Always allow" outlives the agent process (the session's ``meta``): an editor restarted,
the session loaded again, the same tool is not asked about; a write of another tool, and the
same tool in another session, are (``sidecar/acp/approvals.py``, ``config.py``).

Mutation tried: the answer kept in the process only (``Approvals`` built without the
session config) — the second process asks again: red."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities, ToolCallProgress

from tests.e2e.acp_kit import ToolEditor, acp_agent, call_round, initialize, tool_text

pytestmark = pytest.mark.anyio

# the editor's fs, no terminal: the sidecar runs commands itself
CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False
)


def _script(path: Path, *rounds: dict[str, object]) -> Path:
    """The scripted model's rounds, played across the process's prompts in order."""
    path.write_text(json.dumps({"rounds": [*rounds, {"text": "done"}]}))
    return path


async def test_always_allow_is_kept_with_the_session_across_processes(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = tmp_path / "store"
    first = _script(tmp_path / "one.json", call_round("run_command", "c1", command="echo one"))
    editor = ToolEditor({}, ["allow_always"])
    async with acp_agent(tmp_path, store, "--script", str(first), editor=editor) as (conn, _):
        await initialize(conn, CAPABILITIES)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (
            await conn.prompt(session_id=sid, prompt=[text_block("go")])
        ).stop_reason == "end_turn"
        assert [a.tool_call_id for a in editor.asked] == ["c1"]

    # the editor restarted: a new agent process, the session loaded from the store
    second = _script(
        tmp_path / "two.json",
        call_round("run_command", "c2", command="echo two"),
        call_round("write_file", "w2", path="b.txt", content="b\n"),
        {"text": "done"},  # the end of this prompt; the next one plays on
        call_round("run_command", "c3", command="echo three"),
    )
    editor = ToolEditor({}, ["allow_once", "allow_once"])
    async with acp_agent(tmp_path, store, "--script", str(second), editor=editor) as (conn, _):
        await initialize(conn, CAPABILITIES)
        await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        editor.take()
        assert (
            await conn.prompt(session_id=sid, prompt=[text_block("go on")])
        ).stop_reason == "end_turn"
        final = {u.tool_call_id: u for u in editor.take() if isinstance(u, ToolCallProgress)}
        assert [a.tool_call_id for a in editor.asked] == ["w2"]  # run_command: allowed always
        assert "two" in tool_text(final["c2"]) and final["c2"].status == "completed"
        # another session asks anew
        other = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (
            await conn.prompt(session_id=other, prompt=[text_block("go")])
        ).stop_reason == "end_turn"
        assert [a.tool_call_id for a in editor.asked] == ["w2", "c3"]
