"""Issue 13's acceptance scenario in one session, and what an editor user relies on around
it: the session's settings (model, approval mode), a kill -9 mid-prompt, and runs started
through the extension methods.  The editor is the official ACP Python SDK
(:mod:`tests.e2e.acp_kit`); the model is the scripted provider.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    ClientCapabilities,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    FileEditToolCallContent,
    FileSystemCapabilities,
    McpServerStdio,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from tests.e2e.acp_kit import (
    MCP_SERVER,
    ToolEditor,
    acp_agent,
    call_round,
    initialize,
    texts,
    tool_text,
    transcript,
)

pytestmark = pytest.mark.anyio

EDITOR_CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)


def _plan(*statuses: str) -> dict[str, Any]:
    steps = ["read a.py", "write notes", "run the check", "add the numbers"]
    entries = [{"content": c, "status": s} for c, s in zip(steps, statuses, strict=True)]
    return {"toolCalls": [{"name": "update_plan", "arguments": {"entries": entries}, "id": ""}]}


def _with_id(round_: dict[str, Any], call_id: str) -> dict[str, Any]:
    round_["toolCalls"][0]["id"] = call_id
    return round_


async def test_one_session_through_every_step(tmp_path: Path) -> None:
    """initialize → session/new with an MCP server → a prompt that plans, reads the unsaved
    buffer, writes (one allowed, one rejected), runs a command, calls the MCP tool → cancel
    mid-stream → cancel mid-command (the terminal is killed) → /context → session/load in a
    new process shows the same history."""
    store, workspace = tmp_path / "store", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("on disk\n")
    a_py = str(workspace / "a.py")
    pid_file = tmp_path / "calc.pid"
    calc = McpServerStdio(
        name="calc", command=sys.executable, args=[str(MCP_SERVER), str(pid_file)], env=[]
    )
    script = tmp_path / "script.json"
    rounds = [
        _with_id(_plan("in_progress", "pending", "pending", "pending"), "p1"),
        call_round("read_file", "r1", path="a.py"),
        call_round("write_file", "w1", path="notes.md", content="read it\n"),
        call_round("write_file", "w2", path="a.py", content="clobbered\n"),
        call_round("run_command", "t1", command="echo from-terminal"),
        call_round("calc__add", "m1", a=19, b=23),
        _with_id(_plan("completed", "completed", "completed", "completed"), "p2"),
        {"text": "all done"},
        {"deltas": ["x"] * 400, "delayMs": 25},  # the prompt cancelled mid-stream
        call_round("run_command", "t2", command="exec sleep 60"),  # ... and mid-command
        {"text": "after the cancels"},
    ]
    script.write_text(json.dumps({"rounds": rounds}))
    choices = ["allow_once", "reject_once", "allow_once", "allow_once", "allow_once"]
    editor = ToolEditor({a_py: "unsaved buffer\n"}, choices)
    args = ("--script", str(script))

    async with acp_agent(tmp_path, store, *args, editor=editor) as (conn, _):
        await initialize(conn, EDITOR_CAPABILITIES)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[calc])
        sid = session.session_id
        # the session's settings: a model and an approval mode (also as ACP modes)
        assert [(o.id, o.current_value) for o in session.config_options or []] == [
            ("model", "default"),
            ("approval", "ask"),
        ]
        assert session.modes is not None and session.modes.current_mode_id == "ask"

        answer = await conn.prompt(session_id=sid, prompt=[text_block("do the task")])
        assert answer.stop_reason == "end_turn"
        live = editor.take()
        final = {u.tool_call_id: u for u in live if isinstance(u, ToolCallProgress)}

        # the plan: shown as plan updates, never as tool calls
        plans = [u for u in live if isinstance(u, AgentPlanUpdate)]
        assert [[e.status for e in p.entries] for p in plans] == [
            ["in_progress", "pending", "pending", "pending"],
            ["completed"] * 4,
        ]
        assert {u.tool_call_id for u in live if isinstance(u, ToolCallStart)} == {
            "r1",
            "w1",
            "w2",
            "t1",
            "m1",
        }
        # the read went to the editor: its unsaved buffer, not the disk
        assert tool_text(final["r1"]) == "```python\n1\tunsaved buffer\n```"
        # asked before each write, the command and the MCP tool; one write rejected
        assert [a.tool_call_id for a in editor.asked] == ["w1", "w2", "t1", "m1"]
        assert (workspace / "notes.md").read_text() == "read it\n"
        assert (workspace / "a.py").read_text() == "on disk\n"
        assert final["w2"].status == "failed"
        assert "the user rejected it" in tool_text(final["w2"])
        # the command ran in the editor's terminal, released after
        assert final["t1"].status == "completed"
        assert editor.released == ["term-1"]
        # the MCP tool answered
        assert (final["m1"].status, tool_text(final["m1"])) == ("completed", "42")
        assert texts(live, AgentMessageChunk) == "all done"

        # cancel mid-stream: cancelled, never an error
        editor.chunk_arrived.clear()
        streaming = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("talk")]))
        await asyncio.wait_for(editor.chunk_arrived.wait(), 30)
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(streaming, 30)).stop_reason == "cancelled"
        assert 0 < len(texts(editor.take(), AgentMessageChunk)) < 400

        # cancel while a command runs: the editor's terminal is killed, then released
        editor.terminal_started.clear()
        waiting = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("wait")]))
        await asyncio.wait_for(editor.terminal_started.wait(), 30)
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(waiting, 30)).stop_reason == "cancelled"
        assert editor.killed == ["term-2"]
        assert editor.released == ["term-1", "term-2"]
        editor.take()

        # /context renders the dashboard in the chat
        answer = await conn.prompt(session_id=sid, prompt=[text_block("/context")])
        assert answer.stop_reason == "end_turn"
        shown = texts(editor.take(), AgentMessageChunk)
        assert "| transcript |" in shown and "**Cache**" in shown

        # the session takes the next prompt
        answer = await conn.prompt(session_id=sid, prompt=[text_block("go on")])
        assert answer.stop_reason == "end_turn"
        after = editor.take()
        assert texts(after, AgentMessageChunk) == "after the cancels"

    # a new process: session/load replays what the editor saw live
    async with acp_agent(tmp_path, store, log="acp-2.log") as (conn, editor2):
        await initialize(conn, EDITOR_CAPABILITIES)
        loaded = await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        assert loaded.modes is not None and loaded.modes.current_mode_id == "ask"
        replay = editor2.take()
    turns: list[list[Any]] = [[]]
    for update in replay:
        if isinstance(update, UserMessageChunk):
            turns.append([])
        turns[-1].append(update)
    assert [texts(t[:1], UserMessageChunk) for t in turns[1:]] == [
        "do the task",
        "talk",
        "wait",
        "go on",
    ]
    # the first turn as replayed = as streamed (messages, tool calls, results, the plan)
    # (less the in_progress steps, which are not history: the terminal, the diff)
    streamed = [t for t in transcript(live) if not t[1].endswith(" in_progress")]
    assert transcript(turns[1][1:]) == streamed
    replayed = {u.tool_call_id: u for u in turns[1] if isinstance(u, ToolCallProgress)}
    assert tool_text(replayed["r1"]) == "```python\n1\tunsaved buffer\n```"
    assert "the user rejected it" in tool_text(replayed["w2"])
    # cancelled turns keep their prompt; the cancelled command shows as a failed call
    assert transcript(turns[2]) == [("user_message_chunk", "talk")]
    assert transcript(turns[3]) == [
        ("user_message_chunk", "wait"),
        ("tool_call", "t2 pending"),
        ("tool_call_update", "t2 failed"),
    ]
    assert transcript(turns[4]) == [
        ("user_message_chunk", "go on"),
        ("agent_message_chunk", "after the cancels"),
    ]


async def test_session_settings_model_and_approval_mode(tmp_path: Path) -> None:
    store, workspace = tmp_path / "store", tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    rounds = [
        call_round("write_file", "w1", path="one.txt", content="1\n"),  # accept_edits
        call_round("run_command", "t1", command="echo hi"),  # asked: rejected
        {"text": "first"},
        call_round("write_file", "w2", path="two.txt", content="2\n"),  # read_only
        {"text": "second"},
        {"text": "third"},
    ]
    script.write_text(json.dumps({"rounds": rounds}))
    editor = ToolEditor({}, ["reject_once"])
    async with acp_agent(tmp_path, store, "--script", str(script), editor=editor) as (conn, _):
        await initialize(conn, EDITOR_CAPABILITIES)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        # a stored profile becomes a model choice (serve's profile/create, as an extension)
        profile = await conn.ext_method(
            "context-sidecar/profile/create",
            {"name": "local", "modelBinding": {"provider": "scripted", "modelId": "local-1"}},
        )
        changed = await conn.set_config_option(
            config_id="approval", session_id=sid, value="accept_edits"
        )
        assert changed is not None
        values = {o.id: o.current_value for o in changed.config_options}
        assert values == {"model": "default", "approval": "accept_edits"}
        models = next(o for o in changed.config_options if o.id == "model")
        assert [m.value for m in models.options] == ["default", profile["profileId"]]

        # accept_edits: the write is not asked about, the command is (and rejected)
        answer = await conn.prompt(session_id=sid, prompt=[text_block("edit")])
        assert answer.stop_reason == "end_turn"
        updates = editor.take()
        assert [a.tool_call_id for a in editor.asked] == ["t1"]
        assert (workspace / "one.txt").read_text() == "1\n"
        # a client that speaks modes heard of the change too
        assert any(
            isinstance(u, CurrentModeUpdate) and u.current_mode_id == "accept_edits"
            for u in updates
        )

        # read_only, as an ACP mode: writes are refused without asking
        await conn.set_session_mode(session_id=sid, mode_id="read_only")
        answer = await conn.prompt(session_id=sid, prompt=[text_block("edit again")])
        updates = editor.take()
        final = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallProgress)}
        assert final["w2"].status == "failed"
        assert "Read only mode" in tool_text(final["w2"])
        assert not (workspace / "two.txt").exists()
        assert [a.tool_call_id for a in editor.asked] == ["t1"]
        synced = [u for u in updates if isinstance(u, ConfigOptionUpdate)]
        assert synced, updates
        assert {o.id: o.current_value for o in synced[0].config_options} == {
            "model": "default",
            "approval": "read_only",
        }

        # the model: the next prompt runs with the chosen profile
        await conn.set_config_option(config_id="model", session_id=sid, value=profile["profileId"])
        await conn.prompt(session_id=sid, prompt=[text_block("which model?")])
        runs = await conn.ext_method("context-sidecar/run/list", {"sessionId": sid})
        newest = max(runs["runs"], key=lambda r: r["createdAt"])
        assert newest["settings"]["profileId"] == profile["profileId"]

        # bad settings: params.invalid naming what is allowed; the session is unchanged
        with pytest.raises(RequestError) as bad:
            await conn.set_config_option(config_id="approval", session_id=sid, value="yolo")
        assert bad.value.code == -32602
        assert (bad.value.data or {})["details"]["allowed"] == [
            "ask",
            "accept_edits",
            "auto",
            "plan",
            "read_only",
            "allow_all",
        ]
        with pytest.raises(RequestError) as unknown:
            await conn.set_config_option(config_id="colour", session_id=sid, value="red")
        assert (unknown.value.data or {})["code"] == "params.invalid"
        with pytest.raises(RequestError) as missing:
            await conn.set_session_mode(session_id="ses_nope", mode_id="ask")
        assert (missing.value.data or {})["code"] == "session.not_found"

    # the settings are the session's: a later process keeps them
    async with acp_agent(tmp_path, store, log="acp-2.log") as (conn, _):
        await initialize(conn, EDITOR_CAPABILITIES)
        loaded = await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        assert loaded.modes is not None and loaded.modes.current_mode_id == "read_only"
        values = {o.id: o.current_value for o in loaded.config_options or []}
        assert values == {"model": profile["profileId"], "approval": "read_only"}


async def test_kill_9_mid_prompt_loses_nothing_acknowledged(tmp_path: Path) -> None:
    """The agent is killed while the model streams its second round: the prompt and the
    first round (a tool call and its result) were stored and are replayed by the next
    process, which takes the next prompt."""
    store, workspace = tmp_path / "store", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("print('a')\n")
    script = tmp_path / "script.json"
    rounds = [
        call_round("read_file", "r1", path="a.py"),
        {"deltas": ["y"] * 2000, "delayMs": 20},
    ]
    script.write_text(json.dumps({"rounds": rounds}))
    args = ("--script", str(script))
    async with acp_agent(tmp_path, store, *args, killed=True) as (conn, editor):
        await initialize(conn)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("read")]))
        await asyncio.wait_for(editor.chunk_arrived.wait(), 30)  # round 2 is streaming
        assert editor.process is not None
        os.kill(editor.process.pid, signal.SIGKILL)
        with pytest.raises(Exception):  # noqa: B017 - the connection is gone, however it says so
            await asyncio.wait_for(prompt, 30)
        live = transcript(editor.take())
    assert live[:2] == [("tool_call", "r1 pending"), ("tool_call_update", "r1 completed")]

    script.write_text(json.dumps({"rounds": [{"text": "back"}]}))
    async with acp_agent(tmp_path, store, *args, log="acp-2.log") as (conn, editor):
        await initialize(conn)
        await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        replay = transcript(editor.take())
        assert replay == [
            ("user_message_chunk", "read"),
            ("tool_call", "r1 pending"),
            ("tool_call_update", "r1 completed"),
        ]
        answer = await conn.prompt(session_id=sid, prompt=[text_block("again")])
        assert answer.stop_reason == "end_turn"
        assert texts(editor.take(), AgentMessageChunk) == "back"


async def test_runs_started_as_extension_methods_send_their_events(tmp_path: Path) -> None:
    script = {"rounds": [{"deltas": ["a", "b", "c"]}]}
    async with acp_agent(tmp_path, tmp_path / "store") as (conn, editor):
        await initialize(conn)
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        started = await conn.ext_method(
            "context-sidecar/run/start",
            {
                "sessionId": sid,
                "userTurn": [{"type": "text", "text": "hi"}],
                "subscribe": True,
                "profile": {"modelBinding": {"provider": "scripted", "modelId": "s"}},
                "script": script,
            },
        )
        run_id = started["runId"]
        for _ in range(300):
            events = [p for m, p in editor.extension_notifications if m.endswith("run/event")]
            if any(e["type"] == "run.completed" for e in events):
                break
            await asyncio.sleep(0.1)
    assert {m for m, _ in editor.extension_notifications} == {"context-sidecar/run/event"}
    assert {e["runId"] for e in events} == {run_id}
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # in order, none missing
    assert "".join(e["payload"].get("text", "") for e in events if e["type"] == "model.delta") == (
        "abc"
    )


async def test_edit_file_changes_the_editors_buffer_and_explains_refusals(tmp_path: Path) -> None:
    store, workspace = tmp_path / "store", tmp_path / "ws"
    workspace.mkdir()
    a_py = workspace / "a.py"
    a_py.write_text("on disk\n")
    script = tmp_path / "script.json"
    rounds = [
        call_round("edit_file", "e1", path="a.py", old_text="x = 1", new_text="x = 2"),
        call_round("edit_file", "e2", path="a.py", old_text="nowhere", new_text="y"),
        call_round("edit_file", "e3", path="a.py", old_text="print(x)", new_text="p"),
        call_round(
            "edit_file", "e4", path="a.py", old_text="print(x)", new_text="log(x)", replace_all=True
        ),
        call_round("edit_file", "e5", path="b.py", old_text="a", new_text="b"),
        {"text": "edited"},
    ]
    script.write_text(json.dumps({"rounds": rounds}))
    buffer = "x = 1\nprint(x)\nprint(x)\n"  # unsaved: the disk says something else
    editor = ToolEditor({str(a_py): buffer}, ["allow_once", "allow_once"])
    async with acp_agent(tmp_path, store, "--script", str(script), editor=editor) as (conn, _):
        await initialize(conn, EDITOR_CAPABILITIES)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("edit a.py")])
        assert answer.stop_reason == "end_turn"
        updates = editor.take()
    final = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallProgress)}
    starts = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallStart)}
    assert {s.kind for s in starts.values()} == {"edit"}
    # asked with the diff of the buffer, written through the editor
    assert [a.tool_call_id for a in editor.asked] == ["e1", "e4"]
    first = editor.asked[0].content
    assert first is not None
    diff = first[0]
    assert isinstance(diff, FileEditToolCallContent)
    assert (diff.old_text, diff.new_text) == (buffer, "x = 2\nprint(x)\nprint(x)\n")
    assert a_py.read_text() == "x = 2\nlog(x)\nlog(x)\n"
    assert tool_text(final["e4"]) == ""  # the diff stays shown
    # refused without asking, and the model reads why
    assert "was not found" in tool_text(final["e2"])
    assert "occurs 2 times" in tool_text(final["e3"])
    assert "does not exist" in tool_text(final["e5"])
    assert all(final[c].status == "failed" for c in ("e2", "e3", "e5"))
