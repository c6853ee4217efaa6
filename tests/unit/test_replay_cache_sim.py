"""The replay's cache simulator (``sidecar/context/cache_sim.py``): entries expire their TTL
after they were last written or read, from the times the requests give; a 1-hour entry
outlives a 5-minute one and is written at twice the input price; a read refreshes the entry;
a prefix under the model's minimum is never written.  Each rule is checked at its boundary."""

from __future__ import annotations

from typing import Any

import pytest

from sidecar.context.cache_sim import AnthropicCache, block_tokens, min_cacheable
from sidecar.transcripts.pricing import bill_cost, rates_for

SONNET = "claude-sonnet-4-5"
OPUS = "claude-opus-4-5"  # a 4,096-token minimum


def _text(words: int, seed: str) -> str:
    return " ".join(f"{seed}{i % 97}" for i in range(words))


def _body(
    model: str, system_words: int, turns: int, ttl: str | None = None, seed: str = "w"
) -> dict[str, Any]:
    """A system block of ``system_words`` words marked with ``ttl``, and ``turns`` small user
    messages, the last one marked (5 minutes)."""
    control: dict[str, Any] = {"type": "ephemeral"}
    if ttl is not None:
        control["ttl"] = ttl
    system = [{"type": "text", "text": _text(system_words, seed), "cache_control": control}]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": f"turn {i}"}]} for i in range(turns)
    ]
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return {"model": model, "system": system, "messages": messages}


def _system_tokens(body: dict[str, Any]) -> int:
    return block_tokens(body["system"][0])[1]


@pytest.mark.parametrize(("gap", "alive"), [(300.0, True), (300.5, False)])
def test_a_5m_entry_lives_five_minutes_from_its_last_use(gap: float, alive: bool) -> None:
    cache = AnthropicCache()
    first = _body(SONNET, 2_000, 1)
    cache.price(first, at=1_000.0)
    second = cache.price(_body(SONNET, 2_000, 2), at=1_000.0 + gap)
    system = _system_tokens(first)
    if alive:
        assert second.read >= system
    else:
        assert second.read == 0
        assert second.write == second.total - second.uncached
        assert second.write >= system


@pytest.mark.parametrize(("gap", "alive"), [(3_600.0, True), (3_601.0, False)])
def test_a_1h_entry_lives_an_hour(gap: float, alive: bool) -> None:
    cache = AnthropicCache()
    first = _body(SONNET, 2_000, 1, ttl="1h")
    cache.price(first, at=0.0)
    later = cache.price(_body(SONNET, 2_000, 2, ttl="1h"), at=gap)
    assert (later.read >= _system_tokens(first)) is alive
    # the same gap kills a 5-minute entry
    five = AnthropicCache()
    five.price(_body(SONNET, 2_000, 1), at=0.0)
    assert five.price(_body(SONNET, 2_000, 2), at=gap).read == 0


def _reader(model: str, words: int, tail: str) -> dict[str, Any]:
    """The system block of :func:`_body` unmarked, then one marked message: it reads the
    system block's entry through the look-back and writes a new entry of its own, so the
    system block's entry is refreshed by the read alone."""
    body = _body(model, words, 1)
    del body["system"][0]["cache_control"]
    body["messages"] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": tail, "cache_control": {"type": "ephemeral"}}],
        }
    ]
    return body


def test_a_read_refreshes_the_entry() -> None:
    cache = AnthropicCache()
    system = _system_tokens(_body(SONNET, 2_000, 1))
    cache.price(_body(SONNET, 2_000, 1), at=0.0)
    # read at 4 minutes by a request that does not mark the system block: refreshed
    assert cache.price(_reader(SONNET, 2_000, "first"), at=240.0).read == system
    # 8 minutes after the write, 4 after the read: alive only because the read refreshed it
    assert cache.price(_reader(SONNET, 2_000, "second"), at=480.0).read == system
    # without the read in between it is gone
    unread = AnthropicCache()
    unread.price(_body(SONNET, 2_000, 1), at=0.0)
    assert unread.price(_reader(SONNET, 2_000, "second"), at=480.0).read == 0


def test_without_times_nothing_expires() -> None:
    cache = AnthropicCache()
    cache.price(_body(SONNET, 2_000, 1))
    assert cache.price(_body(SONNET, 2_000, 2)).read > 0


def test_a_1h_write_is_billed_at_twice_the_input_price() -> None:
    rates = rates_for(SONNET)
    one_hour = AnthropicCache().price(_body(SONNET, 2_000, 1, ttl="1h"), at=0.0)
    five = AnthropicCache().price(_body(SONNET, 2_000, 1), at=0.0)
    system = _system_tokens(_body(SONNET, 2_000, 1))
    assert one_hour.write_1h >= system  # the system block, written at the 1-hour rate
    assert five.write_1h == 0
    assert one_hour.write == five.write
    # 1h: 2x input; 5m: 1.25x input, on the same tokens
    assert bill_cost(one_hour, rates) == pytest.approx(
        (
            one_hour.write_1h * 2 * rates.input
            + (one_hour.write - one_hour.write_1h) * 1.25 * rates.input
        )
        / 1e6
    )
    assert bill_cost(five, rates) == pytest.approx(five.write * 1.25 * rates.input / 1e6)
    assert rates.write_1h == 2 * rates.input


@pytest.mark.parametrize("model", [SONNET, OPUS])
def test_a_prefix_under_the_models_minimum_is_not_written(model: str) -> None:
    minimum = min_cacheable(model)
    assert minimum == (4_096 if model == OPUS else 1_024)
    # a prefix between Sonnet's minimum and Opus 4.5's: cached for one, not the other
    words = 1_200
    cache = AnthropicCache()
    first = cache.price(_body(model, words, 1), at=0.0)
    second = cache.price(_body(model, words, 1), at=10.0)
    tokens = first.total
    assert 1_024 < tokens < 4_096
    if model == OPUS:
        assert first.write == 0 and first.uncached == tokens
        assert second.read == 0
    else:
        assert first.write == tokens
        assert second.read == tokens


def test_the_look_back_is_twenty_blocks() -> None:
    """A request reads an earlier entry only within 20 blocks before its marker."""

    def body(blocks: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = [
            {"type": "text", "text": f"block {i} " + _text(60, "b")} for i in range(blocks)
        ]
        content[-1]["cache_control"] = {"type": "ephemeral"}
        return {"model": SONNET, "messages": [{"role": "user", "content": content}]}

    for extra, hit in ((19, True), (20, False)):
        cache = AnthropicCache()
        cache.price(body(30), at=0.0)
        assert (cache.price(body(30 + extra), at=1.0).read > 0) is hit
