"""Confinement on the ACP face, through the official SDK as the editor (issue 40, item 1).

- With an editor that serves ``fs/*`` and ``terminal/*``, in ``accept_edits`` mode: a path
  that climbs out through a symlink inside the root (``sub/../../secret.txt`` where ``sub``
  links to ``a/b``) passes the check because its *resolved* path is inside; the editor must
  be sent that resolved path, never the lexical one (which is outside): reads, writes, edits,
  diffs, locations and a terminal's working directory.
- Without editor ``fs``: an approved write to a hard link inside the root replaces the link
  with a new file; the linked file outside is unchanged (the sidecar writes temp + rename).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import (
    ClientCapabilities,
    FileEditToolCallContent,
    FileSystemCapabilities,
    ToolCallProgress,
    ToolCallStart,
)

from tests.e2e.acp_kit import ToolEditor, acp_agent, call_round, initialize, tool_text

pytestmark = pytest.mark.anyio

SECRET = "s3cret-0ut5ide-the-r00t-41"
WITH_FS = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)
NO_FS = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False
)


def _inside(path: str, root: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == root or root in real.parents


def _sent_paths(updates: list[Any]) -> list[str]:
    """Every path the agent put in a tool call's locations or diffs."""
    out: list[str] = []
    for u in updates:
        if isinstance(u, ToolCallStart | ToolCallProgress):
            out += [loc.path for loc in u.locations or []]
            out += [c.path for c in u.content or [] if isinstance(c, FileEditToolCallContent)]
    return out


async def _history(conn: Any, sid: str) -> str:
    read = await conn.ext_method("context-sidecar/session/read", {"sessionId": sid})
    return json.dumps(read["entries"])


async def test_the_editor_is_sent_the_resolved_path(tmp_path: Path) -> None:
    store, workspace = tmp_path / "store", tmp_path / "ws"
    (workspace / "a" / "b").mkdir(parents=True)
    (workspace / "sub").symlink_to("a/b")
    secret = tmp_path / "secret.txt"  # where sub/../../secret.txt leads, lexically
    secret.write_text(f"token: {SECRET}\n")
    climb = "sub/../../"
    rounds = [
        call_round("read_file", "r1", path=f"{climb}secret.txt"),
        call_round("write_file", "w1", path=f"{climb}planted.txt", content="planted\n"),
        call_round(
            "edit_file", "e1", path=f"{climb}secret.txt", old_text="token:", new_text="edited"
        ),
        call_round("run_command", "c1", command="pwd", cwd="sub/../.."),
        {"text": "done"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": rounds}))
    editor = ToolEditor({}, ["allow_once"])  # only the command is asked in accept_edits
    async with acp_agent(tmp_path, store, "--script", str(script), editor=editor) as (conn, _):
        await initialize(conn, WITH_FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=sid, mode_id="accept_edits")
        answer = await conn.prompt(session_id=sid, prompt=[text_block("climb out")])
        assert answer.stop_reason == "end_turn"
        updates = editor.take()
        history = await _history(conn, sid)
    root = Path(os.path.realpath(workspace))
    final = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallProgress)}
    # every path the editor was sent is inside the root: fs reads and writes, diffs,
    # locations, the terminal's working directory
    assert editor.reads and editor.writes and editor.created
    sent = [*editor.reads, *editor.writes, *_sent_paths(updates), *_sent_paths(editor.asked)]
    sent += [str(t.cwd) for t in editor.created]
    assert [p for p in sent if not _inside(p, root)] == []
    assert editor.created[0].cwd == str(root)
    # nothing outside was read, written or planted
    assert secret.read_text() == f"token: {SECRET}\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".txt") == ["secret.txt"]
    assert SECRET not in history and all(SECRET not in tool_text(u) for u in final.values())
    # what the resolved paths name happened inside: the read and the edit found no file,
    # the write created one in the root
    assert final["r1"].status == final["e1"].status == "failed"
    assert (root / "planted.txt").read_text() == "planted\n"
    assert final["c1"].status == "completed" and str(root) in history


async def test_a_write_through_a_hard_link_leaves_the_linked_file(tmp_path: Path) -> None:
    store, workspace = tmp_path / "store", tmp_path / "ws"
    workspace.mkdir()
    outside, outside_too = tmp_path / "outside.txt", tmp_path / "outside-too.txt"
    for target, link in ((outside, "link.txt"), (outside_too, "edited.txt")):
        target.write_text(f"{SECRET}\n")
        os.link(target, workspace / link)
    rounds = [
        call_round("write_file", "w1", path="link.txt", content="replaced\n"),
        call_round("edit_file", "e1", path="edited.txt", old_text=SECRET, new_text="changed"),
        {"text": "done"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": rounds}))
    editor = ToolEditor({}, ["allow_once", "allow_once"])
    async with acp_agent(tmp_path, store, "--script", str(script), editor=editor) as (conn, _):
        await initialize(conn, NO_FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("write")])
        assert answer.stop_reason == "end_turn"
        updates = editor.take()
    final = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallProgress)}
    assert [a.tool_call_id for a in editor.asked] == ["w1", "e1"]  # approved, and run
    assert final["w1"].status == final["e1"].status == "completed", tool_text(final["e1"])
    assert editor.reads == editor.writes == []  # no editor fs: the sidecar wrote the disk
    # the links were replaced by new files; the file outside is as it was
    assert outside.read_text() == outside_too.read_text() == f"{SECRET}\n"
    assert (workspace / "link.txt").read_text() == "replaced\n"
    assert (workspace / "edited.txt").read_text() == "changed\n"
    assert outside.stat().st_nlink == outside_too.stat().st_nlink == 1
