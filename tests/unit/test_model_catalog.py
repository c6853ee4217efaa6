"""The model catalog (sidecar/context/data/models.json) and how an assembly reports its limits:
every row says where its numbers came from; the models issue 42 names get their own figures;
an unknown model is never silently given 32k (its vendor's family, else the fallback, always
with a warning); a profile's window wins over all of it."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from protocol.context import ModelLimits, PromptProfile
from sidecar.context.cache_sim import min_cacheable
from sidecar.context.limits import cache_rules, catalog_row, prices_of, resolve_limits
from tests.unit.selection_kit import GrowingSession

CATALOG: dict[str, Any] = json.loads(
    resources.files("sidecar.context").joinpath("data/models.json").read_bytes()
)
ROWS: list[dict[str, Any]] = CATALOG["models"]
#: The models issue 42 names, and the window each must get from its catalog row.
NAMED = {
    "claude-sonnet-5": 1_000_000,
    "claude-opus-5": 1_000_000,
    "gpt-5.5-codex": 400_000,
    "gemini-3-pro": 1_048_576,
}


def _row(prefix: str) -> dict[str, Any]:
    return next(r for r in ROWS if r["prefix"] == prefix)


# --- the catalog file ------------------------------------------------------------------------


def test_every_row_is_well_formed_and_says_where_its_numbers_came_from() -> None:
    assert CATALOG["_comment"] and CATALOG["version"]
    assert CATALOG["fallback"]["source"]
    prefixes = [r["prefix"] for r in ROWS]
    assert len(prefixes) == len(set(prefixes)), "duplicate prefixes"
    for row in ROWS:
        prefix = row["prefix"]
        assert prefix == prefix.lower() and "/" not in prefix, prefix  # ids are matched so
        assert row["family"] and row["provider"] in {"anthropic", "openai", "gemini", "other"}
        assert row["source"] and all(isinstance(s, str) and s for s in row["source"]), prefix
        assert all(s.startswith(("http", "prices.json")) for s in row["source"]), prefix
        assert row["window"] > row["maxOutput"] > 0, prefix
        if row["outputLimit"] is not None:
            assert row["window"] >= row["outputLimit"] >= row["maxOutput"], prefix
        if row["minCacheTokens"] is not None:
            assert 256 <= row["minCacheTokens"] <= 8192, prefix
        cache = row["cache"]
        if cache is not None:
            assert 0 < cache["read"] < 1, prefix
            assert isinstance(cache["ttl"], list), prefix


def test_vendor_families_name_rows_that_exist() -> None:
    for rule in CATALOG["vendorFamilies"]:
        re.compile(rule["pattern"])
        assert _row(rule["row"])


def test_cache_multipliers_agree_with_the_price_table() -> None:
    """Where prices.json lists the row's own prefix, its cache read and writes are the row's
    multipliers of its input price (one fact, two files: they must not drift)."""
    checked = 0
    for row in ROWS:
        prices = prices_of(row["prefix"])
        if prices is None or row["cache"] is None:
            continue
        cache = row["cache"]

        def near(price: float, factor: float) -> Any:  # rounded list prices: Haiku 3's $0.30
            return pytest.approx(price * factor, rel=0.02, abs=0.015)

        assert prices.cache_read == near(prices.input, cache["read"]), row["prefix"]
        if "write5m" in cache:
            assert prices.cache_write_5m == near(prices.input, cache["write5m"]), row["prefix"]
            assert prices.cache_write_1h == near(prices.input, cache["write1h"]), row["prefix"]
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("model", sorted(NAMED))
def test_the_named_models_have_their_own_row(model: str) -> None:
    match = catalog_row(model)
    assert match is not None and match.how == "table"
    assert match.row["window"] == NAMED[model]


def test_ids_are_matched_without_case_or_a_hub_namespace() -> None:
    for model in ("Qwen/Qwen3-Coder-480B-A35B-Instruct", "qwen3-coder:30b"):
        assert resolve_limits(PromptProfile(model=model, provider="other")).window == 262_144
    assert resolve_limits(PromptProfile(model="openrouter/anthropic/claude-sonnet-5")).source == (
        "table"
    )
    assert resolve_limits(PromptProfile(model="gemini-3-pro-preview")).family == "Gemini 3 Pro"


def test_the_simulator_reads_the_same_minimums_as_the_sidecar() -> None:
    for row in ROWS:
        if row["minCacheTokens"] is not None:
            provider = row["provider"]
            assert min_cacheable(row["prefix"]) == cache_rules(provider, row["prefix"]).min_tokens


# --- through an assembly ---------------------------------------------------------------------


def _limits(tmp_path: Path, profile: dict[str, Any]) -> tuple[ModelLimits, dict[str, Any]]:
    session = GrowingSession(tmp_path, {"maxOutput": None, **profile}, [])
    try:
        result = session.assemble()
    finally:
        session.close()
    limits = ModelLimits.model_validate(result["modelLimits"], by_alias=True)  # wire-shaped
    return limits, result


@pytest.mark.parametrize("model", sorted(NAMED))
def test_assemble_reports_the_catalog_window_and_its_source(tmp_path: Path, model: str) -> None:
    provider = {"claude": "anthropic", "gpt-5": "openai", "gemini": "gemini"}
    profile = {"model": model, "provider": next(v for k, v in provider.items() if k in model)}
    limits, result = _limits(tmp_path, profile)
    row = catalog_row(model)
    assert row is not None
    assert (limits.window, limits.source, limits.family) == (
        NAMED[model],
        "table",
        row.row["family"],
    )
    assert limits.max_output == row.row["maxOutput"] and limits.warning is None
    assert limits.min_cache_tokens == row.row["minCacheTokens"]
    assert result["dashboard"]["window"] == NAMED[model]  # the budget is the catalog's


def test_an_unknown_claude_takes_its_family_with_a_warning(tmp_path: Path) -> None:
    limits, result = _limits(tmp_path, {"model": "claude-sonnet-9"})
    assert (limits.source, limits.family, limits.window) == ("family", "Claude Sonnet 5", 1_000_000)
    assert limits.warning is not None
    assert "claude-sonnet-9" in limits.warning and "Claude Sonnet 5" in limits.warning
    assert "profile" in limits.warning  # says how to override
    assert result["dashboard"]["window"] == 1_000_000


def test_a_fully_unknown_model_gets_the_fallback_never_silently(tmp_path: Path) -> None:
    limits, _ = _limits(tmp_path, {"model": "my-local-model", "provider": "other"})
    assert (limits.source, limits.window, limits.max_output) == ("fallback", 32_768, 4_096)
    assert limits.family is None
    assert limits.warning is not None and "fallback" in limits.warning


def test_a_profile_override_wins(tmp_path: Path) -> None:
    limits, result = _limits(tmp_path, {"model": "claude-sonnet-5", "window": 300_000})
    assert (limits.source, limits.window, limits.warning) == ("profile", 300_000, None)
    assert result["dashboard"]["window"] == 300_000
    unknown, _ = _limits(tmp_path / "b", {"model": "my-local-model", "window": 65_536})
    assert (unknown.source, unknown.window, unknown.warning) == ("profile", 65_536, None)
    # an output reserve alone does not make the fallback's window the user's: still warned
    partial = resolve_limits(PromptProfile(model="my-local-model", max_output=2048))
    assert partial.source == "profile" and partial.warning is not None
