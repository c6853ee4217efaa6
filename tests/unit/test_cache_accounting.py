"""Cache breakpoints the provider will find, and the predicted cache use of a request
(sidecar/context/cache.py, cache_accounting.py; rules in data/cache_rules.json, prices in
data/prices.json).

Shapes are built from wire-shaped prompts, as the assembler and stored snapshots have them:
the rules are checked on their own, without an assembly around them.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol.context import CacheAccounting, PromptProfile
from protocol.inputs import InputFreezeParams
from protocol.sessions import SessionAppendParams
from sidecar.context.assemble import assemble
from sidecar.context.build import build_inputs
from sidecar.context.cache import place_breakpoints
from sidecar.context.cache_accounting import RequestShape, predict_cache, predict_for, shape_of
from sidecar.context.limits import CacheRules, Prices, cache_rules, prices_of
from sidecar.context.service import ContextService
from sidecar.context.tokens import Tokenizers
from sidecar.store import Store

SONNET = PromptProfile(provider="anthropic", model="claude-sonnet-4-5")


def _section(ident: str, tokens: int, text: str = "") -> dict[str, Any]:
    return {"id": ident, "hash": f"h-{ident}-{text}", "tokens": tokens}


def _message(role: str, tokens: int, text: str, parts: int = 1) -> dict[str, Any]:
    content = [{"type": "text", "text": f"{text} #{i}"} for i in range(parts)]
    return {"role": role, "content": content, "tokens": tokens}


def _calls(n: int, tokens: int) -> dict[str, Any]:
    content = [
        {"type": "toolCall", "callId": f"c{i}", "name": "read_file", "arguments": {"i": i}}
        for i in range(n)
    ]
    return {"role": "assistant", "content": content, "tokens": tokens}


def _results(n: int, tokens: int) -> dict[str, Any]:
    content = [
        {"type": "toolResult", "callId": f"c{i}", "content": [{"type": "text", "text": "x"}]}
        for i in range(n)
    ]
    return {"role": "user", "content": content, "tokens": tokens}


TOOL = {"name": "read_file", "description": "Read a file.", "parameters": {"type": "object"}}
TOOL_LEDGER = [{"kind": "tool", "locator": "read_file", "tokens": 1200}]
HISTORY = [
    _message("user", 400, "Add a /version endpoint."),
    _message("assistant", 300, "Added it."),
    _message("user", 200, "Now read every handler."),
]


def _shape(
    messages: list[dict[str, Any]],
    *,
    system_text: str = "",
    tools: bool = False,
    profile: PromptProfile = SONNET,
    previous: RequestShape | None = None,
) -> tuple[RequestShape, list[dict[str, Any]]]:
    """A request (system of 2,000 tokens, ``messages``) with its breakpoints placed."""
    shape = shape_of(
        profile.model,
        [TOOL] if tools else [],
        TOOL_LEDGER if tools else [],
        [_section("fragment:base", 2000, system_text)],
        messages,
    )
    points = place_breakpoints(profile, shape, previous)
    return shape.with_markers(points), points


# --- look-back reach ---------------------------------------------------------------------------


def test_thirty_parallel_results_get_a_marker_at_the_previous_last_entry() -> None:
    messages = [*HISTORY, _calls(30, 1500), _results(30, 1200)]
    first, _ = _shape(HISTORY)
    last_before = len(HISTORY) - 1
    assert first.markers[-1].unit == 1 + last_before  # the ask: written by round 1

    blind = place_breakpoints(SONNET, _shape(messages)[0], None)
    assert all(p.get("messageIndex") != last_before for p in blind)  # nothing knows round 1

    shape = shape_of(SONNET.model, [], [], [_section("fragment:base", 2000)], messages)
    points = place_breakpoints(SONNET, shape, first)
    extra = [p for p in points if p.get("messageIndex") == last_before]
    assert len(extra) == 1, points
    assert extra[0]["ttl"] == "5m" and "previous request" in extra[0]["reason"]
    assert extra[0]["prefixTokens"] == 2000 + 400 + 300 + 200
    assert len(points) <= 4

    # and the prediction reads the whole transcript round 1 cached
    accounting = predict_for("anthropic", first, shape.with_markers(points))
    assert accounting["readTokens"] == 2900
    assert accounting["writeTokens"] == 1500 + 1200
    assert accounting["uncachedTokens"] == 0
    # without the extra marker, only the system prompt is found: the transcript is rewritten
    without = predict_for("anthropic", first, shape.with_markers(blind))
    assert without["readTokens"] == 2000
    assert without["writeTokens"] == 900 + 1500 + 1200


def test_a_few_parallel_results_need_no_extra_marker() -> None:
    first, _ = _shape(HISTORY)
    messages = [*HISTORY, _calls(5, 400), _results(5, 300)]
    shape = shape_of(SONNET.model, [], [], [_section("fragment:base", 2000)], messages)
    assert place_breakpoints(SONNET, shape, first) == place_breakpoints(SONNET, shape, None)
    accounting = predict_for(
        "anthropic", first, shape.with_markers(place_breakpoints(SONNET, shape))
    )
    assert accounting["readTokens"] == 2900  # the marker before the new turn reaches it


@pytest.mark.parametrize("parallel", [19, 20, 21, 30, 64])
def test_never_more_than_four_markers(parallel: int) -> None:
    first, _ = _shape(HISTORY, tools=True)
    messages = [*HISTORY, _calls(parallel, 1500), _results(parallel, 1200)]
    shape, points = _shape(messages, tools=True, previous=first)
    assert len(points) <= 4
    assert len(_shape(messages, tools=True)[1]) == 4  # tools, system, before the turn, turn
    reads = predict_for("anthropic", first, shape)["readTokens"]
    assert reads == 1200 + 2900  # the extra marker wins over the tools marker
    assert points[0]["location"] == "system" or parallel < 20


def test_the_lookback_boundary_is_twenty_blocks() -> None:
    rules = cache_rules("anthropic", SONNET.model)
    assert rules.lookback_blocks == 20 and rules.max_breakpoints == 4
    first, _ = _shape(HISTORY)
    for parallel, reached in ((19, True), (20, False)):
        # round 2's marker before its new turn sits ``parallel`` blocks after round 1's last
        shape = shape_of(
            SONNET.model,
            [],
            [],
            [_section("fragment:base", 2000)],
            [*HISTORY, _calls(parallel, 1500), _results(parallel, 1200)],
        )
        blind = predict_for(
            "anthropic", first, shape.with_markers(place_breakpoints(SONNET, shape))
        )
        assert (blind["readTokens"] == 2900) is reached, parallel


def test_the_extra_marker_goes_to_the_last_entry_still_repeated() -> None:
    first, _ = _shape(HISTORY)  # entries: system, message 1 (before its turn), message 2
    tail = [_calls(30, 1500), _results(30, 1200)]
    edited = [HISTORY[0], HISTORY[1], _message("user", 200, "Read only the first handler.")]
    shape = shape_of(SONNET.model, [], [], [_section("fragment:base", 2000)], [*edited, *tail])
    points = place_breakpoints(SONNET, shape, first)
    assert [p.get("messageIndex") for p in points] == [None, 1, 3, 4]
    assert predict_for("anthropic", first, shape.with_markers(points))["readTokens"] == 2700
    # the first message changed: only the system prompt is left, and its own marker finds it
    edited = [_message("user", 400, "Add a /health endpoint."), *HISTORY[1:]]
    shape = shape_of(SONNET.model, [], [], [_section("fragment:base", 2000)], [*edited, *tail])
    assert place_breakpoints(SONNET, shape, first) == place_breakpoints(SONNET, shape, None)


def test_providers_without_markers_get_no_extra_point() -> None:
    gpt = PromptProfile(provider="openai", model="gpt-4.1")
    first, _ = _shape(HISTORY, profile=gpt)
    messages = [*HISTORY, _calls(30, 1500), _results(30, 1200)]
    shape = shape_of(gpt.model, [], [], [_section("fragment:base", 2000)], messages)
    points = place_breakpoints(gpt, shape, first)
    assert points == place_breakpoints(gpt, shape, None)
    assert all("ttl" not in p for p in points)


# --- prediction --------------------------------------------------------------------------------


def test_identical_prefix_is_read_and_a_changed_system_is_written() -> None:
    first, _ = _shape(HISTORY)
    again = predict_for("anthropic", first, first)
    assert again["readTokens"] == 2900 and again["writeTokens"] == 0
    assert again["againstPrevious"] and again["firstChange"] is None

    grown, _ = _shape([*HISTORY, _message("assistant", 500, "Done."), _message("user", 50, "ok")])
    nxt = predict_for("anthropic", first, grown)
    assert nxt["readTokens"] == 2900 and nxt["writeTokens"] == 550 and nxt["uncachedTokens"] == 0

    changed, _ = _shape(HISTORY, system_text="a new instruction")
    miss = predict_for("anthropic", first, changed)
    assert miss["readTokens"] == 0 and miss["writeTokens"] == 2900
    assert miss["firstChange"] == "system section fragment:base"

    cold = predict_for("anthropic", None, first)
    assert not cold["againstPrevious"] and cold["readTokens"] == 0 and cold["writeTokens"] == 2900
    CacheAccounting.model_validate(cold, by_alias=True)  # wire-shaped


def test_another_model_reads_nothing() -> None:
    first, _ = _shape(HISTORY)
    opus = PromptProfile(provider="anthropic", model="claude-opus-4-1")
    other, _ = _shape(HISTORY, profile=opus)
    accounting = predict_for("anthropic", first, other)
    assert accounting["readTokens"] == 0 and accounting["firstChange"].startswith("the model")


def test_prefixes_under_the_model_minimum_are_not_cached() -> None:
    haiku = PromptProfile(provider="anthropic", model="claude-haiku-4-5")
    assert cache_rules("anthropic", "claude-haiku-4-5").min_tokens == 4096
    assert cache_rules("anthropic", "claude-sonnet-4-5").min_tokens == 1024
    small, points = _shape(HISTORY, profile=haiku)  # 2,900 tokens < 4,096
    assert points == []
    accounting = predict_for("anthropic", small, small)
    assert accounting["readTokens"] == accounting["writeTokens"] == 0
    assert accounting["uncachedTokens"] == 2900
    # markers the caller placed below the minimum write nothing either
    forced = small.with_markers([{"location": "message", "messageIndex": 2, "ttl": "5m"}])
    assert predict_for("anthropic", None, forced)["writeTokens"] == 0


def test_openai_reads_in_128_token_steps_from_1024() -> None:
    gpt = PromptProfile(provider="openai", model="gpt-4.1")
    first, _ = _shape(HISTORY, profile=gpt)
    grown, _ = _shape([*HISTORY, _message("assistant", 77, "Done.")], profile=gpt)
    accounting = predict_for("openai", first, grown)
    # 2,900 identical tokens: 1,024 + 14 x 128 = 2,816
    assert accounting["readTokens"] == 2816
    assert accounting["writeTokens"] == 0 and accounting["uncachedTokens"] == 2977 - 2816
    tiny = shape_of(gpt.model, [], [], [_section("s", 900)], [_message("user", 10, "hi")])
    assert predict_for("openai", tiny, tiny)["readTokens"] == 0  # under 1,024


def test_gemini_reads_the_identical_prefix_from_the_model_minimum() -> None:
    flash = PromptProfile(provider="gemini", model="gemini-2.5-flash")
    first, _ = _shape(HISTORY, profile=flash)
    assert predict_for("gemini", first, first)["readTokens"] == 2900
    pro = PromptProfile(provider="gemini", model="gemini-3-pro")
    first, _ = _shape(HISTORY, profile=pro)
    assert predict_for("gemini", first, first)["readTokens"] == 0  # 2,900 < 4,096
    # Gemini 2.5 Pro's minimum is 2,048 on Google's caching page of 2026-10 (4,096 before)
    older = PromptProfile(provider="gemini", model="gemini-2.5-pro")
    first, _ = _shape(HISTORY, profile=older)
    assert predict_for("gemini", first, first)["readTokens"] == 2900


# --- cost --------------------------------------------------------------------------------------


def test_cost_arithmetic_against_the_price_table() -> None:
    sonnet = prices_of("claude-sonnet-4-5")
    assert sonnet is not None
    assert (sonnet.input, sonnet.cache_write_5m, sonnet.cache_write_1h, sonnet.cache_read) == (
        3.0,
        3.75,
        6.0,
        0.3,
    )
    rules = CacheRules("markers", 4, 1024, 20, 1, "test")
    previous = shape_of(
        "m", [], [], [_section("a", 10_000)], [_message("user", 2_000, "one")]
    ).with_markers([{"location": "system", "ttl": "1h"}])
    current = shape_of(
        "m",
        [],
        [],
        [_section("a", 10_000)],
        [_message("user", 2_000, "one"), _message("user", 500, "two")],
    ).with_markers(
        [
            {"location": "system", "ttl": "1h"},
            {"location": "message", "messageIndex": 0, "ttl": "5m"},
        ]
    )
    prices = Prices(3.0, 15.0, 3.75, 6.0, 0.3, "2026-12-02")
    accounting = predict_cache("anthropic", previous, current, rules, prices)
    assert (accounting["readTokens"], accounting["writeTokens"]) == (10_000, 2_000)
    assert accounting["uncachedTokens"] == 500
    assert accounting["cost"] == {
        "input": 0.0015,  # 500 x $3 / M
        "cacheWrite": 0.0075,  # 2,000 x $3.75 / M (5-minute marker)
        "cacheRead": 0.003,  # 10,000 x $0.30 / M
        "total": 0.012,
        "currency": "USD",
        "pricesAsOf": "2026-12-02",
    }
    cold = predict_cache("anthropic", None, current, rules, prices)
    # 10,000 at the 1-hour rate ($6), 2,000 at the 5-minute rate
    assert cold["cost"]["cacheWrite"] == 0.0675


def test_every_listed_model_has_prices_and_unknown_ones_have_none() -> None:
    for model in (
        "claude-sonnet-4-5",
        "claude-sonnet-4-20250514",
        "claude-opus-4-1",
        "claude-opus-4-5",
        "claude-haiku-4-5",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-5",
        "gpt-5-mini",
        "gemini-2.5-pro",
        "gemini-2.5-flash",
    ):
        assert prices_of(model) is not None, model
    assert prices_of("claude-opus-4-5").input == 5.0  # type: ignore[union-attr]
    assert prices_of("claude-opus-4-1").input == 15.0  # type: ignore[union-attr]
    assert prices_of("gpt-5-mini").input == 0.25  # type: ignore[union-attr]
    assert prices_of("llama3") is None
    shape = shape_of("llama3", [], [], [_section("a", 5000)], [_message("user", 10, "hi")])
    assert predict_for("other", None, shape)["cost"] is None


# --- volatile text -----------------------------------------------------------------------------


def test_the_system_prompt_does_not_change_with_the_time_of_day() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        try:

            async def make() -> str:
                session = await store.sessions.create(
                    title="t", workspace_roots=[], profile_id=None, meta=None
                )
                return session.session_id

            sid = anyio.run(make)
            params = SessionAppendParams.model_validate(
                {
                    "sessionId": sid,
                    "entries": [
                        {
                            "kind": "message",
                            "role": "user",
                            "content": [{"type": "text", "text": "hi"}],
                        }
                    ],
                },
                by_alias=True,
            )
            anyio.run(lambda: store.sessions.append(sid, list(params.entries)))
            service = ContextService(store, Tokenizers.discover(), home=Path(tmp) / "home")
            systems = []
            for time in ("00:01", "12:30", "23:59"):
                freeze = InputFreezeParams.model_validate(
                    {
                        "sessionId": sid,
                        "userTurn": [{"type": "text", "text": "next"}],
                        "clock": {"date": "2026-11-30", "time": time},
                    },
                    by_alias=True,
                )
                captured = service.capture(freeze, persist=False)
                built = build_inputs(
                    service.store.sessions,
                    service.tokenizers,
                    captured.frozen,
                    captured.material,
                    SONNET,
                    seed="s",
                )
                systems.append(assemble(built.inputs)["system"])
            assert systems[0] == systems[1] == systems[2]
        finally:
            store.close()


def test_each_model_s_minimum_from_the_catalog_reaches_the_accounting() -> None:
    """A 700-token prefix: Opus 5 caches from 512 tokens, Sonnet 5 from 1,024 (models.json)."""
    assert cache_rules("anthropic", "claude-opus-5").min_tokens == 512
    assert cache_rules("anthropic", "claude-sonnet-5").min_tokens == 1024
    assert cache_rules("gemini", "gemini-3-pro-preview").min_tokens == 4096
    assert cache_rules("openai", "gpt-5.5-codex").min_tokens == 1024
    assert cache_rules("other", "a-model-nobody-knows").min_tokens == 1024  # provider default
    written = {}
    for model in ("claude-opus-5", "claude-sonnet-5"):
        profile = PromptProfile(provider="anthropic", model=model)
        shape = shape_of(model, [], [], [_section("fragment:base", 600)], [HISTORY[2]])
        points = place_breakpoints(profile, shape, None)
        request = shape.with_markers(points)
        written[model] = predict_for("anthropic", None, request)["writeTokens"]
    assert written == {"claude-opus-5": 800, "claude-sonnet-5": 0}
