"""The built-in look-around tools through the ACP face, with an editor that has ``fs`` but no
terminal (as CodeCompanion.nvim): a scripted coding task on a repository with a bug and a
failing test — list, grep (a .gitignore'd copy is not found), read, edit, run the tests,
green at the end.  The look-around calls ask nothing; the edit and the command are asked; the
command runs in the sidecar (the editor has no terminal)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import (
    ClientCapabilities,
    FileEditToolCallContent,
    FileSystemCapabilities,
    ToolCallProgress,
    ToolCallStart,
)

from sidecar.tools.bounds import count_tokens
from tests.e2e.acp_kit import ToolEditor, acp_agent, call_round, initialize, tool_text
from tests.e2e.workspace_kit import fixture_repo

pytestmark = pytest.mark.anyio

NO_TERMINAL = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False
)


async def test_a_coding_task_without_a_terminal(tmp_path: Path) -> None:
    store, workspace = tmp_path / "store", tmp_path / "repo"
    fixture_repo(workspace)
    os.mkfifo(workspace / "pipe")
    (workspace / "big.py").write_text("".join(f"x_{i} = {i}  # TODO\n" for i in range(5000)))
    test_cmd = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    rounds = [
        call_round("list_dir", "l1"),
        call_round("grep", "g1", pattern=r"return a - b"),
        call_round("glob", "f1", pattern="**/*.py"),
        call_round("read_file", "r1", path="calc/add.py"),
        call_round("edit_file", "e1", path="calc/add.py", old_text="a - b", new_text="a + b"),
        call_round("run_command", "c1", command=test_cmd),
        call_round("write_file", "n1", path="bad\x00name", content="x"),
        call_round("write_file", "p1", path="pipe", content="x"),
        call_round("grep", "g2", pattern="x", path="../"),
        {"text": "fixed"},
        call_round("read_file", "r2", path="big.py"),  # a second prompt
        call_round("read_file", "r3", path="big.py", offset=10, limit=51),
        call_round("grep", "g3", pattern="TODO"),
        {"text": "read"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": rounds}))
    editor = ToolEditor({}, ["allow_once", "allow_once"])

    async with acp_agent(tmp_path, store, "--script", str(script), editor=editor) as (conn, _):
        await initialize(conn, NO_TERMINAL)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("fix the failing test")])
        assert answer.stop_reason == "end_turn"
        answer = await conn.prompt(session_id=sid, prompt=[text_block("read big.py")])
        assert answer.stop_reason == "end_turn"
        updates = editor.take()
        history = await conn.ext_method("context-sidecar/session/read", {"sessionId": sid})
    results = {
        p["callId"]: p["content"][0]["text"]
        for e in history["entries"]
        for p in e.get("content", [])
        if p.get("type") == "toolResult" and p["content"]
    }
    assert results["r1"] == "1\tdef add(a, b):\n2\t    return a - b"

    starts = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallStart)}
    final = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallProgress)}
    located = {
        u.tool_call_id: [(loc.path, loc.line) for loc in u.locations]
        for u in updates
        if isinstance(u, ToolCallProgress) and u.locations
    }
    # titles and kinds as editors' own agents show them
    assert {k: (s.kind, s.title) for k, s in starts.items()} == {
        "l1": ("search", "List ."),
        "g1": ("search", "Search `return a - b`"),
        "f1": ("search", "Find `**/*.py`"),
        "r1": ("read", "Read calc/add.py"),
        "e1": ("edit", "Edit calc/add.py"),
        "c1": ("execute", f"Run `{test_cmd}`"),
        "n1": ("edit", "Write bad\x00name"),
        "p1": ("edit", "Write pipe"),
        "g2": ("search", "Search `x` in ../"),
        "r2": ("read", "Read big.py"),
        "r3": ("read", "Read big.py (lines 10-60)"),
        "g3": ("search", "Search `TODO`"),
    }
    add_py = str(workspace / "calc" / "add.py")
    # locations with lines: a read at its offset, an edit at its first changed line, a grep
    # at the files it matched (not the .gitignore'd copy)
    assert starts["r3"].locations is not None
    assert [(loc.path, loc.line) for loc in starts["r3"].locations] == [
        (str(workspace / "big.py"), 10)
    ]
    assert located["e1"] == [(add_py, 2)]
    assert editor.asked[0].locations is not None
    assert [(loc.path, loc.line) for loc in editor.asked[0].locations] == [(add_py, 2)]
    assert located["g1"] == [(add_py, 2)]
    # a read is shown fenced as code; the model read the plain numbered text
    assert tool_text(final["r1"]) == ("```python\n1\tdef add(a, b):\n2\t    return a - b\n```")
    # looked around without asking; the edit and the command were asked, nothing else
    assert [a.tool_call_id for a in editor.asked] == ["e1", "c1"]
    listing = tool_text(final["l1"])
    assert "calc/" in listing and "build" not in listing
    found = tool_text(final["g1"])
    assert found.splitlines() == [
        "1 match in 1 file",
        "calc/add.py: 1 match",
        "  2:     return a - b",
    ]
    assert "build" not in tool_text(final["f1"])
    # the command ran in the sidecar (no terminal was created) and the tests are green
    assert editor.created == []
    assert final["c1"].status == "completed", tool_text(final["c1"])
    assert "1 passed" in tool_text(final["c1"]) and "[exit code 0]" in tool_text(final["c1"])
    assert (workspace / "calc" / "add.py").read_text() == "def add(a, b):\n    return a + b\n"
    # refused with a reason that says why, without asking and without blocking
    assert final["n1"].status == "failed" and "NUL byte" in tool_text(final["n1"])
    assert final["p1"].status == "failed" and "FIFO" in tool_text(final["p1"])
    assert final["g2"].status == "failed" and "outside" in tool_text(final["g2"])
    # a 5,000-line read and a grep of 5,000 matches: bounded, and they say how to go on
    fence, *read, closing = tool_text(final["r2"]).splitlines()
    assert (fence, closing) == ("```python", "```")  # shown as code; the model reads it plain
    assert read[0] == "   1\tx_0 = 0  # TODO"
    assert read[-1].startswith(f"[lines 1-{len(read) - 1} of 5000 shown; read on with offset=")
    assert count_tokens(tool_text(final["r2"])) <= 10_000
    found_all = tool_text(final["g3"])
    assert found_all.startswith("5000 matches in 1 file") and "4950 more in this file" in found_all


async def test_edit_file_applies_several_edits_all_or_nothing(tmp_path: Path) -> None:
    """``edits`` through the face: applied in order to the editor's (unsaved) buffer, one
    permission asked for the whole call; one edit that does not match leaves the file as it
    was, is refused without asking, and the model reads which edit and why."""
    store, workspace = tmp_path / "store", tmp_path / "ws"
    workspace.mkdir()
    a_py = workspace / "a.py"
    a_py.write_text("on disk\n")
    buffer = "x = 1\ny = 2\nprint(x)\nprint(x)\n"

    def edits(*pairs: tuple[str, str]) -> list[dict[str, str]]:
        return [{"old_text": old, "new_text": new} for old, new in pairs]

    rounds = [
        call_round(
            "edit_file", "e1", path="a.py", edits=edits(("x = 1", "x = 10"), ("y = 2", "y = 20"))
        ),
        call_round(
            "edit_file", "e2", path="a.py", edits=edits(("x = 10", "x = 3"), ("nowhere", "z"))
        ),
        call_round(
            "edit_file", "e3", path="a.py", edits=edits(("y = 20", "y = 3"), ("print(x)", "p"))
        ),
        call_round(
            "edit_file",
            "e4",
            path="a.py",
            edits=[
                {"old_text": "x = 10", "new_text": "x = 4"},
                {"old_text": "print(x)", "new_text": "log(x)", "replace_all": True},
            ],
        ),
        call_round("edit_file", "e5", path="a.py", edits=[{"old_text": "x = 4"}]),
        {"text": "edited"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": rounds}))
    editor = ToolEditor({str(a_py): buffer}, ["allow_once", "allow_once"])
    async with acp_agent(tmp_path, store, "--script", str(script), editor=editor) as (conn, _):
        await initialize(conn, NO_TERMINAL)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("edit a.py")])
        assert answer.stop_reason == "end_turn"
        updates = editor.take()
    final = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallProgress)}
    # asked once per call that can apply, with the diff of the whole call
    assert [a.tool_call_id for a in editor.asked] == ["e1", "e4"]
    [diff] = editor.asked[0].content or []
    assert isinstance(diff, FileEditToolCallContent)
    assert (diff.old_text, diff.new_text) == (buffer, "x = 10\ny = 20\nprint(x)\nprint(x)\n")
    assert a_py.read_text() == "x = 4\ny = 20\nlog(x)\nlog(x)\n"
    assert final["e1"].status == final["e4"].status == "completed"
    # all or nothing: the first edit of e2 and e3 matched, yet nothing of them was written
    assert final["e2"].status == "failed"
    assert "edit 2 of 2: old_text was not found in" in tool_text(final["e2"])
    assert final["e3"].status == "failed"
    assert "edit 2 of 2: old_text occurs 2 times in" in tool_text(final["e3"])
    assert final["e5"].status == "failed" and "edits[0]" in tool_text(final["e5"])


async def test_a_profile_narrows_the_tools_an_acp_session_offers(tmp_path: Path) -> None:
    store, workspace = tmp_path / "store", tmp_path / "repo"
    fixture_repo(workspace)
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"builtinTools": {"tools": ["read_file", "grep", "glob"]}}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": [{"text": "looked"}]}))
    args = ("--profile", str(profile), "--script", str(script))
    async with acp_agent(tmp_path, store, *args, editor=ToolEditor({}, [])) as (conn, _):
        await initialize(conn, NO_TERMINAL)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("look")])
        assert answer.stop_reason == "end_turn"
        runs = await conn.ext_method("context-sidecar/run/list", {"sessionId": sid})
        frozen = await conn.ext_method(
            "context-sidecar/input/get", {"inputId": runs["runs"][0]["inputId"]}
        )
    # the profile's list, in the face's order; the plan tool is not a built-in and stays
    assert [t["name"] for t in frozen["tools"]] == ["read_file", "glob", "grep", "update_plan"]


async def test_a_command_without_a_terminal_gets_the_allowlist_and_the_profiles_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sidecar runs an ACP command as it runs a ``serve`` one: the environment is the
    allowlist plus the profile's ``builtinTools.env`` (a secret-shaped value still left out),
    and the command carries its ``runId/callId`` marker."""
    store, workspace = tmp_path / "store", tmp_path / "repo"
    workspace.mkdir()
    monkeypatch.setenv("MY_SETTING", "kept")
    monkeypatch.setenv("NAMED_BUT_SECRET", "ghp_" + "a1B2" * 10)
    monkeypatch.setenv("DATABASE_URL", "postgres://u:pw@db/x")
    monkeypatch.setenv("NOT_LISTED", "dropped")
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"builtinTools": {"env": ["MY_SETTING", "NAMED_BUT_SECRET"]}}))
    script = tmp_path / "script.json"
    rounds = [call_round("run_command", "c1", command="env"), {"text": "ran"}]
    script.write_text(json.dumps({"rounds": rounds}))
    args = ("--profile", str(profile), "--script", str(script))
    editor = ToolEditor({}, ["allow_once"])
    async with acp_agent(tmp_path, store, *args, editor=editor) as (conn, _):
        await initialize(conn, NO_TERMINAL)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("env")])
        assert answer.stop_reason == "end_turn"
        history = await conn.ext_method("context-sidecar/session/read", {"sessionId": sid})
    [output] = [
        p["content"][0]["text"]
        for e in history["entries"]
        for p in e.get("content", [])
        if p.get("type") == "toolResult"
    ]
    names = {line.split("=", 1)[0] for line in output.splitlines() if "=" in line}
    assert {"PATH", "HOME", "MY_SETTING", "CONTEXT_SIDECAR_CALL"} <= names, output
    assert not names & {"NAMED_BUT_SECRET", "DATABASE_URL", "NOT_LISTED"}, output
    [marker] = [line for line in output.splitlines() if line.startswith("CONTEXT_SIDECAR_CALL=")]
    assert marker.startswith("CONTEXT_SIDECAR_CALL=run_") and marker.endswith("/c1")
