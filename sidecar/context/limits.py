"""Model limits, provider cache rules and model prices, all shipped as data (``data/*.json``).

``resolve_limits`` answers the window and output reservation for a model from, in order: the
profile's override, the shipped table (longest matching model-id prefix), a fallback — and
says which one it used.  ``available_input = window - reserved output - SAFETY_MARGIN``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from protocol.context import ModelLimits, PromptProfile

__all__ = [
    "SAFETY_MARGIN",
    "CacheRules",
    "Prices",
    "available_input",
    "cache_rules",
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


def resolve_limits(profile: PromptProfile) -> ModelLimits:
    table = _data("models.json")
    row = _by_prefix(table["models"], profile.model)
    source = "table" if row is not None else "fallback"
    base = row or table["fallback"]
    window = base["window"]
    max_output = base["maxOutput"]
    if profile.window is not None or profile.max_output is not None:
        source = "profile"
        window = profile.window or window
        max_output = profile.max_output or max_output
    return ModelLimits(
        model=profile.model,
        window=window,
        max_output=min(max_output, max(window // 2, 1)),
        source=source,  # type: ignore[arg-type]
    )


def available_input(limits: ModelLimits) -> int:
    return max(limits.window - limits.max_output - SAFETY_MARGIN, 0)


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
    rules = _data("cache_rules.json")
    entry = rules.get(provider) or rules["other"]
    row = _by_prefix(entry["minTokens"], model)
    return CacheRules(
        mode=str(entry["mode"]),
        max_breakpoints=int(entry["maxBreakpoints"]),
        min_tokens=int(row["tokens"]) if row else 1024,
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
