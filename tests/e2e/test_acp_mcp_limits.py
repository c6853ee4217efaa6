"""The session's MCP servers kept in bounds (issue 18, items 4 and 7): a huge result is cut
as a built-in tool's is, a line over the per-message cap is refused without being held, a
server printing junk on stdout costs a few log lines and still serves, and a token on a
server's command line or in its environment reaches neither the log nor the editor."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import AgentMessageChunk, EnvVariable, McpServerStdio, ToolCallProgress

from sidecar.acp.mcp_stderr import BURST_LINES, LINE_CHARS
from sidecar.tools.bounds import DEFAULT_BOUNDS, count_tokens
from tests.e2e.acp_kit import (
    MCP_SERVER,
    ToolEditor,
    acp_agent,
    call_round,
    initialize,
    texts,
    tool_text,
)

pytestmark = pytest.mark.anyio

TOKEN = "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
HEX = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


async def test_a_token_in_args_or_env_is_in_neither_the_log_nor_the_editor(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": [{"text": "still here"}]}))
    broken = McpServerStdio(
        name="broken",
        command=str(tmp_path / "no-such-mcp-server"),
        args=[
            "--token",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            f"--api-key={TOKEN}",
            "--verbose",
            HEX,
            "plain-arg",
        ],
        env=[EnvVariable(name="GITHUB_TOKEN", value="hunter2-env-value-xyz")],
    )
    async with acp_agent(tmp_path, tmp_path / "store", "-vv", "--script", str(script)) as (
        conn,
        editor,
    ):
        await initialize(conn)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[broken])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("hello?")])
        assert answer.stop_reason == "end_turn"
    log = (tmp_path / "acp.log").read_text()
    sent = json.dumps(editor.raw)
    assert "MCP server 'broken' is not connected" in log
    assert "MCP server 'broken' is not connected" in sent
    assert "no-such-mcp-server" in sent and "plain-arg" in sent  # still says what failed
    for secret in ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", TOKEN, HEX, "hunter2-env-value"):
        assert secret not in log, secret
        assert secret not in sent, secret


def _peak_rss_mb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(x for x in status.splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) // 1024


async def test_a_huge_mcp_result_is_bounded_and_an_oversized_one_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    rounds = [
        call_round("calc__huge", "h1", megabytes=2),  # ~4 MB on the wire (text + structured)
        call_round("calc__huge", "h2", megabytes=20),  # ~40 MB: over the 8 MiB per message
        call_round("calc__add", "h3", a=19, b=23),
        {"text": "still here"},
    ]
    script.write_text(json.dumps({"rounds": rounds}))
    calc = McpServerStdio(
        name="calc",
        command=sys.executable,
        args=[str(MCP_SERVER), str(tmp_path / "calc.pid")],
        env=[],
    )
    editor = ToolEditor({}, ["allow_once"])
    args = ("--script", str(script))
    async with acp_agent(tmp_path, tmp_path / "store", *args, editor=editor) as (conn, _):
        await initialize(conn)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[calc])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("look at it all")])
        assert answer.stop_reason == "end_turn"
        assert editor.process is not None
        peak_mb = _peak_rss_mb(editor.process.pid)
        updates = editor.take()
        final = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallProgress)}
        read = await conn.ext_method("context-sidecar/session/read", {"sessionId": sid})

    # the 2 MiB text: head and tail within the built-in tools' bound, saying what was cut
    shown = tool_text(final["h1"])
    assert final["h1"].status == "completed"
    assert count_tokens(shown) <= DEFAULT_BOUNDS.max_tokens
    assert shown.startswith("line 000000000 of a huge answer\n")
    assert "line 000065535 of a huge answer" in shown  # the last of 2 MiB / 32 bytes
    assert "characters cut from the middle; call calc__huge again asking for less" in shown
    assert "[the MCP result was cut: 2,097,152 characters" in shown
    # over the per-message cap: not read at all; the call fails saying so, the server lives
    refused = tool_text(final["h2"])
    assert final["h2"].status == "failed"
    assert "over the 8 MiB an MCP message may be here, and was not read" in refused
    assert "ask the tool for less" in refused
    assert (final["h3"].status, tool_text(final["h3"])) == ("completed", "42")
    assert texts(updates, AgentMessageChunk) == "still here"
    # what the run stored is what the editor was shown, never the whole answer
    stored = {
        part["callId"]: part["content"][0]["text"]
        for entry in read["entries"]
        if entry["kind"] == "message"
        for part in entry["content"]
        if part["type"] == "toolResult"
    }
    assert stored["h1"] == shown
    assert len(json.dumps(editor.raw)) < 1_000_000  # everything the editor was sent
    assert "Traceback" not in (tmp_path / "acp.log").read_text()
    assert peak_mb < 300, peak_mb  # 431 MB with no cap per message (680 MB before this)


async def _sum_through(tmp_path: Path, name: str, *server_args: str) -> str:
    """One prompt that adds 19 and 23 through the calc server ``name`` started with
    ``server_args``: the sum is the model's, no diagnostic; the agent's log (``-v``)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    rounds = [call_round(f"{name}__add", "s1", a=19, b=23), {"text": "the sum is 42"}]
    script.write_text(json.dumps({"rounds": rounds}))
    server = McpServerStdio(
        name=name,
        command=sys.executable,
        args=[str(MCP_SERVER), str(tmp_path / "calc.pid"), *server_args],
        env=[],
    )
    editor = ToolEditor({}, ["allow_once"])
    args = ("-v", "--script", str(script))
    async with acp_agent(tmp_path, tmp_path / "store", *args, editor=editor) as (conn, _):
        await initialize(conn)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[server])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("add 19 and 23")])
        assert answer.stop_reason == "end_turn"
        updates = editor.take()
        final = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallProgress)}
        assert (final["s1"].status, tool_text(final["s1"])) == ("completed", "42")
        assert texts(updates, AgentMessageChunk) == "the sum is 42"  # no diagnostic either
    return (tmp_path / "acp.log").read_text()


