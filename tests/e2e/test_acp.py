"""``context-sidecar acp`` driven by the official ACP Python SDK's client connection (the
editor's side is in :mod:`tests.e2e.acp_kit`).  The model is the scripted provider, one
script played across the process's prompts in order.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ClientCapabilities,
    FileEditToolCallContent,
    FileSystemCapabilities,
    HttpMcpServer,
    McpServerStdio,
    TerminalToolCallContent,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
)

from sidecar.client import sidecar_command
from tests.e2e.acp_kit import (
    MCP_SERVER,
    Editor,
    ToolEditor,
    acp_agent,
    call_round,
    initialize,
    is_running,
    texts,
    tool_text,
    transcript,
)
from tests.e2e.history_kit import tool_turns

pytestmark = pytest.mark.anyio


SCRIPT = {
    "rounds": [
        {"reasoning": "they greet me", "deltas": ["Hel", "lo ", "there"]},
        {"toolCalls": [{"name": "read_file", "arguments": {"path": "a.py"}, "id": "c1"}]},
        {"text": "done"},
        {"text": "cut", "stopReason": "max_tokens"},
        {"deltas": ["x"] * 400, "delayMs": 25},
        {"text": "after the cancel"},
    ]
}


async def test_prompts_stream_updates_cancel_and_load_replays(tmp_path: Path) -> None:
    store, workspace = tmp_path / "store", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("Be brief.\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))

    async with acp_agent(tmp_path, store, "--script", str(script)) as (conn, editor):
        await initialize(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id

        # reasoning then text: agent_thought_chunk, agent_message_chunk per delta, end_turn
        answer = await conn.prompt(session_id=sid, prompt=[text_block("hi")])
        assert answer.stop_reason == "end_turn"
        first = editor.take()
        usage = [u for u in first if isinstance(u, UsageUpdate)]
        first = [u for u in first if not isinstance(u, UsageUpdate)]
        assert len(usage) == 1 and usage[0].used > 0 and usage[0].size >= usage[0].used
        assert [type(u) for u in first] == [AgentThoughtChunk, *[AgentMessageChunk] * 3]
        assert texts(first, AgentThoughtChunk) == "they greet me"
        assert texts(first, AgentMessageChunk) == "Hello there"

        # a tool call: tool_call (pending, kind, location) then its result, then the answer
        answer = await conn.prompt(session_id=sid, prompt=[text_block("read a.py")])
        assert answer.stop_reason == "end_turn"
        second = editor.take()
        start = next(u for u in second if isinstance(u, ToolCallStart))
        assert (start.tool_call_id, start.status, start.kind) == ("c1", "pending", "read")
        assert start.raw_input == {"path": "a.py"}
        assert start.locations is not None
        assert start.locations[0].path == str(workspace / "a.py")
        result = next(u for u in second if isinstance(u, ToolCallProgress))
        assert (result.tool_call_id, result.status) == ("c1", "failed")
        # no fs capability: read from disk, where there is no a.py
        assert result.content and "does not exist" in result.content[0].content.text
        assert texts(second, AgentMessageChunk) == "done"

        # the model's own stop reason
        answer = await conn.prompt(session_id=sid, prompt=[text_block("go on")])
        assert answer.stop_reason == "max_tokens"
        editor.take()

        # cancel mid-stream: the prompt answers cancelled, never an error
        editor.chunk_arrived.clear()
        prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("stream")]))
        await asyncio.wait_for(editor.chunk_arrived.wait(), 30)
        await conn.cancel(session_id=sid)
        answer = await asyncio.wait_for(prompt, 30)
        assert answer.stop_reason == "cancelled"
        streamed = texts(editor.take(), AgentMessageChunk)
        assert 0 < len(streamed) < 400

        # and the session takes the next prompt
        answer = await conn.prompt(session_id=sid, prompt=[text_block("again")])
        assert answer.stop_reason == "end_turn"
        assert texts(editor.take(), AgentMessageChunk) == "after the cancel"

        listed = await conn.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in listed.sessions] == [sid]

    # a new process: session/load replays the stored history before answering
    async with acp_agent(tmp_path, store, log="acp-2.log") as (conn, editor):
        await initialize(conn)
        await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        replay = transcript(editor.take())
    assert replay == [
        ("user_message_chunk", "hi"),
        ("agent_thought_chunk", "they greet me"),
        ("agent_message_chunk", "Hello there"),
        ("user_message_chunk", "read a.py"),
        ("tool_call", "c1 pending"),
        ("tool_call_update", "c1 failed"),
        ("agent_message_chunk", "done"),
        ("user_message_chunk", "go on"),
        ("agent_message_chunk", "cut"),
        # the cancelled turn: its prompt is history, its partial answer never was
        ("user_message_chunk", "stream"),
        ("user_message_chunk", "again"),
        ("agent_message_chunk", "after the cancel"),
    ]


async def test_errors_are_json_rpc_errors(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    failing = {"error": {"code": "model.overloaded", "message": "busy", "retryable": True}}
    script.write_text(json.dumps({"rounds": [failing, {"text": "fine"}]}))
    async with acp_agent(tmp_path, tmp_path / "store", "--script", str(script)) as (conn, _):
        await initialize(conn)
        with pytest.raises(RequestError) as unknown:
            await conn.prompt(session_id="ses_nope", prompt=[text_block("hi")])
        assert unknown.value.code == -32002  # ACP's resource_not_found; -32000 is auth_required
        assert (unknown.value.data or {})["code"] == "session.not_found"
        with pytest.raises(RequestError) as relative:
            await conn.new_session(cwd="relative/dir", mcp_servers=[])
        assert relative.value.code == -32602
        with pytest.raises(RequestError) as load:
            await conn.load_session(cwd=str(tmp_path), session_id="ses_nope", mcp_servers=[])
        assert (load.value.data or {})["code"] == "session.not_found"
        # a run that fails (here the model's provider): an error carrying the run's failure
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        with pytest.raises(RequestError) as failed:
            await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
        assert (
            failed.value.code == -32603
        )  # never -32000: Zed reads it as "Authentication required"
        assert (failed.value.data or {})["code"] == "model.overloaded"
        assert (failed.value.data or {})["retryable"] is True
        # the connection and the session live on
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
        assert answer.stop_reason == "end_turn"


async def test_hostile_lines_are_answered_and_the_connection_lives(tmp_path: Path) -> None:
    """Raw bytes, no SDK: what a broken or hostile client can put on the wire."""
    process = await asyncio.create_subprocess_exec(
        *sidecar_command("acp", "--store", str(tmp_path / "store"), "--max-message-bytes", "4096"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None
    lines = [
        b"this is not json",
        b"[]",
        b"[{}, {}]",
        b"42",
        b'{"jsonrpc":"2.0","id":1,"method":"no/such/method"}',
        b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":5}}',
        b'{"jsonrpc":"2.0","id":3,"method":"initialize","params":"x"}',
        b'{"jsonrpc":"2.0","id":[4],"method":"initialize"}',
        b'{"jsonrpc":"2.0","id":5,"method":7}',
        # one message broken by a raw newline: two lines, neither JSON
        b'{"jsonrpc":"2.0","id":6,\n"method":"initialize","params":{"protocolVersion":1}}',
        b'{"jsonrpc":"2.0","id":7,"method":"x","params":"' + b"a" * 10_000 + b'"}',
        b"[" * 4000,  # nested deeper than the parser goes
        b'{"jsonrpc":"2.0","method":"no/such/notification"}',
        b'{"jsonrpc":"2.0","id":99,"result":{}}',  # a response to nothing
        b"",
        b'{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":1}}\r',
    ]
    process.stdin.write(b"\n".join(lines) + b"\n")
    await process.stdin.drain()
    answers: list[dict[str, Any]] = []
    while not any(a.get("id") == 8 for a in answers):
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        assert line.endswith(b"\n"), line
        answers.append(json.loads(line))
    process.stdin.close()
    rest = await asyncio.wait_for(process.stdout.read(), 30)
    assert await asyncio.wait_for(process.wait(), 30) == 0
    answers += [json.loads(line) for line in rest.splitlines()]

    assert all(a.get("jsonrpc") == "2.0" for a in answers)
    by_id: dict[Any, list[int]] = {}
    for a in answers:
        by_id.setdefault(a.get("id"), []).append(a["error"]["code"] if "error" in a else 0)
    assert by_id[1] == [-32601]
    assert by_id[2] == [-32602]
    assert by_id[3] == [-32600]  # params must be structured (JSON-RPC 2.0 §4.2)
    assert by_id[5] == [-32600]
    assert by_id[8] == [0]
    assert 7 not in by_id and 99 not in by_id and 6 not in by_id
    # not JSON x3 (one line, two halves) = -32700; [] [..] 42, id [4], the long line and the
    # deep one = -32600 (id null: none could be read); the unknown notification and the stray
    # response: no answer
    assert sorted(by_id[None]) == [-32700, -32700, -32700, *[-32600] * 6]


async def test_tools_run_through_the_editor(tmp_path: Path) -> None:
    store, workspace = tmp_path / "store", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("on disk\n")
    (tmp_path / "secret.txt").write_text("not yours\n")
    a_py, new_txt = str(workspace / "a.py"), str(workspace / "new.txt")
    outside = str(tmp_path / "secret.txt")
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "rounds": [
                    call_round("read_file", "r1", path="a.py"),
                    call_round("write_file", "w1", path="new.txt", content="allowed\n"),
                    call_round("write_file", "w2", path="a.py", content="clobbered\n"),
                    call_round("run_command", "t1", command="echo from-terminal"),
                    call_round("run_command", "t2", command="echo again"),
                    call_round("read_file", "r2", path="../secret.txt"),
                    call_round("write_file", "w3", path=outside, content="mine\n"),
                    {"text": "done"},
                ]
            }
        )
    )
    editor = ToolEditor({a_py: "unsaved buffer\n"}, ["allow_once", "reject_once", "allow_always"])
    capabilities = ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
    )
    async with acp_agent(tmp_path, store, "--script", str(script), editor=editor) as (conn, _):
        await initialize(conn, capabilities)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("work")])
        assert answer.stop_reason == "end_turn"
        updates = editor.take()
        starts = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallStart)}
        progress: dict[str, list[ToolCallProgress]] = {}
        for u in updates:
            if isinstance(u, ToolCallProgress):
                progress.setdefault(u.tool_call_id, []).append(u)
        final = {call_id: ups[-1] for call_id, ups in progress.items()}

        # kinds and titles an editor shows
        assert {k: (s.kind, s.title) for k, s in starts.items()} == {
            "r1": ("read", "Read a.py"),
            "w1": ("edit", "Write new.txt"),
            "w2": ("edit", "Write a.py"),
            "t1": ("execute", "Run `echo from-terminal`"),
            "t2": ("execute", "Run `echo again`"),
            "r2": ("read", "Read ../secret.txt"),
            "w3": ("edit", f"Write {outside}"),
        }
        # the read went to the editor, which answered its unsaved buffer (shown as code)
        assert final["r1"].status == "completed"
        assert tool_text(final["r1"]) == "```python\n1\tunsaved buffer\n```"
        assert a_py in editor.reads

        # permission asked for w1, w2 and t1 only: t2 was allowed always, w3 is outside
        assert [a.tool_call_id for a in editor.asked] == ["w1", "w2", "t1"]
        asked_w2 = editor.asked[1]
        assert asked_w2.kind == "edit" and asked_w2.locations
        assert asked_w2.locations[0].path == a_py
        assert asked_w2.content is not None
        diff = asked_w2.content[0]
        assert isinstance(diff, FileEditToolCallContent)
        assert (diff.old_text, diff.new_text) == ("unsaved buffer\n", "clobbered\n")

        # allowed: written, the diff stays shown; rejected: disk untouched, the model told
        assert Path(new_txt).read_text() == "allowed\n"
        assert final["w1"].status == "completed"
        assert [type(c) for c in final["w1"].content or []] == [FileEditToolCallContent]
        assert (workspace / "a.py").read_text() == "on disk\n"
        assert final["w2"].status == "failed"
        assert "not approved: the user rejected it" in tool_text(final["w2"])

        # commands: a terminal in the editor, shown in the tool call, always released
        assert [(c.command, c.args, c.cwd) for c in editor.created] == [
            ("sh", ["-c", "echo from-terminal"], str(workspace)),
            ("sh", ["-c", "echo again"], str(workspace)),
        ]
        assert editor.released == ["term-1", "term-2"]
        running = progress["t1"][0]
        assert running.status == "in_progress"
        assert running.content == [TerminalToolCallContent(type="terminal", terminal_id="term-1")]
        assert final["t1"].status == "completed" and final["t1"].content is None

        # outside the roots: refused without asking, nothing read or written
        for call_id in ("r2", "w3"):
            assert final[call_id].status == "failed"
            assert "outside the session's roots" in tool_text(final[call_id])
        assert outside not in editor.reads
        assert Path(outside).read_text() == "not yours\n"
        assert texts(updates, AgentMessageChunk) == "done"

        # what the model saw is history: the buffer, the command's output, the rejection
        await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        replayed = {
            u.tool_call_id: tool_text(u) for u in editor.take() if isinstance(u, ToolCallProgress)
        }
    assert replayed["r1"] == "```python\n1\tunsaved buffer\n```"
    assert replayed["t1"] == "```\nfrom-terminal\n\n[exit code 0]\n```"  # its output, fenced
    assert "not approved" in replayed["w2"]


# Small enough that the old tool results below are masked (the newest 2,000 tokens kept).
MASKING = {"assembly": {"masking": {"protectTokens": 2000, "batchTokens": 1000}}}
SUMMARY = "Goal: read the modules. Progress: m0-m7 read. Next Steps: none."


async def command(conn: ClientSideConnection, editor: Editor, sid: str, text: str) -> str:
    """A slash command's answer: one markdown message, ``end_turn``, nothing else sent."""
    answer = await conn.prompt(session_id=sid, prompt=[text_block(text)])
    assert answer.stop_reason == "end_turn"
    updates = editor.take()
    assert [type(u) for u in updates] == [AgentMessageChunk], updates
    return texts(updates, AgentMessageChunk)


