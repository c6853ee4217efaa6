"""Where prompt-cache breakpoints go (DESIGN.md §4 stage 6).

Candidates, in request order: the end of the tool catalog, the end of the system prompt, the
end of the transcript before the new turn (what the previous turn cached, found by the
provider's look-back), and the new turn itself (written now, read by the next turn).  A
candidate is kept only when the prefix up to it reaches the model's cacheable minimum, and at
most ``max_breakpoints`` are kept, the latest first.  Providers that cache automatically get
the same points without a TTL (a prediction, not a marker).  The rules per provider are data:
``data/cache_rules.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sidecar.context.limits import cache_rules

if TYPE_CHECKING:
    from protocol.context import PromptProfile

__all__ = ["place_breakpoints"]


def place_breakpoints(
    profile: PromptProfile,
    tools_tokens: int,
    system: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    has_tools: bool,
) -> list[dict[str, Any]]:
    rules = cache_rules(profile.provider, profile.model)
    stable_ttl = profile.cache_ttl if rules.markers else None
    message_ttl = "5m" if rules.markers else None
    prefix = tools_tokens + sum(s["tokens"] for s in system)
    points: list[dict[str, Any]] = []
    if has_tools:
        points.append(
            {
                "location": "tools",
                "prefixTokens": tools_tokens,
                "ttl": stable_ttl,
                "reason": "end of the tool catalog",
            }
        )
    if system:
        points.append(
            {
                "location": "system",
                "prefixTokens": prefix,
                "ttl": stable_ttl,
                "reason": "end of the system prompt",
            }
        )
    running = prefix
    last = len(messages) - 1
    for index, message in enumerate(messages):
        running += message["tokens"]
        if index in (last - 1, last):
            reason = (
                "the new turn: written now, read by the next turn"
                if index == last
                else "end of the transcript before the new turn"
            )
            points.append(
                {
                    "location": "message",
                    "messageIndex": index,
                    "prefixTokens": running,
                    "ttl": message_ttl,
                    "reason": reason,
                }
            )
    kept = [p for p in points if p["prefixTokens"] >= rules.min_tokens][-rules.max_breakpoints :]
    for point in kept:
        if point["ttl"] is None:
            del point["ttl"]
    return kept
