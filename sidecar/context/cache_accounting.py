"""Predicted prompt-cache use of a request against the session's previous one (DESIGN.md §4 7).

A request is seen the way providers cache it: a sequence of *units* in prefix order — each
tool, each system section, each message — each with its tokens and the number of content
blocks it lowers to (one per tool and per system section, one per content part of a message:
what Anthropic's look-back counts).  A :class:`RequestShape` holds the units (their wire
values, compared with :func:`~sidecar.jsonbytes.json_identical`, not hashed: unchanged
transcript groups are shared objects, so comparing them costs nothing), where the markers sit
and the model.

:func:`predict_cache` is pure: (previous shape or ``None``, this shape, the provider's rules,
the model's prices) -> ``{readTokens, writeTokens, uncachedTokens, cost, ...}`` as on the wire
(``protocol.context.CacheAccounting``).  The previous request is assumed to have been sent
within the cache lifetime, and only what *it* cached is known (older entries are not).

- ``markers`` (Anthropic): the previous request left an entry at each of its markers whose
  prefix reached the model's minimum.  An entry is usable when this request repeats the
  previous one unit for unit through it (same model).  Each marker of this request finds the
  usable entries whose last block is among the ``lookbackBlocks`` blocks ending at its own
  (:func:`reaches`); the longest found is read.  Each marker past the read writes the tokens
  from the previous write (or the read) up to it, at that marker's TTL.  The rest is uncached.
- ``automatic`` (OpenAI): the identical prefix is read from the model's minimum
  (``minCacheTokens`` in ``data/models.json``) on, in ``incrementTokens`` steps; nothing is
  billed as a write.
- ``implicit`` (Gemini): the identical prefix is read when it reaches the model's minimum.
- ``none``: nothing is read or written.

A :class:`CacheMemory` extends "the previous request" to every request of the session this
process sent: the entries they left (Anthropic: the prefixes at their markers; automatic and
implicit caches: every prefix sent), by a hash of the prefix's bytes.  A provider keeps an entry
for its TTL, refreshed on every hit, so an entry written turns ago is still read — after a
window move, a compaction or masking changed the previous request's prefix, say — and the
prediction with a memory finds it as the provider would.  The memory holds at most
:data:`MEMORY_ENTRIES` prefixes, the least recently used going first; time is not modelled
(requests are taken to be spaced within the TTL, as for the previous request).

The cost prices the input side only (the output is not known before the call): uncached
tokens at the input rate, writes at the 5-minute or 1-hour write rate (each marker's span at
its own TTL's: with longer TTLs first, that is Anthropic's mixed-TTL billing — from the read
to the last 1-hour marker at the 1-hour rate, the rest at the 5-minute rate; the 1-hour share
is ``oneHourWriteTokens``), reads at the read rate, from ``data/prices.json``; ``null`` for a
model the table does not list.  What was asked is priced: entries are not expired by time
(see above), so a 1-hour entry and a 5-minute one are read alike.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import accumulate
from typing import TYPE_CHECKING, Any

import xxhash

from sidecar.context.limits import CacheRules, Prices, cache_rules, prices_of
from sidecar.jsonbytes import dumps_bytes, json_identical

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "MEMORY_ENTRIES",
    "CacheMemory",
    "Marker",
    "RequestShape",
    "Unit",
    "common_prefix",
    "message_unit",
    "predict_cache",
    "predict_for",
    "reaches",
    "request_shape",
    "shape_of",
]


@dataclass(frozen=True, slots=True)
class Unit:
    """One tool, system section or message, in prefix order."""

    value: Any
    """Its wire value (what must be byte-identical for the prefix to match)."""
    tokens: int
    blocks: int


@dataclass(frozen=True, slots=True)
class Marker:
    """A cache breakpoint at the end of unit ``unit``."""

    unit: int
    ttl: str | None


@dataclass(frozen=True, slots=True)
class RequestShape:
    model: str
    units: tuple[Unit, ...]
    tools: int
    """How many leading units are tools."""
    system: int
    """How many units after the tools are system sections."""
    markers: tuple[Marker, ...] = ()
    names: tuple[str, ...] = ()
    """A reader's name for each unit, when the units are a sent body's
    (:mod:`sidecar.context.sent`); else :meth:`describe` names them from their values."""

    def with_markers(self, breakpoints: Sequence[Mapping[str, Any]]) -> RequestShape:
        markers = [
            Marker(unit, point.get("ttl"))
            for point in breakpoints
            if (unit := self.unit_of(point)) is not None
        ]
        return RequestShape(
            self.model,
            self.units,
            self.tools,
            self.system,
            tuple(sorted(set(markers), key=_at)),
            self.names,
        )

    def unit_of(self, point: Mapping[str, Any]) -> int | None:
        """The unit a wire breakpoint ends (``None``: nothing there)."""
        location = point["location"]
        if location == "tools":
            return self.tools - 1 if self.tools else None
        if location == "system":
            return self.tools + self.system - 1 if self.system else None
        index = point.get("messageIndex")
        at = self.tools + self.system + (index if index is not None else -1)
        return at if self.tools + self.system <= at < len(self.units) else None

    def tokens_through(self) -> list[int]:
        """Tokens from the start of the request through each unit."""
        return list(accumulate([unit.tokens for unit in self.units]))

    def blocks_through(self) -> list[int]:
        """Content blocks from the start of the request through each unit."""
        return list(accumulate([unit.blocks for unit in self.units]))

    def describe(self, unit: int) -> str:
        """A reader's name for a unit: ``tool read_file``, ``system section env``, ``message 4``."""
        if self.names:
            return self.names[unit]
        if unit < self.tools:
            return f"tool {self.units[unit].value.get('name', unit)}"
        if unit < self.tools + self.system:
            return f"system section {self.units[unit].value[0]}"
        return f"message {unit - self.tools - self.system}"

    def prefix_keys(self) -> list[str]:
        """A hash of the request's bytes from its start through each unit (the model
        included: providers cache per model)."""
        running = xxhash.xxh3_128(self.model.encode())
        keys: list[str] = []
        for unit in self.units:
            value = unit.value if isinstance(unit.value, bytes) else dumps_bytes(unit.value)
            running.update(b"\x1e%d\x1e" % len(value))
            running.update(value)
            keys.append(running.hexdigest())
        return keys