async def test_commands_usage_and_extension_methods(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("print('pinned')\n")
    profile, script = tmp_path / "profile.json", tmp_path / "script.json"
    profile.write_text(json.dumps(MASKING))
    script.write_text(json.dumps({"rounds": [{"text": "hello"}, {"text": SUMMARY}]}))
    args = ("--profile", str(profile), "--script", str(script))

    async with acp_agent(tmp_path, tmp_path / "store", *args) as (conn, editor):
        await initialize(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id
        # the commands are advertised once the session exists
        await asyncio.wait_for(editor.commands_arrived.wait(), 30)
        advertised = editor.commands[sid].available_commands
        assert [c.name for c in advertised] == ["context", "compact", "pin", "snapshot", "rewind"]
        pin = next(c for c in advertised if c.name == "pin")
        assert pin.input is not None and pin.input.root.hint

        # serve's protocol, as extension methods: same results, same errors
        pong = await conn.ext_method("context-sidecar/server/ping", {})
        assert "time" in pong
        appended = await conn.ext_method(
            "context-sidecar/session/append", {"sessionId": sid, "entries": tool_turns(8)}
        )
        assert appended["headSeq"] == 32
        assembled = await conn.ext_method(
            "context-sidecar/context/assemble",
            {
                "sessionId": sid,
                "userTurn": [{"type": "text", "text": "next"}],
                "profile": MASKING["assembly"],
            },
        )
        assert assembled["messages"] and assembled["messages"][-1]["role"] == "user"
        masked = [i for i in assembled["ledger"] if i["visibility"] == "masked"]
        assert masked and assembled["dashboard"]["masking"]["maskedResults"] == len(masked)
        with pytest.raises(RequestError) as bad:
            await conn.ext_method("context-sidecar/context/assemble", {"sessionId": sid})
        assert bad.value.code == -32602
        assert (bad.value.data or {})["code"] == "params.invalid"
        with pytest.raises(RequestError) as unknown:
            await conn.ext_method("context-sidecar/no/such", {})
        assert unknown.value.code == -32601
        with pytest.raises(RequestError) as other:
            await conn.ext_method("someone-else/ping", {})
        assert other.value.code == -32601

        # a prompt: usage_update after the model call (used / window / cost)
        answer = await conn.prompt(session_id=sid, prompt=[text_block("hi")])
        assert answer.stop_reason == "end_turn"
        updates = editor.take()
        assert texts(updates, AgentMessageChunk) == "hello"
        assert isinstance(updates[-1], UsageUpdate)
        usage = updates[-1]
        assert 0 < usage.used <= usage.size
        assert usage.cost is not None and usage.cost.currency == "USD" and usage.cost.amount > 0

        # /context: the dashboard as markdown, no model call
        shown = await command(conn, editor, sid, "/context")
        assert "| transcript |" in shown and "| userTurn |" in shown
        # the tools a prompt offers are what /context shows and prices (issue 19: it said 0)
        tools_row = next(line for line in shown.splitlines() if line.startswith("| tools |"))
        assert int(tools_row.split("|")[2].replace(",", "")) > 200, tools_row
        assert "**Cache** (against the previous request): read " in shown
        assert "**Masking**: " in shown and "tool result(s) masked" in shown
        assert "`masked` transcript seq" in shown
        assert masked[0]["itemId"] in shown

        # /pin: a file inside the workspace; refused outside it
        assert "**Pinned** `a.py`" in await command(conn, editor, sid, "/pin a.py")
        outside = await command(conn, editor, sid, f"/pin {tmp_path / 'script.json'}")
        assert outside.startswith("Not pinned:")
        # a NUL byte or an absurd path: said, never a -32603 with a traceback in the log
        nul = await command(conn, editor, sid, "/pin a\x00b")
        assert nul.startswith("Not pinned:") and "NUL byte" in nul
        long = await command(conn, editor, sid, "/pin " + "x" * 100_000)
        assert long.startswith("Not pinned:") and "characters long" in long
        pinned = await command(conn, editor, sid, "/context")
        assert "| pinned |" in pinned

        # /snapshot: stored, its id and a paragraph against the previous snapshot
        first = await command(conn, editor, sid, "/snapshot")
        assert first.startswith("**Snapshot** `") and "Against `" in first
        second = await command(conn, editor, sid, "/snapshot")
        snapshot_id = second.split("`")[1]
        got = await conn.ext_method("context-sidecar/snapshot/get", {"snapshotId": snapshot_id})
        assert got["sessionId"] == sid

        # /compact: the model's summary (the script's next round) stored as a compaction
        compacted = await command(conn, editor, sid, "/compact")
        assert compacted.startswith("**Compacted** history through seq")
        assert SUMMARY[:20] in compacted
        read = await conn.ext_method("context-sidecar/session/read", {"sessionId": sid})
        compactions = [e for e in read["entries"] if e["kind"] == "compaction"]
        assert [c["summary"] for c in compactions] == [SUMMARY]
        # unknown /words are the model's (the script has run out: its fallback answer)
        answer = await conn.prompt(session_id=sid, prompt=[text_block("/nonsense")])
        assert texts(editor.take(), AgentMessageChunk) == "(end of script)"

    # session/load advertises the commands too
    async with acp_agent(tmp_path, tmp_path / "store", log="acp-2.log") as (conn, editor):
        await initialize(conn)
        await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        await asyncio.wait_for(editor.commands_arrived.wait(), 30)
        assert sid in editor.commands


async def test_mcp_stdio_server_tools_are_offered_and_called(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    pid_file = tmp_path / "calc.pid"
    script = tmp_path / "script.json"
    rounds = [
        call_round("calc__add", "m1", a=19, b=23),
        call_round("calc__peek", "m0"),
        call_round("calc__crash", "m2"),
        call_round("calc__add", "m3", a=1, b=1),
        {"text": "the sum is 42"},
    ]
    script.write_text(json.dumps({"rounds": rounds}))
    calc = McpServerStdio(
        name="calc", command=sys.executable, args=[str(MCP_SERVER), str(pid_file)], env=[]
    )
    editor = ToolEditor({}, ["allow_always", "allow_once"])
    args = ("--script", str(script))
    async with acp_agent(tmp_path, tmp_path / "store", *args, editor=editor) as (conn, _):
        await initialize(conn)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[calc])).session_id
        pid = int(pid_file.read_text())
        assert is_running(pid)
        answer = await conn.prompt(session_id=sid, prompt=[text_block("add 19 and 23")])
        assert answer.stop_reason == "end_turn"
        updates = editor.take()
        starts = [u for u in updates if isinstance(u, ToolCallStart)]
        assert [(s.tool_call_id, s.kind, s.title, s.raw_input) for s in starts] == [
            ("m1", "other", "calc__add", {"a": 19, "b": 23}),
            ("m0", "other", "calc__peek", {}),
            ("m2", "other", "calc__crash", {}),
            ("m3", "other", "calc__add", {"a": 1, "b": 1}),
        ]
        final = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallProgress)}
        assert (final["m1"].status, tool_text(final["m1"])) == ("completed", "42")
        assert tool_text(final["m0"]) == "nothing changed"
        # asked as the default mode says: add (allowed always, so not again for m3) and
        # crash; peek is read-only (its server says so) and is not asked about
        assert [(a.tool_call_id, a.title) for a in editor.asked] == [
            ("m1", "calc: add"),
            ("m2", "calc: crash"),
        ]
        # a server that dies: its calls fail with a reason the model reads; the run goes on
        for call_id in ("m2", "m3"):
            assert final[call_id].status == "failed"
            assert tool_text(final[call_id]) == "MCP server 'calc': MCPError: Connection closed"
        assert texts(updates, AgentMessageChunk) == "the sum is 42"  # no diagnostic either

        # offered to the model with the server's schema; the result it read is the sum
        runs = await conn.ext_method("context-sidecar/run/list", {"sessionId": sid})
        frozen = await conn.ext_method(
            "context-sidecar/input/get", {"inputId": runs["runs"][0]["inputId"]}
        )
        tools = {t["name"]: t for t in frozen["tools"]}
        assert set(tools) == {
            "read_file",
            "list_dir",
            "glob",
            "grep",
            "write_file",
            "edit_file",
            "run_command",
            "recall",
            "update_plan",
            "calc__add",
            "calc__peek",
            "calc__crash",
            "calc__huge",
        }
        assert tools["calc__add"]["description"] == "Add two integers."
        assert set(tools["calc__add"]["parameters"]["properties"]) == {"a", "b"}
        read = await conn.ext_method("context-sidecar/session/read", {"sessionId": sid})
        results = [
            part
            for entry in read["entries"]
            if entry["kind"] == "message"
            for part in entry["content"]
            if part["type"] == "toolResult"
        ]
        assert (results[0]["callId"], results[0]["content"][0]["text"]) == ("m1", "42")
    assert not is_running(pid)  # closed with the agent


