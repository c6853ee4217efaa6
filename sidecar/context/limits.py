"""Model limits, provider cache rules and model prices, all shipped as data (``data/*.json``).

Owns the model catalog (``data/models.json``: per-family rows with window, output limit,
output reservation, minimum cacheable prompt, cache price multipliers and TTLs, each with its
sources) and how a model id finds its row.  ``resolve_limits`` answers the window and output
reservation for a model from, in order: the profile's override, what the process learnt from
the provider's models endpoint (:mod:`sidecar.context.live_limits`, read here without I/O:
the runs layer asks, once per process), the model's catalog row (the longest matching
model-id prefix), its vendor's family (``vendorFamilies``: an unknown ``claude-*`` takes the
newest Claude figures, ``gpt-*``/``o<n>`` GPT-5's, ``gemini-*`` Gemini's), the fallback --
and says which one it used, with a warning when the window is neither the profile's, nor
the endpoint's, nor the model's own row's.  Live figures replace the window and the output
limit; the output *reservation* stays the catalog's (or the fallback's), capped by the live
output limit.  ``cache_rules`` gives a provider's mechanics (``data/cache_rules.json``) with
the model's own minimum cacheable prefix from the catalog.
``available_input = (window - reserved output - SAFETY_MARGIN) / count factor``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from protocol.context import ModelLimits, PromptProfile
from sidecar.context.live_limits import known

__all__ = [
    "SAFETY_MARGIN",
    "CacheRules",
    "CatalogMatch",
    "Prices",
    "available_input",
    "cache_rules",
    "catalog_row",
    "normalize_model_id",
    "prices_of",
    "resolve_limits",
]

#: Tokens kept free for provider framing the counts do not see (thndrs uses the same 1024).
SAFETY_MARGIN = 1024


@cache
def _data(name: str) -> dict[str, Any]:
    raw = resources.files("sidecar.context").joinpath(f"data/{name}").read_bytes()
    data: dict[str, Any] = json.loads(raw)
    return data


def _by_prefix(rows: list[dict[str, Any]], model: str) -> dict[str, Any] | None:
    matches = [r for r in rows if model.startswith(r["prefix"])]
    return max(matches, key=lambda r: len(r["prefix"])) if matches else None


def normalize_model_id(model: str) -> str:
    """The id the catalog matches: lower-cased, anything up to the last ``/`` dropped (a
    router's or a hub's namespace: ``openrouter/anthropic/claude-sonnet-5``,
    ``Qwen/Qwen3-Coder-480B-A35B-Instruct``)."""
    return model.rsplit("/", 1)[-1].strip().lower()


@dataclass(frozen=True, slots=True)
class CatalogMatch:
    """The catalog row a model id resolved to, and how."""

    row: dict[str, Any]
    how: str
    """``table`` (the model's own row) or ``family`` (its vendor's family row)."""


@cache
def catalog_row(model: str) -> CatalogMatch | None:
    """The model's catalog row: the longest matching prefix, else the row its vendor's first
    matching ``vendorFamilies`` pattern names; ``None`` when neither matches."""
    table = _data("models.json")
    key = normalize_model_id(model)
    row = _by_prefix(table["models"], key)
    if row is not None:
        return CatalogMatch(row, "table")
    for rule in table["vendorFamilies"]:
        if re.search(rule["pattern"], key):
            named = next(r for r in table["models"] if r["prefix"] == rule["row"])
            return CatalogMatch(named, "family")
    return None


def resolve_limits(profile: PromptProfile) -> ModelLimits:
    table = _data("models.json")
    match = catalog_row(profile.model)
    base = match.row if match is not None else table["fallback"]
    row = match.row if match is not None else {}
    source = match.how if match is not None else "fallback"
    window = int(base["window"])
    max_output = int(base["maxOutput"])
    output_limit: int | None = row.get("outputLimit")
    note: str | None = row.get("note")
    warning: str | None = None
    live = known(profile.model)
    if live is not None and live.window is not None:
        source = "live"
        window = live.window
        if live.output_limit is not None:
            output_limit = live.output_limit
            max_output = min(max_output, live.output_limit)
        reported = f"window {window:,}" + (
            f", output limit {live.output_limit:,}" if live.output_limit is not None else ""
        )
        note = f"{reported} reported by {live.endpoint} (learnt by this process)"
    elif match is None or match.how == "family":
        used = f"the {match.row['family']} family" if match else "the fallback"
        warning = (
            f"model {profile.model!r} is not in the catalog; using the figures of {used} "
            f"(window {window:,}, output reserve {max_output:,}); "
            "set window/maxOutput in the profile to override"
        )
    if profile.window is not None or profile.max_output is not None:
        source = "profile"
        window = profile.window or window
        max_output = profile.max_output or max_output
        if profile.window is not None:
            warning = None
    return ModelLimits(
        model=profile.model,
        window=window,
        max_output=min(max_output, max(window // 2, 1)),
        source=source,  # type: ignore[arg-type]
        family=row.get("family"),
        output_limit=output_limit,
        min_cache_tokens=row.get("minCacheTokens"),
        note=note,
        warning=warning,
    )


def available_input(limits: ModelLimits, count_factor: float = 1.0) -> int:
    """The input budget in our tokens: what the window leaves once the output is reserved,
    divided by what the provider counts per token we count
    (:mod:`sidecar.context.calibration`)."""
    return max(int((limits.window - limits.max_output - SAFETY_MARGIN) / count_factor), 0)


@dataclass(frozen=True, slots=True)
class CacheRules:
    """One provider's prompt-cache rules for one model (``data/cache_rules.json``)."""

    mode: str
    """``markers`` (explicit breakpoints), ``automatic``, ``implicit`` or ``none``."""
    max_breakpoints: int
    min_tokens: int
    lookback_blocks: int
    """How many content blocks back from a marker the provider finds an earlier entry."""
    increment_tokens: int
    """Granularity of automatic hits beyond the minimum (1: any length)."""
    version: str

    @property
    def markers(self) -> bool:
        return self.mode == "markers"


def cache_rules(provider: str, model: str) -> CacheRules:
    """The provider's cache mechanics with the model's minimum cacheable prefix: its catalog
    row's (or its vendor family's) ``minCacheTokens``, else the provider's default."""
    rules = _data("cache_rules.json")
    entry = rules.get(provider) or rules["other"]
    match = catalog_row(model)
    own = match.row.get("minCacheTokens") if match is not None else None
    return CacheRules(
        mode=str(entry["mode"]),
        max_breakpoints=int(entry["maxBreakpoints"]),
        min_tokens=int(own) if own is not None else int(entry["defaultMinTokens"]),
        lookback_blocks=int(entry.get("lookbackBlocks", 0)),
        increment_tokens=int(entry.get("incrementTokens", 1)),
        version=str(rules["version"]),
    )


@dataclass(frozen=True, slots=True)
class Prices:
    """USD per million tokens for one model (``data/prices.json``)."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    as_of: str


def prices_of(model: str) -> Prices | None:
    """The model's prices (longest matching model-id prefix), or ``None`` when not listed."""
    table = _data("prices.json")
    row = _by_prefix(table["models"], model)
    if row is None:
        return None
    return Prices(
        input=float(row["input"]),
        output=float(row["output"]),
        cache_write_5m=float(row["cacheWrite5m"]),
        cache_write_1h=float(row["cacheWrite1h"]),
        cache_read=float(row["cacheRead"]),
        as_of=str(table["asOf"]),
    )
