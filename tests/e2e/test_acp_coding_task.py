"""Issue 18, acceptance (a): the scripted coding task through the official ACP Python SDK as
an editor with ``fs`` **and** a terminal.  On a repository with a bug and a failing test the
model lists, greps (the .gitignore'd copy is not found), reads, edits (through the editor's
buffer: ``fs/write_text_file``) and runs the tests in the editor's terminal — green at the
end.  The look-around calls ask nothing; the edit and the command are asked; every call's
updates show it as an editor expects (title, kind, locations, the diff, the terminal)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import (
    ClientCapabilities,
    FileEditToolCallContent,
    FileSystemCapabilities,
    TerminalToolCallContent,
    ToolCallProgress,
    ToolCallStart,
)

from tests.e2e.acp_kit import ToolEditor, acp_agent, call_round, initialize, tool_text
from tests.e2e.workspace_kit import fixture_repo

pytestmark = pytest.mark.anyio

FS_AND_TERMINAL = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)


async def test_a_coding_task_with_fs_and_a_terminal(tmp_path: Path) -> None:
    store, workspace = tmp_path / "store", tmp_path / "repo"
    fixture_repo(workspace)
    test_cmd = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    rounds = [
        call_round("list_dir", "l1"),
        call_round("grep", "g1", pattern=r"return a - b"),
        call_round("read_file", "r1", path="calc/add.py"),
        call_round("edit_file", "e1", path="calc/add.py", old_text="a - b", new_text="a + b"),
        call_round("run_command", "c1", command=test_cmd),
        {"text": "fixed"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": rounds}))
    editor = ToolEditor({}, ["allow_once", "allow_once"])

    async with acp_agent(tmp_path, store, "--script", str(script), editor=editor) as (conn, _):
        await initialize(conn, FS_AND_TERMINAL)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("fix the failing test")])
        assert answer.stop_reason == "end_turn"
        updates = editor.take()

    starts = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallStart)}
    final = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallProgress)}
    assert {k: (s.kind, s.title) for k, s in starts.items()} == {
        "l1": ("search", "List ."),
        "g1": ("search", "Search `return a - b`"),
        "r1": ("read", "Read calc/add.py"),
        "e1": ("edit", "Edit calc/add.py"),
        "c1": ("execute", f"Run `{test_cmd}`"),
    }
    # looked around without asking; the edit and the command were asked, nothing else
    assert [a.tool_call_id for a in editor.asked] == ["e1", "c1"]
    assert "build" not in tool_text(final["l1"])
    assert "build/" not in tool_text(final["g1"]) and "calc/add.py" in tool_text(final["g1"])
    # the edit went through the editor (fs/write_text_file) and carries its diff
    calls = [u for u in updates if isinstance(u, (ToolCallStart, ToolCallProgress))]
    diffs = [
        c
        for u in calls
        if u.tool_call_id == "e1"
        for c in (u.content or [])
        if isinstance(c, FileEditToolCallContent)
    ]
    assert diffs and diffs[-1].new_text == "def add(a, b):\n    return a + b\n"
    assert (workspace / "calc" / "add.py").read_text() == "def add(a, b):\n    return a + b\n"
    # the command ran in the editor's terminal, and the tests are green
    assert len(editor.created) == 1 and editor.created[0].command
    terminal = [
        c
        for u in calls
        if u.tool_call_id == "c1"
        for c in (u.content or [])
        if isinstance(c, TerminalToolCallContent)
    ]
    assert terminal, "the command's updates embed its terminal"
    assert final["c1"].status == "completed"
    assert "1 passed" in "".join(
        out for _, (_, chunks) in editor.terminals.items() for out in chunks
    )
