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
    FileSystemCapabilities,
    ToolCallProgress,
    ToolCallStart,
)

from sidecar.tools.bounds import count_tokens
from tests.e2e.acp_kit import ToolEditor, acp_agent, call_round, initialize, tool_text

pytestmark = pytest.mark.anyio

NO_TERMINAL = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False
)


def _fixture_repo(root: Path) -> None:
    (root / "calc").mkdir(parents=True)
    (root / "calc" / "__init__.py").write_text("")
    (root / "calc" / "add.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_add.py").write_text(
        "from calc.add import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (root / "build" / "calc").mkdir(parents=True)
    (root / "build" / "calc" / "add.py").write_text("def add(a, b):\n    return a - b\n")
    (root / ".gitignore").write_text("build/\n")


async def test_a_coding_task_without_a_terminal(tmp_path: Path) -> None:
    store, workspace = tmp_path / "store", tmp_path / "repo"
    _fixture_repo(workspace)
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

    starts = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallStart)}
    final = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallProgress)}
    assert {k: (s.kind, s.title) for k, s in starts.items() if k in ("l1", "g1", "f1")} == {
        "l1": ("search", "List ."),
        "g1": ("search", "Search `return a - b`"),
        "f1": ("search", "Find `**/*.py`"),
    }
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
    read = tool_text(final["r2"]).splitlines()
    assert read[0] == "   1\tx_0 = 0  # TODO"
    assert read[-1].startswith(f"[lines 1-{len(read) - 1} of 5000 shown; read on with offset=")
    assert count_tokens(tool_text(final["r2"])) <= 10_000
    found_all = tool_text(final["g3"])
    assert found_all.startswith("5000 matches in 1 file") and "4950 more in this file" in found_all
