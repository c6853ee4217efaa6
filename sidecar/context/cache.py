"""Where prompt-cache breakpoints go, and what they are predicted to save (DESIGN.md §4 7).

Candidates, in request order: the end of the tool catalog, the end of the system prompt, the
newest masked tool result (the masked history before it changes only when the masked boundary
moves, and the move changes only what follows it: without this marker a move would find no
cache entry in reach and write the whole transcript again), the end of the transcript before
the new turn, and the new turn itself (written now, read by the next turn).  A candidate is
kept only when the prefix up to it reaches the model's cacheable minimum.

Anthropic finds an earlier cache entry only ``lookbackBlocks`` (20) content blocks back from a
marker.  A turn with many parallel tool calls and results puts the previous request's last
cached position out of reach of every marker of this one, and the whole transcript would be
written again.  So when the previous request of the session is known and this one repeats it
through that position, a marker is placed there when no other marker reaches it: it reads
what the previous request wrote.  At most ``maxBreakpoints`` are kept, the latest first (the
tools marker goes first: the system marker's prefix contains the tools).

Each marker's TTL comes from the profile's ``cache`` settings by the part of the prompt it
ends (the tools and system markers: the stable prefix; the masked-history marker; the tail),
the extra marker taking the TTL of the entry it reads; longer TTLs are kept before shorter
ones (:mod:`sidecar.context.cache_ttl`).  Providers that cache automatically get the same
points as a prediction, not a marker, with OpenAI's retention as their TTL when one was asked
and the model accepts it.  The rules per provider are data: ``data/cache_rules.json``.
:func:`plan_cache` also predicts the request's cache read / write / uncached tokens and cost
(:mod:`sidecar.context.cache_accounting`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sidecar.context.cache_accounting import (
    RequestShape,
    Unit,
    common_prefix,
    predict_for,
    reaches,
    shape_of,
)
from sidecar.context.cache_ttl import accepted_retention, in_ttl_order, longer
from sidecar.context.limits import CacheRules, cache_rules

if TYPE_CHECKING:
    from collections.abc import Sequence

    from protocol.context import PromptProfile

__all__ = ["masked_through", "place_breakpoints", "plan_cache", "previous_cached_unit"]


def plan_cache(
    profile: PromptProfile,
    tools: Sequence[dict[str, Any]],
    ledger: Sequence[dict[str, Any]],
    system: Sequence[dict[str, Any]],
    messages: Sequence[dict[str, Any]],
    previous: RequestShape | None,
    message_units: Sequence[Unit] | None = None,
    settled_ttl: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any], RequestShape]:
    """(breakpoints, cache accounting, the prompt's shape with its markers) of a prompt, after
    the session's ``previous`` request (``message_units``: as
    :func:`~sidecar.context.cache_accounting.shape_of` takes them; ``settled_ttl``: as
    :func:`place_breakpoints` takes it).  The shape is what
    :func:`~sidecar.context.cache_accounting.request_shape` would make of the prompt, built
    from the units given: the reference of the session's next request."""
    shape = shape_of(profile.model, tools, ledger, system, messages, message_units)
    stable = masked_through(ledger, messages)
    points = place_breakpoints(profile, shape, previous, stable, settled_ttl)
    marked = shape.with_markers(points)
    return points, predict_for(profile.provider, previous, marked), marked


def previous_cached_unit(
    previous: RequestShape | None, current: RequestShape, rules: CacheRules
) -> int | None:
    """The last unit the previous request cached that this one repeats it through, if any."""
    if previous is None:
        return None
    same = common_prefix(previous, current)
    before = previous.tokens_through()
    cached = [
        m.unit for m in previous.markers if m.unit < same and before[m.unit] >= rules.min_tokens
    ]
    return max(cached) if cached else None


def masked_through(
    ledger: Sequence[dict[str, Any]], messages: Sequence[dict[str, Any]]
) -> int | None:
    """Index of the message holding the newest masked tool result, if any: everything up to
    it stays byte-identical until the masked boundary moves again."""
    masked = [i["fromSeq"] for i in ledger if i["visibility"] == "masked" and "fromSeq" in i]
    if not masked:
        return None
    newest = max(masked)
    found = None
    for index, message in enumerate(messages):
        provenance = message.get("provenance") or [{}]
        seq = provenance[0].get("fromSeq") if provenance[0].get("kind") == "transcript" else None
        if seq is not None and seq <= newest:
            found = index
    return found


