"""Cache lifetimes: the profile's ``cache`` settings, the TTL each breakpoint asks for, the
longer-first rule, OpenAI's retention, how the lowerings write them, and how the reference
simulator (``sidecar/context/cache_sim.py``) expires and prices them (sidecar/context/cache_ttl.py,
cache.py, cache_accounting.py, lower/).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from protocol.context import PromptProfile
from sidecar.context.cache import place_breakpoints
from sidecar.context.cache_accounting import predict_for, shape_of
from sidecar.context.cache_sim import PRICES, AnthropicCache, Bill, OpenAICache
from sidecar.context.cache_ttl import in_ttl_order, ttl_diagnostics
from sidecar.context.lower import lower
from tests.unit.test_cache_accounting import HISTORY, TOOL, TOOL_LEDGER, _calls, _message, _results
from tests.unit.test_cache_accounting import _section as section
from tests.unit.test_lower import (
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    _breakpoint,
    _marked,
    assert_sdk_valid,
    make_prompt,
    read_blob,
)

SONNET = "claude-sonnet-4-5"
HYBRID = {"prefixTtl": "1h", "historyTtl": "1h", "tailTtl": "5m"}


def _profile(cache: dict[str, Any] | None = None, **fields: Any) -> PromptProfile:
    return PromptProfile.model_validate(
        {"provider": "anthropic", "model": SONNET, **fields, "cache": cache or {}}, by_alias=True
    )


def _points(profile: PromptProfile, stable: int | None = None) -> list[dict[str, Any]]:
    """Breakpoints of a request with a tool, a system prompt, six messages and, with
    ``stable``, a masked history ending at that message."""
    messages = [*HISTORY, _message("assistant", 900, "Read them."), *HISTORY[:2]]
    shape = shape_of(profile.model, [TOOL], TOOL_LEDGER, [section("fragment:base", 2000)], messages)
    return place_breakpoints(profile, shape, None, stable)


# --- the setting -------------------------------------------------------------------------------


def test_the_default_profile_asks_what_it_always_asked() -> None:
    points = _points(_profile(), stable=3)
    assert [(p["location"], p.get("messageIndex"), p["ttl"]) for p in points] == [
        ("system", None, "5m"),
        ("message", 3, "5m"),
        ("message", 4, "5m"),
        ("message", 5, "5m"),
    ]
    # the answer's key order, as before (the snapshot's bytes)
    assert [list(p) for p in points][:2] == [
        ["location", "reason", "ttl", "prefixTokens"],
        ["location", "messageIndex", "reason", "ttl", "prefixTokens"],
    ]
    assert ttl_diagnostics(_profile()) == []


def test_each_part_of_the_prompt_gets_its_own_ttl() -> None:
    points = _points(_profile(HYBRID), stable=2)
    assert [(p.get("messageIndex"), p["ttl"]) for p in points] == [
        (None, "1h"),  # the system prompt (the tools marker gave way: at most four)
        (2, "1h"),  # the masked history
        (4, "5m"),  # the transcript before the new turn
        (5, "5m"),  # the new turn
    ]
    everything = _points(_profile({"ttl": "1h"}), stable=2)
    assert {p["ttl"] for p in everything} == {"1h"}
    # the older field still sets the stable prefix alone
    legacy = _points(_profile(cacheTtl="1h"), stable=2)
    assert [p["ttl"] for p in legacy] == ["1h", "5m", "5m", "5m"]
    # a unit that ends both the masked history and the transcript keeps the longer TTL
    both = _points(_profile(HYBRID), stable=4)
    assert [(p.get("messageIndex"), p["ttl"]) for p in both][-2:] == [(4, "1h"), (5, "5m")]


@pytest.mark.parametrize(
    "wrong",
    [
        {"cache": {"prefixTtl": "5m", "tailTtl": "1h"}},
        {"cache": {"historyTtl": "1h"}},  # after a 5-minute prefix
        {"cacheTtl": "5m", "cache": {"ttl": "1h"}},
    ],
)
def test_a_setting_whose_ttls_grow_toward_the_tail_is_refused(wrong: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="longer TTLs first"):
        PromptProfile.model_validate(wrong, by_alias=True)


def test_a_longer_marker_after_a_shorter_one_is_demoted_and_says_so() -> None:
    points = [{"ttl": t, "reason": "r"} for t in ("1h", "5m", "1h", "5m")]
    in_ttl_order(points)
    assert [p["ttl"] for p in points] == ["1h", "5m", "5m", "5m"]
    assert "sent as 5m" in points[2]["reason"] and points[3]["reason"] == "r"


def _first_and_parallel(profile: PromptProfile, stable: int | None) -> list[dict[str, Any]]:
    """Round 1 (the history), then 30 parallel calls and results, an answer and a new turn:
    no later marker reaches round 1's last entry, so a marker is placed there."""
    system = [section("fragment:base", 2000)]
    first = shape_of(profile.model, [], [], system, HISTORY)
    first = first.with_markers(place_breakpoints(profile, first))
    messages = [
        *HISTORY,
        _calls(30, 1500),
        _results(30, 1200),
        _message("assistant", 100, "Read them all."),
        _message("user", 100, "Next."),
    ]
    shape = shape_of(profile.model, [], [], system, messages)
    return place_breakpoints(profile, shape, first, stable)


