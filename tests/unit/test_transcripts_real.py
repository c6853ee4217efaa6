"""The five real sessions (``tests/data/transcripts/real``) read into transcripts, checked
against what a separate plain scan of each file counts: requests, usage, tool calls and
results, compactions, sub-agents."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from protocol.entries import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from sidecar.transcripts.model import Transcript
from sidecar.transcripts.read import read_transcript

REAL = Path(__file__).resolve().parents[1] / "data" / "transcripts" / "real"
PI = sorted((REAL / "pi-mono").glob("*.jsonl"))
CLAUDE = sorted((REAL / "claude-code-viewer").glob("*.jsonl"))


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_the_five_files_are_there() -> None:
    assert len(PI) == 2 and len(CLAUDE) == 3


def check_threading(t: Transcript) -> None:
    """Every tool result answers a call made before it; each request saw messages before
    its response; a view starts inside what the request saw."""
    called: set[str] = set()
    for message in t.messages:
        for part in message.content:
            if isinstance(part, ToolCallPart):
                assert message.role == "assistant"
                called.add(part.call_id)
            if isinstance(part, ToolResultPart):
                assert message.role == "user" and part.call_id in called
    assert len(t.times) == len(t.messages)
    for r in t.requests:
        assert 0 <= r.view_start <= r.context_end <= len(t.messages)
        if r.response is not None:
            assert r.response == r.context_end and t.messages[r.response].role == "assistant"
    assert [r.index for r in t.requests] == list(range(len(t.requests)))
    for sub in t.subagents:
        check_threading(sub)


# --- pi --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", PI, ids=lambda p: p.name)
def test_pi_requests_are_the_assistant_messages_with_their_usage(path: Path) -> None:
    raw = lines(path)
    assistants = [
        o["message"] for o in raw if o["type"] == "message" and o["message"]["role"] == "assistant"
    ]
    t = read_transcript(path)
    assert t.format == "pi" and t.session_id == raw[0]["id"] and t.cwd == raw[0]["cwd"]
    assert len(t.requests) == len(assistants)
    assert [r.usage.input for r in t.requests] == [a["usage"]["input"] for a in assistants]
    assert [r.usage.cache_read for r in t.requests] == [a["usage"]["cacheRead"] for a in assistants]
    assert [r.usage.cache_write_5m for r in t.requests] == [
        a["usage"]["cacheWrite"] for a in assistants
    ]
    assert [r.usage.output for r in t.requests] == [a["usage"]["output"] for a in assistants]
    assert sum(r.usage.cost or 0 for r in t.requests) == pytest.approx(
        sum(a["usage"]["cost"]["total"] for a in assistants)
    )
    assert [r.model for r in t.requests] == [a["model"] for a in assistants]
    stamps = [
        iso(o["timestamp"])
        for o in raw
        if o["type"] == "message" and o["message"]["role"] == "assistant"
    ]
    assert [r.at for r in t.requests] == pytest.approx(stamps)
    thinking = [any(b["type"] == "thinking" for b in a["content"]) for a in assistants]
    assert [r.thinking_logged for r in t.requests] == thinking
    check_threading(t)


@pytest.mark.parametrize("path", PI, ids=lambda p: p.name)
def test_pi_calls_results_and_user_turns_are_all_there(path: Path) -> None:
    raw = [o["message"] for o in lines(path) if o["type"] == "message"]
    t = read_transcript(path)
    parts = [p for m in t.messages for p in m.content]
    calls = [
        b["id"]
        for m in raw
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "toolCall"
    ]
    results = [m["toolCallId"] for m in raw if m["role"] == "toolResult"]
    assert [p.call_id for p in parts if isinstance(p, ToolCallPart)] == calls
    assert [p.call_id for p in parts if isinstance(p, ToolResultPart)] == results
    users = [m for m in raw if m["role"] in ("user", "bashExecution")]
    plain_users = [
        m for m in t.messages if m.role == "user" and not isinstance(m.content[0], ToolResultPart)
    ]
    assert len(plain_users) == len(users)
    assert sum(isinstance(p, ReasoningPart) for p in parts) == sum(
        b["type"] == "thinking" for m in raw if m["role"] == "assistant" for b in m["content"]
    )


def test_pi_compactions_and_the_view_of_every_later_request() -> None:
    path = REAL / "pi-mono" / "before-compaction.jsonl"
    raw = lines(path)
    cuts = [(i, o) for i, o in enumerate(raw) if o["type"] == "compaction"]
    t = read_transcript(path)
    assert len(t.compactions) == len(cuts) == 2
    for c, (_, line) in zip(t.compactions, cuts, strict=True):
        assert c.summary == line["summary"] and c.tokens_before == line["tokensBefore"]
        assert c.at == pytest.approx(iso(line["timestamp"]))
        # the first kept message is the one of the entry the compaction names
        kept = raw[line["firstKeptEntryIndex"]]["message"]
        assert c.first_kept is not None and c.first_kept < c.message_index
        first = t.messages[c.first_kept].content[0]
        assert isinstance(first, TextPart) and first.text == kept["content"][0]["text"]
    # each request sees the summary and the kept tail of the latest compaction before it
    for r in t.requests:
        latest = [c for c in t.compactions if c.message_index <= r.context_end]
        if latest:
            assert r.view_start == latest[-1].first_kept and r.summary == latest[-1].summary
        else:
            assert r.view_start == 0 and r.summary is None
    assert {r.view_start for r in t.requests} == {0, *(c.first_kept for c in t.compactions)}


# --- Claude Code -----------------------------------------------------------------------------


def claude_scan(path: Path) -> dict[str, Any]:
    """A plain scan: requestIds and their usage lines, per thread (main / sidechain)."""
    main: dict[str, list[dict[str, Any]]] = defaultdict(list)
    side: dict[str, list[dict[str, Any]]] = defaultdict(list)
    roots = 0
    results = 0
    for o in lines(path):
        if o.get("isSidechain") and o.get("parentUuid") is None:
            roots += 1
        if o["type"] == "assistant":
            (side if o["isSidechain"] else main)[o["requestId"]].append(o)
        if (
            o["type"] == "user"
            and not o["isSidechain"]
            and isinstance(o["message"]["content"], list)
        ):
            results += sum(b.get("type") == "tool_result" for b in o["message"]["content"])
    return {"main": main, "side": side, "roots": roots, "results": results}


@pytest.mark.parametrize("path", CLAUDE, ids=lambda p: p.name[:8])
def test_claude_code_one_request_per_request_id_with_its_usage_once(path: Path) -> None:
    scan = claude_scan(path)
    t = read_transcript(path)
    assert t.format == "claude-code"
    assert len(t.requests) == len(scan["main"])
    for r, group in zip(t.requests, scan["main"].values(), strict=True):
        usage = group[0]["message"]["usage"]
        assert r.usage.input == usage["input_tokens"]
        assert r.usage.cache_read == usage["cache_read_input_tokens"]
        assert r.usage.cache_write == usage["cache_creation_input_tokens"]
        assert r.usage.output == max(o["message"]["usage"]["output_tokens"] for o in group)
        assert r.model == group[0]["message"]["model"] and r.provider == "anthropic"
        assert r.at == pytest.approx(iso(group[-1]["timestamp"]))
        # one assistant message holds every block of the response
        blocks = [b for o in group for b in o["message"]["content"]]
        response = t.messages[r.context_end]
        calls = [p.call_id for p in response.content if isinstance(p, ToolCallPart)]
        assert calls == [b["id"] for b in blocks if b["type"] == "tool_use"]
    results = [p for m in t.messages for p in m.content if isinstance(p, ToolResultPart)]
    assert len(results) == scan["results"]
    check_threading(t)


@pytest.mark.parametrize("path", CLAUDE, ids=lambda p: p.name[:8])
def test_claude_code_sidechains_are_sub_agents_with_their_own_requests(path: Path) -> None:
    scan = claude_scan(path)
    t = read_transcript(path)
    assert len(t.subagents) == scan["roots"]
    assert sum(len(s.requests) for s in t.subagents) == len(scan["side"])
    side_usage = sum(
        g[0]["message"]["usage"]["cache_read_input_tokens"] for g in scan["side"].values()
    )
    assert sum(r.usage.cache_read for s in t.subagents for r in s.requests) == side_usage
    for sub in t.subagents:
        assert sub.messages[0].role == "user" and sub.requests


@pytest.mark.parametrize("path", [*PI, *CLAUDE], ids=lambda p: p.name[:12])
def test_the_system_size_is_the_first_request_less_its_messages(path: Path) -> None:
    t = read_transcript(path)
    first = next(r for r in t.requests if r.usage.prompt_tokens)
    assert t.system_tokens is not None and 0 < t.system_tokens < first.usage.prompt_tokens
