"""The reference prompt caches, now part of the product (``context-sidecar replay`` prices
real sessions with them): :mod:`sidecar.context.cache_sim`.  Re-exported here so the
bench suites and ``tests/e2e/test_cache_simulators.py`` keep their import."""

from __future__ import annotations

from sidecar.context.cache_sim import (
    LIFETIME,
    LOOKBACK,
    PRICES,
    AnthropicCache,
    Bill,
    OpenAICache,
    block_tokens,
    min_cacheable,
)

__all__ = [
    "LIFETIME",
    "LOOKBACK",
    "PRICES",
    "AnthropicCache",
    "Bill",
    "OpenAICache",
    "block_tokens",
    "min_cacheable",
]
