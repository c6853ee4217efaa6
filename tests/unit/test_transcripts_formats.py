"""Small logs of each of the four formats, written here, read into transcripts: what each
format's odd corners become (a response split over lines, a count emitted twice, cached input
inside the input, compactions and the view after them, branches, sub-agents)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from protocol.entries import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from sidecar.transcripts.read import read_transcript

DATA = Path(__file__).resolve().parents[1] / "data" / "transcripts"


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --- Claude Code -----------------------------------------------------------------------------


def cc(kind: str, uuid: str, parent: str | None, ts: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s-1",
        "cwd": "/w",
        "isSidechain": False,
        "timestamp": f"2025-09-03T00:{ts}Z",
        **extra,
    }


def usage(inp: int, read: int, w5: int, w1: int, out: int) -> dict[str, Any]:
    return {
        "input_tokens": inp,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": w5 + w1,
        "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1},
        "output_tokens": out,
    }


def reply(
    uuid: str, parent: str, ts: str, req: str, block: dict[str, Any], out: int, **kw: Any
) -> dict[str, Any]:
    message = {
        "id": f"msg_{req}",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [block],
        "usage": usage(3, 900, 40, 60, out),
    }
    return cc("assistant", uuid, parent, ts, requestId=req, message=message, **kw)


def claude_log(tmp_path: Path) -> Path:
    rows = [
        {"type": "summary", "summary": "a title", "leafUuid": "x"},
        cc("user", "u1", None, "00:00.000", message={"role": "user", "content": "fix the bug"}),
        reply(
            "a1",
            "u1",
            "00:02.000",
            "r1",
            {"type": "thinking", "thinking": "", "signature": "sig1"},
            2,
        ),
        reply("a2", "a1", "00:02.500", "r1", {"type": "text", "text": "Reading it."}, 9),
        reply(
            "a3",
            "a2",
            "00:03.000",
            "r1",
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.py"}},
            57,
        ),
        cc(
            "user",
            "u2",
            "a3",
            "00:03.500",
            message={
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "print(1)"}],
            },
        ),
        # a sub-agent's thread, interleaved
        cc(
            "user",
            "s1",
            None,
            "00:04.000",
            isSidechain=True,
            message={"role": "user", "content": "look around"},
        ),
        reply(
            "s2", "s1", "00:05.000", "rs", {"type": "text", "text": "Done."}, 4, isSidechain=True
        ),
        reply("a4", "u2", "00:06.000", "r2", {"type": "text", "text": "Fixed."}, 3),
        cc(
            "system",
            "b1",
            None,
            "10:00.000",
            subtype="compact_boundary",
            compactMetadata={"trigger": "auto", "preTokens": 150000},
        ),
        cc(
            "user",
            "c1",
            "b1",
            "10:00.100",
            isCompactSummary=True,
            message={"role": "user", "content": "Summary: the bug in a.py was fixed."},
        ),
        cc(
            "user",
            "u3",
            "c1",
            "11:00.000",
            message={"role": "user", "content": [{"type": "text", "text": "thanks, now the docs"}]},
        ),
        cc(
            "assistant",
            "e1",
            "u3",
            "11:00.500",
            isApiErrorMessage=True,
            message={
                "role": "assistant",
                "model": "<synthetic>",
                "content": [{"type": "text", "text": "API Error"}],
                "usage": usage(0, 0, 0, 0, 0),
            },
        ),
        reply("a5", "u3", "11:02.000", "r3", {"type": "text", "text": "On it."}, 5),
    ]
    return write_jsonl(tmp_path / "claude.jsonl", rows)


def test_claude_code_a_response_over_three_lines_is_one_message_and_one_request(
    tmp_path: Path,
) -> None:
    t = read_transcript(claude_log(tmp_path))
    assert t.format == "claude-code" and t.session_id == "s-1" and t.cwd == "/w"
    assert len(t.requests) == 3
    first = t.requests[0]
    assert first.usage.output == 57  # the largest of the repeated counts, not their sum
    assert (first.usage.input, first.usage.cache_read) == (3, 900)
    assert (first.usage.cache_write_5m, first.usage.cache_write_1h) == (40, 60)
    assert first.thinking_logged and first.context_end == 1
    response = t.messages[1]
    assert [p.type for p in response.content] == ["reasoning", "text", "toolCall"]
    assert (
        isinstance(response.content[0], ReasoningPart) and response.content[0].signature == "sig1"
    )
    assert first.output_text_tokens > 0


def test_claude_code_compaction_and_the_view_after_it(tmp_path: Path) -> None:
    t = read_transcript(claude_log(tmp_path))
    assert len(t.compactions) == 1
    c = t.compactions[0]
    assert c.message_index == 4 and c.tokens_before == 150000
    assert c.summary == "Summary: the bug in a.py was fixed."
    assert all("Summary:" not in str(m.content) for m in t.messages)  # the summary is no message
    before, after = t.requests[1], t.requests[2]
    assert before.view_start == 0 and before.summary is None
    assert after.view_start == 4 and after.summary == c.summary and after.context_end == 5
    assert any("API error" in w for w in t.warnings)


def test_claude_code_a_sidechain_is_a_sub_agent_of_its_own(tmp_path: Path) -> None:
    t = read_transcript(claude_log(tmp_path))
    assert len(t.subagents) == 1
    sub = t.subagents[0]
    assert [m.role for m in sub.messages] == ["user", "assistant"]
    assert len(sub.requests) == 1 and sub.requests[0].context_end == 1
    assert all(m.content[0] != sub.messages[0].content[0] for m in t.messages)


def test_claude_code_sub_agent_files_beside_the_session_are_read(tmp_path: Path) -> None:
    log = claude_log(tmp_path)
    folder = tmp_path / "claude" / "subagents"
    folder.mkdir(parents=True)
    write_jsonl(
        folder / "agent-1.jsonl",
        [
            cc(
                "user",
                "x1",
                None,
                "20:00.000",
                isSidechain=True,
                message={"role": "user", "content": "search"},
            ),
            reply(
                "x2",
                "x1",
                "20:01.000",
                "rx",
                {"type": "text", "text": "Found."},
                2,
                isSidechain=True,
            ),
        ],
    )
    t = read_transcript(log)
    assert len(t.subagents) == 2 and len(t.subagents[1].requests) == 1


# --- pi --------------------------------------------------------------------------------------


def pi_usage(inp: int, out: int, read: int, write: int, cost: float) -> dict[str, Any]:
    return {
        "input": inp,
        "output": out,
        "cacheRead": read,
        "cacheWrite": write,
        "cost": {"total": cost},
    }


def pi_msg(ts: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "message", "timestamp": f"2025-12-08T22:{ts}Z", "message": message, **extra}


def pi_assistant(content: list[dict[str, Any]], u: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "provider": "anthropic",
        "model": "claude-opus-4-5",
        "usage": u,
        "stopReason": "toolUse",
    }


def test_pi_linear_file_with_a_compaction(tmp_path: Path) -> None:
    rows = [
        {
            "type": "session",
            "id": "p-1",
            "timestamp": "2025-12-08T22:00:00.000Z",
            "cwd": "/repo",
            "provider": "anthropic",
            "modelId": "claude-opus-4-5",
        },
        pi_msg("00:01.000", {"role": "user", "content": [{"type": "text", "text": "one"}]}),
        pi_msg(
            "00:02.000",
            pi_assistant(
                [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "x"}}],
                pi_usage(10, 5, 0, 100, 0.01),
            ),
        ),
        pi_msg(
            "00:03.000",
            {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "read",
                "content": [{"type": "text", "text": "x!"}],
                "isError": False,
            },
        ),
        pi_msg(
            "00:04.000",
            pi_assistant([{"type": "text", "text": "ok"}], pi_usage(1, 2, 100, 20, 0.02)),
        ),
        pi_msg("00:05.000", {"role": "user", "content": [{"type": "text", "text": "two"}]}),
        pi_msg("00:06.000", pi_assistant([], pi_usage(0, 0, 0, 0, 0))),  # aborted before output
        {
            "type": "compaction",
            "timestamp": "2025-12-08T22:07:00.000Z",
            "summary": "S",
            "firstKeptEntryIndex": 5,
            "tokensBefore": 999,
        },
        pi_msg(
            "08:00.000", {"role": "bashExecution", "command": "ls", "output": "a b", "exitCode": 0}
        ),
        pi_msg(
            "08:01.000",
            pi_assistant([{"type": "text", "text": "three"}], pi_usage(50, 3, 0, 0, 0.03)),
        ),
    ]
    t = read_transcript(write_jsonl(tmp_path / "pi.jsonl", rows))
    assert t.format == "pi" and t.session_id == "p-1" and t.cwd == "/repo"
    assert len(t.requests) == 4  # the aborted one too: it was a request
    assert t.requests[2].response is None and t.requests[2].context_end == 5
    assert [m.role for m in t.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
    ]
    assert isinstance(t.messages[2].content[0], ToolResultPart)
    c = t.compactions[0]
    assert (c.message_index, c.first_kept, c.tokens_before) == (5, 4, 999)
    last = t.requests[3]
    assert (last.view_start, last.summary, last.context_end) == (4, "S", 6)
    bash = t.messages[5].content[0]
    assert isinstance(bash, TextPart) and "ls" in bash.text and "a b" in bash.text
    assert sum(r.usage.cost or 0 for r in t.requests) == pytest.approx(0.06)
    assert any("empty message" in w for w in t.warnings)


def test_pi_tree_file_reads_the_branch_of_the_last_entry(tmp_path: Path) -> None:
    rows = [
        {
            "type": "session",
            "version": 3,
            "id": "p-2",
            "timestamp": "2025-12-08T22:00:00.000Z",
            "cwd": "/r",
        },
        pi_msg("00:01.000", {"role": "user", "content": "start"}, id="e1", parentId=None),
        pi_msg(
            "00:02.000",
            pi_assistant([{"type": "text", "text": "abandoned"}], pi_usage(1, 1, 0, 0, 0.1)),
            id="e2",
            parentId="e1",
        ),
        pi_msg(
            "00:03.000",
            pi_assistant([{"type": "text", "text": "kept"}], pi_usage(2, 2, 0, 0, 0.2)),
            id="e3",
            parentId="e1",
        ),
        {
            "type": "compaction",
            "id": "e4",
            "parentId": "e3",
            "timestamp": "2025-12-08T22:04:00.000Z",
            "summary": "S2",
            "firstKeptEntryId": "e3",
            "tokensBefore": 5,
        },
        pi_msg("00:05.000", {"role": "user", "content": "more"}, id="e5", parentId="e4"),
    ]
    t = read_transcript(write_jsonl(tmp_path / "tree.jsonl", rows))
    texts = [p.text for m in t.messages for p in m.content if isinstance(p, TextPart)]
    assert texts == ["start", "kept", "more"]
    assert len(t.requests) == 1 and t.requests[0].usage.cost == 0.2
    assert t.compactions[0].first_kept == 1
    assert any("other branches" in w for w in t.warnings)


# --- Codex -----------------------------------------------------------------------------------


def cx(ts: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": f"2025-11-02T10:{ts}Z", "type": kind, "payload": payload}


def count(last: dict[str, int], total: dict[str, int]) -> dict[str, Any]:
    return {"type": "token_count", "info": {"last_token_usage": last, "total_token_usage": total}}


def tokens(inp: int, cached: int, out: int, reasoning: int) -> dict[str, int]:
    return {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "output_tokens": out,
        "reasoning_output_tokens": reasoning,
    }


def test_codex_counts_once_cached_inside_input_and_compaction(tmp_path: Path) -> None:
    u1, u2 = tokens(5000, 0, 80, 50), tokens(5400, 4900, 30, 0)
    t1 = u1
    t2 = {k: u1[k] + u2[k] for k in u1}
    rows = [
        cx(
            "00:00.000",
            "session_meta",
            {"id": "c-1", "cwd": "/c", "base_instructions": "be brief", "model_provider": "openai"},
        ),
        cx("00:00.100", "turn_context", {"model": "gpt-5-codex"}),
        cx(
            "00:01.000",
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        ),
        cx("00:01.001", "event_msg", {"type": "user_message", "message": "go"}),
        cx(
            "00:02.000",
            "response_item",
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "plan"}],
                "encrypted_content": "enc",
            },
        ),
        cx(
            "00:02.100",
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command":["ls"]}',
                "call_id": "k1",
            },
        ),
        cx("00:02.200", "event_msg", count(u1, t1)),
        cx("00:02.201", "event_msg", count(u1, t1)),  # the same count again
        cx(
            "00:03.000",
            "response_item",
            {"type": "function_call_output", "call_id": "k1", "output": "a\nb"},
        ),
        cx(
            "00:04.000",
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "two files"}],
            },
        ),
        cx("00:04.100", "event_msg", count(u2, t2)),
        cx("30:00.000", "compacted", {"message": "they listed files"}),
        cx(
            "31:00.000",
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "again"}],
            },
        ),
    ]
    t = read_transcript(write_jsonl(tmp_path / "rollout-x.jsonl", rows))
    assert t.format == "codex" and t.system_prompt == "be brief" and t.session_id == "c-1"
    assert len(t.requests) == 2
    a, b = t.requests
    assert (a.usage.input, a.usage.cache_read, a.usage.output, a.usage.reasoning) == (
        5000,
        0,
        80,
        50,
    )
    assert (b.usage.input, b.usage.cache_read) == (500, 4900)
    assert b.usage.cache_write == 0 and b.usage.prompt_tokens == 5400
    assert a.thinking_logged and not b.thinking_logged and a.model == "gpt-5-codex"
    assert a.context_end == 1 and b.context_end == 3
    reasoning = t.messages[1].content[0]
    assert (
        isinstance(reasoning, ReasoningPart)
        and reasoning.data == "enc"
        and reasoning.text == "plan"
    )
    assert t.compactions[0].message_index == 4 and t.compactions[0].summary == "they listed files"


def test_codex_the_shipped_sample_against_a_plain_scan() -> None:
    path = DATA / "codex-rollout.jsonl"
    raw = [json.loads(line) for line in path.read_text().splitlines()]
    totals = {
        json.dumps(o["payload"]["info"]["total_token_usage"])
        for o in raw
        if o["type"] == "event_msg"
        and o["payload"]["type"] == "token_count"
        and o["payload"]["info"]
    }
    calls = [
        o for o in raw if o["type"] == "response_item" and o["payload"]["type"].endswith("call")
    ]
    t = read_transcript(path)
    assert len(t.requests) == len(totals)
    assert sum(isinstance(p, ToolCallPart) for m in t.messages for p in m.content) == len(calls)
    assert len(t.compactions) == sum(o["type"] == "compacted" for o in raw)


# --- OpenCode --------------------------------------------------------------------------------


def test_opencode_each_step_is_a_request_and_a_summary_a_compaction() -> None:
    path = DATA / "opencode-export.json"
    doc = json.loads(path.read_text())
    steps = [p for m in doc["messages"] for p in m["parts"] if p["type"] == "step-finish"]
    tools = [p for m in doc["messages"] for p in m["parts"] if p["type"] == "tool"]
    t = read_transcript(path)
    assert t.format == "opencode" and t.session_id == doc["info"]["id"]
    assert len(t.requests) == len(steps)
    assert [r.usage.cache_read for r in t.requests] == [s["tokens"]["cache"]["read"] for s in steps]
    assert [r.usage.cost for r in t.requests] == [s["cost"] for s in steps]
    results = [p for m in t.messages for p in m.content if isinstance(p, ToolResultPart)]
    assert len(results) == len(tools)
    assert [p.is_error for p in results] == [s["state"]["status"] == "error" for s in tools]
    summaries = [m for m in doc["messages"] if m["info"].get("summary")]
    assert len(t.compactions) == len(summaries) == 1
    after = [r for r in t.requests if r.context_end > t.compactions[0].message_index]
    assert after and all(r.view_start == t.compactions[0].message_index for r in after)


def test_opencode_a_one_line_export_is_told_from_its_content(tmp_path: Path) -> None:
    doc = json.loads((DATA / "opencode-export.json").read_text())
    path = tmp_path / "one-line.json"
    path.write_text(json.dumps(doc))
    assert read_transcript(path).format == "opencode"