#: How many prefixes a :class:`CacheMemory` keeps (each ~50 bytes of key and count).
MEMORY_ENTRIES = 8_192


@dataclass(slots=True)
class CacheMemory:
    """The cache entries a session's earlier requests left, as far as this process sent them:
    prefix key (:meth:`RequestShape.prefix_keys`) -> the prefix's tokens, least recently used
    first."""

    entries: OrderedDict[str, int] = field(default_factory=OrderedDict)
    capacity: int = MEMORY_ENTRIES

    def copy(self) -> CacheMemory:
        return CacheMemory(OrderedDict(self.entries), self.capacity)

    def longest(self, keys: Sequence[str], candidates: Sequence[int]) -> int | None:
        """The longest of the ``candidates`` (unit indexes) whose prefix is remembered."""
        found = [unit for unit in candidates if keys[unit] in self.entries]
        return max(found) if found else None

    def remember(self, keys: Sequence[str], units: Sequence[int], tokens: Sequence[int]) -> None:
        """``units`` of a request were written (or read: a hit refreshes an entry)."""
        for unit in units:
            key = keys[unit]
            self.entries[key] = tokens[unit]
            self.entries.move_to_end(key)
        while len(self.entries) > self.capacity:
            self.entries.popitem(last=False)


def _at(marker: Marker) -> int:
    return marker.unit


def message_unit(message: Mapping[str, Any]) -> Unit:
    """A prompt message as a unit: its role and content, its tokens, a block per part."""
    content = message["content"]
    return Unit((message["role"], content), int(message["tokens"]), max(len(content), 1))


def shape_of(
    model: str,
    tools: Sequence[Mapping[str, Any]],
    ledger: Sequence[Mapping[str, Any]],
    system: Sequence[Mapping[str, Any]],
    messages: Sequence[Mapping[str, Any]],
    message_units: Sequence[Unit] | None = None,
) -> RequestShape:
    """The units of a wire-shaped prompt (tool tokens come from the ledger, as in a snapshot).
    ``message_units``: the :func:`message_unit` of each message, when the caller has them
    already (transcript groups build theirs once)."""
    tool_tokens = {i.get("locator"): i["tokens"] for i in ledger if i["kind"] == "tool"}
    units = [Unit(t, int(tool_tokens.get(t["name"], 0)), 1) for t in tools]
    units += [Unit((s["id"], s["hash"]), int(s["tokens"]), 1) for s in system]
    units += [message_unit(m) for m in messages] if message_units is None else message_units
    return RequestShape(model, tuple(units), len(tools), len(system))


def request_shape(prompt: Mapping[str, Any]) -> RequestShape:
    """The shape of an assembled prompt or a stored snapshot, with its markers."""
    shape = shape_of(
        prompt["modelLimits"]["model"],
        prompt["tools"],
        prompt["ledger"],
        prompt["system"],
        prompt["messages"],
    )
    return shape.with_markers(prompt.get("cacheBreakpoints", []))


def common_prefix(before: RequestShape | None, after: RequestShape) -> int:
    """How many leading units ``after`` repeats from ``before`` (0 across models: providers
    cache per model)."""
    if before is None or before.model != after.model:
        return 0
    same = 0
    for a, b in zip(before.units, after.units, strict=False):
        if not json_identical(a.value, b.value):
            break
        same += 1
    return same