def place_breakpoints(
    profile: PromptProfile,
    shape: RequestShape,
    previous: RequestShape | None = None,
    stable_message: int | None = None,
    settled_ttl: str | None = None,
) -> list[dict[str, Any]]:
    """``stable_message``: the last message that stays the same for many turns (the newest
    masked tool result): a marker there is read by every turn until the masked boundary
    moves, and by the turn it moves (which changes only what follows).  ``settled_ttl``: the
    TTL of the marker ending the transcript before the new turn, when not the tail's (the
    session's pauses chose an hour: :mod:`sidecar.context.cache_pauses`)."""
    rules = cache_rules(profile.provider, profile.model)
    ttls = profile.marker_ttls()
    through = shape.tokens_through()
    points: dict[int, dict[str, Any]] = {}
    marker_ttl: dict[int, str] = {}

    def place(unit: int, point: dict[str, Any], ttl: str) -> None:
        points[unit] = point
        previous_ttl = marker_ttl.get(unit)  # one unit ending two parts: the longer TTL
        marker_ttl[unit] = ttl if previous_ttl is None else str(longer(previous_ttl, ttl))

    if shape.tools:
        place(
            shape.tools - 1,
            {"location": "tools", "reason": "end of the tool catalog"},
            ttls["prefix"],
        )
    if shape.system:
        place(
            shape.tools + shape.system - 1,
            {"location": "system", "reason": "end of the system prompt"},
            ttls["prefix"],
        )
    first_message = shape.tools + shape.system
    last = len(shape.units) - 1
    stable = [] if stable_message is None else [first_message + stable_message]
    for unit, reason, ttl in (
        *(
            (
                u,
                "end of the masked history: unchanged until the masked boundary moves",
                ttls["history"],
            )
            for u in stable
        ),
        (last - 1, "end of the transcript before the new turn", settled_ttl or ttls["tail"]),
        (last, "the new turn: written now, read by the next turn", ttls["tail"]),
    ):
        if first_message <= unit <= last:
            point = {"location": "message", "messageIndex": unit - first_message}
            point["reason"] = reason
            place(unit, point, ttl)
    kept = {u: p for u, p in points.items() if through[u] >= rules.min_tokens}

    if rules.markers:
        reached = previous_cached_unit(previous, shape, rules)
        blocks = shape.blocks_through()
        if reached is not None and not any(reaches(blocks, u, reached, rules) for u in kept):
            extra = _point_at(shape, reached)
            if extra is not None:
                assert previous is not None  # reached is one of its markers
                # the entry's own TTL: a marker there reads it (and refreshes it)
                entry_ttl = next(m.ttl for m in previous.markers if m.unit == reached)
                marker_ttl[reached] = entry_ttl or ttls["tail"]
                extra["ttl"] = None  # the key order the answer has always had
                extra["reason"] = (
                    "the previous request's last cache entry: no later marker reaches it "
                    f"within {rules.lookback_blocks} blocks"
                )
                kept[reached] = extra

    ordered = sorted(kept)[-rules.max_breakpoints :]
    retention = accepted_retention(profile)
    out = []
    for unit in ordered:
        point = dict(kept[unit])
        point["ttl"] = marker_ttl[unit] if rules.markers else retention
        if point["ttl"] is None:
            del point["ttl"]
        point["prefixTokens"] = through[unit]
        out.append(point)
    if rules.markers:
        in_ttl_order(out)
    return out


def _point_at(shape: RequestShape, unit: int) -> dict[str, Any] | None:
    """A breakpoint ending ``unit``: the end of the tools, of the system prompt, or a message
    (a marker cannot sit inside the tools or the system prompt)."""
    if unit == shape.tools - 1:
        return {"location": "tools"}
    if unit == shape.tools + shape.system - 1:
        return {"location": "system"}
    if unit >= shape.tools + shape.system:
        return {"location": "message", "messageIndex": unit - shape.tools - shape.system}
    return None