async def test_junk_on_an_mcp_servers_stdout_is_counted_not_logged_line_by_line(
    tmp_path: Path,
) -> None:
    log = await _sum_through(tmp_path, "chatty", "--junk", "10000")
    lines = log.splitlines()
    assert len(lines) < 50, len(lines)
    assert "Traceback" not in log
    first = [x for x in lines if "wrote a line to stdout that is not JSON-RPC" in x]
    assert len(first) == 1 and "'chatty'" in first[0]
    assert "warming up the abacus, step 0" in first[0]
    assert any("'chatty': 9999 more lines on stdout that are not JSON-RPC" in x for x in lines)


async def test_an_mcp_servers_stderr_is_logged_redacted_cut_and_not_a_flood(
    tmp_path: Path,
) -> None:
    """The server's stderr reaches the sidecar's log (not the raw terminal): its token
    masked, its terminal escapes gone, a 100,000-character line cut, 10,000 debug lines
    logged as a burst and a count; it still serves."""
    log = await _sum_through(tmp_path, "noisy", "--stderr", "10000")
    lines = log.splitlines()
    logged = [x for x in lines if "MCP server 'noisy' (stderr): " in x]
    assert len(logged) == BURST_LINES, len(logged)
    assert TOKEN not in log and "calc: config api_key=***" in logged[0]
    assert logged[1].endswith("(stderr): calc: red alert")  # no escape, no bell
    assert "\x1b" not in log and "\x07" not in log
    assert logged[2].endswith("… (cut)") and len(logged[2]) < LINE_CHARS + 200
    assert any(
        f"'noisy': {10_003 - BURST_LINES} more lines on stderr not logged" in x for x in lines
    )
    assert len(lines) < 60, len(lines)