def predict_cache(
    provider: str,
    previous: RequestShape | None,
    current: RequestShape,
    rules: CacheRules,
    prices: Prices | None,
    memory: CacheMemory | None = None,
) -> dict[str, Any]:
    """What ``current`` reads from and writes to the provider's cache after ``previous``
    and the requests ``memory`` remembers (see the module docstring), and what its input
    costs: wire-shaped ``CacheAccounting``.  ``memory`` learns what ``current`` leaves."""
    through = current.tokens_through()
    total = through[-1] if through else 0
    same = common_prefix(previous, current)
    keys = current.prefix_keys() if memory is not None else []
    read = 0
    writes = {"5m": 0, "1h": 0}
    if rules.mode == "markers":
        read = _marker_read(previous, current, same, rules, memory, keys)
        written = read
        marked: list[int] = []
        for marker in current.markers:
            end = through[marker.unit]
            if end >= rules.min_tokens:
                marked.append(marker.unit)
            if end > written and end >= rules.min_tokens:
                writes[marker.ttl if marker.ttl == "1h" else "5m"] += end - written
                written = end
        if memory is not None:
            memory.remember(keys, marked, through)
    elif rules.mode in ("automatic", "implicit"):
        shared = through[same - 1] if same else 0
        if memory is not None:
            seen = memory.longest(keys, range(len(keys)))
            if seen is not None:
                shared = max(shared, through[seen])
        if shared >= rules.min_tokens:
            step = max(rules.increment_tokens, 1)
            read = rules.min_tokens + (shared - rules.min_tokens) // step * step
        if memory is not None:
            memory.remember(keys, range(len(keys)), through)
    write = writes["5m"] + writes["1h"]
    answer: dict[str, Any] = {
        "provider": provider,
        "model": current.model,
        "againstPrevious": previous is not None,
        "inputTokens": total,
        "readTokens": read,
        "writeTokens": write,
        "oneHourWriteTokens": writes["1h"],
        "uncachedTokens": total - read - write,
        "firstChange": _first_change(previous, current, same),
        "rulesVersion": rules.version,
        "cost": None,
    }
    if prices is not None:
        cost = {
            "input": _usd((total - read - write) * prices.input),
            "cacheWrite": _usd(
                writes["5m"] * prices.cache_write_5m + writes["1h"] * prices.cache_write_1h
            ),
            "cacheRead": _usd(read * prices.cache_read),
        }
        cost["total"] = round(sum(cost.values()), 6)
        answer["cost"] = {**cost, "currency": "USD", "pricesAsOf": prices.as_of}
    return answer


def predict_for(
    provider: str,
    previous: RequestShape | None,
    current: RequestShape,
    memory: CacheMemory | None = None,
) -> dict[str, Any]:
    """:func:`predict_cache` with the shipped rules and prices of ``current``'s model."""
    rules = cache_rules(provider, current.model)
    return predict_cache(provider, previous, current, rules, prices_of(current.model), memory)


def _marker_read(
    previous: RequestShape | None,
    current: RequestShape,
    same: int,
    rules: CacheRules,
    memory: CacheMemory | None,
    keys: Sequence[str],
) -> int:
    found: list[int] = []
    blocks = current.blocks_through()
    if previous is not None and same:
        before = previous.tokens_through()
        usable = [
            m.unit for m in previous.markers if m.unit < same and before[m.unit] >= rules.min_tokens
        ]
        found = [
            entry
            for entry in usable
            if any(reaches(blocks, marker.unit, entry, rules) for marker in current.markers)
        ]
    if memory is not None:
        for marker in current.markers:
            reach: list[int] = []  # the units within its look-back
            for unit in range(marker.unit, -1, -1):
                if not reaches(blocks, marker.unit, unit, rules):
                    break
                reach.append(unit)
            hit = memory.longest(keys, reach)
            if hit is not None:
                found.append(hit)
    if not found:
        return 0
    best = max(found)
    if memory is not None:
        memory.remember(keys, [best], current.tokens_through())  # a hit refreshes the entry
    return current.tokens_through()[best]


def reaches(blocks: Sequence[int], marker: int, entry: int, rules: CacheRules) -> bool:
    """Whether a marker at the end of unit ``marker`` finds an entry at the end of unit
    ``entry``: the entry's last block is among the ``lookbackBlocks`` blocks that end at the
    marker's (its own and the ones before it).  ``blocks``: blocks through each unit."""
    return entry <= marker and blocks[marker] - blocks[entry] < rules.lookback_blocks


def _first_change(previous: RequestShape | None, current: RequestShape, same: int) -> str | None:
    """What first differs from the previous request, when that is before the units the
    previous request did not have (``None``: nothing it sent changed)."""
    if previous is None:
        return None
    if previous.model != current.model:
        return f"the model (was {previous.model})"
    if same >= len(previous.units) or same >= len(current.units):
        return None
    return current.describe(same)


def _usd(per_million: float) -> float:
    """Dollars for ``tokens x USD-per-million-tokens``, rounded to a millionth of a dollar."""
    return round(per_million / 1_000_000, 6)