def test_the_extra_marker_takes_the_ttl_of_the_entry_it_reads() -> None:
    points = _first_and_parallel(_profile({"ttl": "1h"}), None)
    extra = [p for p in points if "previous request" in p["reason"]]
    assert [(p["messageIndex"], p["ttl"]) for p in extra] == [(2, "1h")]
    # round 1's entry there was a 5-minute one under the hybrid setting, and a 1-hour masked
    # history after it would break the order: it is sent at 5 minutes
    hybrid = _first_and_parallel(_profile(HYBRID), stable=4)
    assert [(p["messageIndex"], p["ttl"]) for p in hybrid] == [
        (2, "5m"),
        (4, "5m"),
        (5, "5m"),
        (6, "5m"),
    ]
    assert "sent as 5m" in hybrid[1]["reason"]


# --- OpenAI's retention, Gemini --------------------------------------------------------------


def test_openai_breakpoints_carry_the_retention_the_model_accepts() -> None:
    gpt5 = _profile({"retention": "24h"}, provider="openai", model="gpt-5")
    assert {p["ttl"] for p in _points(gpt5)} == {"24h"}
    assert ttl_diagnostics(gpt5) == []
    gpt4o = _profile({"retention": "24h"}, provider="openai", model="gpt-4o")
    assert all("ttl" not in p for p in _points(gpt4o))
    [warning] = ttl_diagnostics(gpt4o)
    assert warning["code"] == "cache.retention_unsupported"
    assert "'gpt-4o' accepts in_memory" in warning["message"]
    newer = _profile({"retention": "in_memory"}, provider="openai", model="gpt-5.5")
    assert all("ttl" not in p for p in _points(newer))
    assert "accepts 24h" in ttl_diagnostics(newer)[0]["message"]


def test_gemini_has_no_lifetime_to_ask_for() -> None:
    gemini = _profile({"ttl": "1h", "retention": "24h"}, provider="gemini", model="gemini-2.5-pro")
    assert all("ttl" not in p for p in _points(gemini))
    codes = [(d["code"], d["message"]) for d in ttl_diagnostics(gemini)]
    assert codes[0][0] == "cache.ttl_ignored" and "implicit cache" in codes[0][1]
    assert codes[1][0] == "cache.retention_unsupported"


# --- lowering ----------------------------------------------------------------------------------


def test_anthropic_writes_the_1h_ttl_and_leaves_5m_as_it_was() -> None:
    prompt = make_prompt(
        breakpoints=[
            _breakpoint("system", "1h"),
            _breakpoint("message", "1h", 2),
            _breakpoint("message", "5m", 5),
        ]
    )
    body = lower(prompt, "anthropic-messages", read_blob=read_blob)
    assert [control for _, control in _marked(body)] == [
        {"type": "ephemeral", "ttl": "1h"},
        {"type": "ephemeral", "ttl": "1h"},
        {"type": "ephemeral"},
    ]


