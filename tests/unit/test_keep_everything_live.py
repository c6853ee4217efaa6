"""A live session's comparison with keep-everything-then-compact
(``sidecar/context/keep_everything_live.py``), against figures worked out by hand from
Anthropic's rules on a small sequence: a cold first call, a call that reads the previous
prefix, a pause past the 5-minute TTL that rewrites everything, and a compaction (its summary
call priced, then a summary plus the newest messages); the call as sent priced the same way.
A 1-hour TTL on the call's markers keeps the cache over the same pause.  And the transcript
read from a real store, page by page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from protocol.entries import MessageInput
from protocol.runs import KeepEverythingCall
from sidecar.context.cache_sim import block_tokens
from sidecar.context.keep_everything import SUMMARY_ASK, filler
from sidecar.context.keep_everything_live import KeepEverythingMeter, compare_call
from sidecar.context.limits import SAFETY_MARGIN, prices_of

MODEL = "claude-sonnet-4-5"
PRICES = prices_of(MODEL)
assert PRICES is not None
M = 1_000_000
SUMMARY = 50
OUTPUT = 40


def _text(words: int, tag: str) -> dict[str, Any]:
    return {"type": "text", "text": " ".join(f"{tag}{i % 97}" for i in range(words))}


SYSTEM = _text(700, "sys")
#: u0, a0, u1, a1, u2, a2, u3: one text block each
BLOCKS = [_text(120 + 10 * i, "ua"[i % 2] + str(i)) for i in range(7)]
ROLES = ["user", "assistant"] * 3 + ["user"]


def _tok(block: dict[str, Any]) -> int:
    return block_tokens(block)[1]


S = _tok(SYSTEM)
m = [_tok(b) for b in BLOCKS]
ASK = _tok({"type": "text", "text": SUMMARY_ASK})


def _message(i: int) -> MessageInput:
    return MessageInput.model_validate(
        {"kind": "message", "role": ROLES[i], "content": [BLOCKS[i]]}
    )


def _limits(budget: int) -> dict[str, Any]:
    """``modelLimits`` whose budget (window less output reserve and margin) is ``budget``."""
    return {
        "model": MODEL,
        "window": budget + 100 + SAFETY_MARGIN,
        "maxOutput": 100,
        "source": "profile",
    }


def _own(i: int, ttl: str | None = None) -> dict[str, Any]:
    """The call as sent: the system prompt and the newest user message, both marked."""
    control = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    return {
        "model": MODEL,
        "max_tokens": 100,
        "system": [{**SYSTEM, "cache_control": control}],
        "messages": [{"role": "user", "content": [{**BLOCKS[i], "cache_control": control}]}],
    }


def _cost(
    uncached: int = 0, write: int = 0, read: int = 0, output: int = OUTPUT, write_1h: int = 0
) -> float:
    assert PRICES is not None
    return (
        uncached * PRICES.input
        + write * PRICES.cache_write_5m
        + write_1h * PRICES.cache_write_1h
        + read * PRICES.cache_read
        + output * PRICES.output
    ) / M


def _call(
    meter: KeepEverythingMeter, upto: int, own: dict[str, Any], at: float, budget: int
) -> KeepEverythingCall:
    while len(meter.lowered) < upto:
        meter.add(_message(len(meter.lowered)))
    out = meter.price(own, _limits(budget), at=at, output_tokens=OUTPUT)
    assert out is not None
    return KeepEverythingCall.model_validate(out)


def test_cold_read_pause_past_the_ttl_and_a_compaction_as_worked_out_by_hand() -> None:
    assert S >= 1_024  # every marker's prefix is cacheable
    meter = KeepEverythingMeter.for_provider("anthropic")
    meter.summary_tokens, meter.keep_tokens = SUMMARY, 1
    budget = S + sum(m[:5]) + 10  # five messages fit, seven do not

    # A, t=0: nothing cached; system and u0 written
    a = _call(meter, 1, _own(0), 0.0, budget)
    assert (a.tokens, a.compacted) == (S + m[0], False)
    assert a.cost == pytest.approx(_cost(write=S + m[0]))
    assert a.own_cost == pytest.approx(_cost(write=S + m[0]))

    # B, t=100: reads the prefix through u0, writes a0 and u1; as sent: reads the system
    b = _call(meter, 3, _own(2), 100.0, budget)
    assert b.tokens == S + m[0] + m[1] + m[2]
    assert b.cost == pytest.approx(_cost(read=S + m[0], write=m[1] + m[2]))
    assert b.own_cost == pytest.approx(_cost(read=S, write=m[2]))

    # C, t=500: 400 s after the last use, past the 5-minute TTL: everything written again
    c = _call(meter, 5, _own(4), 500.0, budget)
    assert c.tokens == S + sum(m[:5])
    assert c.cost == pytest.approx(_cost(write=S + sum(m[:5])))
    assert c.own_cost == pytest.approx(_cost(write=S + m[4]))

    # D, t=550: seven messages over the budget: the summary call (everything so far and the
    # ask, merged into u3's message) reads C's prefix and writes the rest; then the summary
    # and u3 (the newest ~1 token, in one user message) after the system prompt, read
    d = _call(meter, 7, _own(6), 550.0, budget)
    summary = _tok({"type": "text", "text": filler(SUMMARY, 3)})  # seed: the call's index
    summary_call = _cost(read=S + sum(m[:5]), write=m[5] + m[6] + ASK, output=SUMMARY)
    assert d.compacted and d.tokens == S + summary + m[6]
    assert d.cost == pytest.approx(summary_call + _cost(read=S, write=summary + m[6]))
    assert d.own_cost == pytest.approx(_cost(read=S, write=m[6]))

    total = d.session
    assert (total.calls, total.compactions) == (4, 1)
    assert total.cost == pytest.approx(a.cost + b.cost + c.cost + d.cost)
    assert total.own_cost == pytest.approx(a.own_cost + b.own_cost + c.own_cost + d.own_cost)


def test_the_calls_one_hour_markers_keep_the_cache_over_the_same_pause() -> None:
    meter = KeepEverythingMeter.for_provider("anthropic")
    budget = 10 * (S + sum(m))
    _call(meter, 1, _own(0, "1h"), 0.0, budget)
    _call(meter, 3, _own(2, "1h"), 100.0, budget)
    c = _call(meter, 5, _own(4, "1h"), 500.0, budget)  # 400 s: alive for an hour
    prefix = S + m[0] + m[1] + m[2]
    assert c.cost == pytest.approx(_cost(read=prefix, write_1h=m[3] + m[4]))
    assert c.own_cost == pytest.approx(_cost(read=S, write_1h=m[4]))


def test_a_model_the_price_table_does_not_list_and_an_unsimulated_body_have_no_figure() -> None:
    meter = KeepEverythingMeter.for_provider("anthropic")
    meter.add(_message(0))
    unknown = {**_own(0), "model": "no-such-model"}
    assert meter.price(unknown, _limits(10_000), at=0.0, output_tokens=1) is None
    assert meter.totals.calls == 0
    kept, figure = compare_call(
        meter,
        None,  # type: ignore[arg-type]  # a body it does not simulate reads no store
        "s",
        "openai-responses",
        {},
        _limits(10_000),
        at=0.0,
        output_tokens=1,
    )
    assert kept is meter and figure is None


@pytest.mark.anyio
async def test_the_transcript_is_read_from_the_store_page_by_page(tmp_path: Path) -> None:
    from sidecar.context import keep_everything_live
    from sidecar.store import Store

    store = Store(tmp_path / "store")
    try:
        created = await store.sessions.create(
            title="t", workspace_roots=[], profile_id=None, meta=None
        )
        sid = created.session_id
        await store.sessions.append(sid, [_message(i) for i in range(5)])
        old = keep_everything_live._PAGE
        keep_everything_live._PAGE = 2  # three pages
        try:
            meter, figure = compare_call(
                None,
                store.sessions,
                sid,
                "anthropic-messages",
                _own(4),
                _limits(10**6),
                at=0.0,
                output_tokens=OUTPUT,
            )
        finally:
            keep_everything_live._PAGE = old
        assert meter is not None and figure is not None
        assert meter.seq == 5 and meter.sizes == m[:5]
        assert figure["tokens"] == S + sum(m[:5])
    finally:
        store.close()


def _chat(i: int, retention: str | None) -> dict[str, Any]:
    """An OpenAI Chat Completions call: the system prompt and the newest user message."""
    body: dict[str, Any] = {
        "model": "gpt-5",
        "prompt_cache_key": "s",
        "messages": [
            {"role": "system", "content": SYSTEM["text"]},
            {"role": "user", "content": BLOCKS[i]["text"]},
        ],
    }
    if retention is not None:
        body["prompt_cache_retention"] = retention
    return body


@pytest.mark.parametrize("retention", [None, "24h"])
def test_openai_reads_the_previous_prefix_in_steps_and_keeps_it_as_long_as_the_call_asks(
    retention: str | None,
) -> None:
    prices = prices_of("gpt-5")
    assert prices is not None
    meter = KeepEverythingMeter.for_provider("openai")
    limits = {**_limits(10**6), "model": "gpt-5"}
    for upto in (1, 3):
        while len(meter.lowered) < upto:
            meter.add(_message(len(meter.lowered)))
        first = meter.price(_chat(upto - 1, retention), limits, at=100.0 * upto, output_tokens=0)
    assert first is not None
    system = _tok({"role": "system", "content": [SYSTEM]})  # the reference's system message
    sizes = [_tok({"role": r, "content": [b]}) for r, b in zip(ROLES, BLOCKS, strict=True)]
    shared = system + sizes[0]  # call 1's units, read in 128-token steps past the minimum
    read = 1_024 + (shared - 1_024) // 128 * 128
    prompt = shared + sizes[1] + sizes[2]
    assert first["tokens"] == prompt
    assert first["cost"] == pytest.approx(
        (read * prices.cache_read + (prompt - read) * prices.input) / M
    )
    # 400 s later: gone from memory after 5 minutes idle, kept for a day with "24h"
    meter.add(_message(3))
    meter.add(_message(4))
    late = meter.price(_chat(4, retention), limits, at=700.0, output_tokens=0)
    assert late is not None
    kept = prompt + sizes[3] + sizes[4]
    again = 1_024 + (prompt - 1_024) // 128 * 128 if retention == "24h" else 0
    assert late["cost"] == pytest.approx(
        (again * prices.cache_read + (kept - again) * prices.input) / M
    )
