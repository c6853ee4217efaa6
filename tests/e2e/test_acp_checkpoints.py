"""The core checkpoints the editor's changes too (issue 44): on the ACP face the edit goes
through the editor (``fs/write_text_file``) and the command through its terminal, and the
run loop — not the face — takes a ``turn`` checkpoint, one before each of the two calls and
records what each left; restoring the turn's checkpoint through the method table puts the
files back and removes what the command made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities

from sidecar.client import SidecarClient
from tests.e2e.acp_kit import ToolEditor, acp_agent, call_round, initialize

pytestmark = pytest.mark.anyio

FS_AND_TERMINAL = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)


async def test_the_editors_edit_and_command_are_checkpointed(tmp_path: Path) -> None:
    store, workspace = tmp_path / "store", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("before\n")
    rounds = [
        call_round("edit_file", "e1", path="notes.txt", old_text="before", new_text="after"),
        call_round("run_command", "c1", command="printf made > made.txt"),
        {"text": "done"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": rounds}))
    editor = ToolEditor({}, ["allow_once", "allow_once"])
    async with acp_agent(tmp_path, store, "--script", str(script), editor=editor) as (conn, _):
        await initialize(conn, FS_AND_TERMINAL)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("change it")])
        assert answer.stop_reason == "end_turn"
    assert editor.writes and editor.created  # through the editor, not the sidecar's disk
    assert (workspace / "made.txt").read_text() == "made"

    lines = (store / "sessions" / sid / "checkpoints.jsonl").read_text().splitlines()
    journal = [json.loads(line) for line in lines]
    assert [(r["reason"], r.get("tool")) for r in journal if r["type"] == "checkpoint"] == [
        ("turn", None),
        ("edit", "edit_file"),
        ("command", "run_command"),
    ]
    assert [r["callId"] for r in journal if r["type"] == "after"] == ["e1", "c1"]

    turn = journal[0]["checkpointId"]
    async with await SidecarClient.spawn(store=store) as client:
        restored = await client.request(
            "checkpoint/restore",
            {"sessionId": sid, "checkpointId": turn, "files": True, "conversation": False},
        )
    assert restored["status"] == "restored", restored
    assert (workspace / "notes.txt").read_text() == "before\n"
    assert not (workspace / "made.txt").exists()