async def test_mcp_server_that_fails_is_a_diagnostic_not_a_dead_session(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": [{"text": "still here"}]}))
    ghost = McpServerStdio(name="ghost", command=str(tmp_path / "no-such-server"), args=[], env=[])
    crashing = McpServerStdio(
        name="crashing", command=sys.executable, args=["-c", "raise SystemExit(3)"], env=[]
    )
    silent = McpServerStdio(  # reads its stdin, never answers: the handshake times out
        name="silent", command=sys.executable, args=["-c", "import sys; sys.stdin.read()"], env=[]
    )
    remote = HttpMcpServer(type="http", name="remote", url="http://127.0.0.1:9/mcp", headers=[])
    servers: list[Any] = [ghost, crashing, silent, remote]
    async with acp_agent(tmp_path, tmp_path / "store", "--script", str(script)) as (conn, editor):
        await initialize(conn)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=servers)).session_id
        await asyncio.wait_for(editor.chunk_arrived.wait(), 30)
        note = texts(editor.take(), AgentMessageChunk)
        assert "MCP server 'ghost' is not connected: cannot start it: No such file" in note
        assert "no-such-server" in note
        assert "MCP server 'crashing' is not connected" in note
        assert "MCP server 'silent' is not connected: no answer within 10 s" in note
        assert "MCP server 'remote' is not connected: http servers are not supported" in note
        answer = await conn.prompt(session_id=sid, prompt=[text_block("hello?")])
        assert answer.stop_reason == "end_turn"
        assert texts(editor.take(), AgentMessageChunk) == "still here"
    log = (tmp_path / "acp.log").read_text()
    assert "MCP server 'ghost' is not connected" in log