def test_openai_bodies_carry_the_retention_with_the_cache_key() -> None:
    retained = make_prompt(breakpoints=[_breakpoint("system", "24h")])
    plain = make_prompt(breakpoints=[_breakpoint("system", None)])
    for target, adapter in (("openai-chat", OPENAI_CHAT), ("openai-responses", OPENAI_RESPONSES)):
        body = lower(retained, target, read_blob=read_blob, cache_key="ses_1")  # type: ignore[arg-type]
        assert list(body)[-2:] == ["prompt_cache_key", "prompt_cache_retention"]
        assert body["prompt_cache_retention"] == "24h"
        assert_sdk_valid(adapter, body)
        # not OpenAI's own server (no cache key): neither field
        assert "prompt_cache_retention" not in lower(retained, target, read_blob=read_blob)  # type: ignore[arg-type]
        unasked = lower(plain, target, read_blob=read_blob, cache_key="ses_1")  # type: ignore[arg-type]
        assert "prompt_cache_retention" not in unasked
    # an OpenAI retention is no Anthropic marker
    assert _marked(lower(retained, "anthropic-messages", read_blob=read_blob)) == []


# --- the prediction and the reference simulator ------------------------------------------------


def test_the_prediction_reports_and_prices_the_1h_share() -> None:
    shape = shape_of(
        SONNET,
        [],
        [],
        [section("a", 10_000)],
        [_message("user", 2_000, "one"), _message("user", 500, "two")],
    ).with_markers(
        [
            {"location": "system", "ttl": "1h"},
            {"location": "message", "messageIndex": 1, "ttl": "5m"},
        ]
    )
    cold = predict_for("anthropic", None, shape)
    assert (cold["writeTokens"], cold["oneHourWriteTokens"]) == (12_500, 10_000)
    # Sonnet 4.5: $6 / M for 1-hour writes (2x $3), $3.75 for 5-minute ones (1.25x)
    assert cold["cost"]["cacheWrite"] == round((10_000 * 6.0 + 2_500 * 3.75) / 1e6, 6)


def _anthropic_body(system_ttl: str | None, turn: str) -> dict[str, Any]:
    control = {"type": "ephemeral", **({"ttl": system_ttl} if system_ttl else {})}
    return {
        "model": SONNET,
        "system": [{"type": "text", "text": "rules " * 1500, "cache_control": control}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "history " * 1500},
                    {"type": "text", "text": turn, "cache_control": {"type": "ephemeral"}},
                ],
            }
        ],
    }


def test_the_simulator_expires_5m_entries_and_keeps_1h_ones() -> None:
    cache = AnthropicCache()
    first = cache.price(_anthropic_body("1h", "a"), at=0.0)
    assert first.read == 0 and 0 < first.write_1h < first.write
    system = first.write_1h
    # ten minutes on: the 5-minute entry is gone, the 1-hour one is read (and refreshed)
    later = cache.price(_anthropic_body("1h", "a"), at=600.0)
    assert (later.read, later.write_1h) == (system, 0) and later.write == first.write - system
    # 59 minutes after that hit: still there; an hour and a second after the last: gone
    assert cache.price(_anthropic_body("1h", "b"), at=600.0 + 3_540).read == system
    assert cache.price(_anthropic_body("1h", "c"), at=600.0 + 3_540 + 3_601).read == 0
    # without times nothing expires; with 5-minute markers ten minutes is too long
    short = AnthropicCache()
    short.price(_anthropic_body(None, "a"), at=0.0)
    assert short.price(_anthropic_body(None, "a"), at=600.0).read == 0
    # written again at 600 s; a request without a time expires nothing
    assert short.price(_anthropic_body(None, "a")).read == first.write
    with pytest.raises(AssertionError, match="shorter first"):
        body = _anthropic_body(None, "a")
        body["messages"][0]["content"][1]["cache_control"]["ttl"] = "1h"
        AnthropicCache().price(body)


def test_the_simulator_prices_1h_writes_at_twice_the_input() -> None:
    price = PRICES["anthropic"]
    assert price["write1h"] == 2 * price["input"] and price["write"] == 1.25 * price["input"]
    bill = Bill(read=1_000, write=3_000, uncached=500, write_1h=2_000)
    expected = 500 * price["input"] + 1_000 * price["write"] + 2_000 * price["write1h"]
    assert bill.cost == pytest.approx((expected + 1_000 * price["read"]) / 1e6)


def test_the_openai_simulator_keeps_24h_retention_past_an_idle_hour() -> None:
    def body(retention: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": "gpt-5",
            "messages": [{"role": "system", "content": "rules " * 3000}],
            "prompt_cache_key": "s",
        }
        if retention is not None:
            out["prompt_cache_retention"] = retention
        return out

    for retention, read in (("24h", True), (None, False), ("in_memory", False)):
        cache = OpenAICache()
        cache.price(body(retention), at=0.0)
        assert (cache.price(body(retention), at=7_200.0).read > 0) is read, retention
