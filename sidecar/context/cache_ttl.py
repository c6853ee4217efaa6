"""How long each cache breakpoint asks the provider to keep its prefix (the profile's ``cache``).

Owns the lifetimes: which TTL an Anthropic marker gets from the part of the prompt it ends
(:meth:`~protocol.context.PromptProfile.marker_ttls`: the stable prefix, the masked history,
the moving tail), the rule that a longer TTL comes before a shorter one in the prompt
(:func:`in_ttl_order`), which OpenAI ``prompt_cache_retention`` a model accepts
(:func:`accepted_retention`, from the model catalog's ``cache.ttl``), and the diagnostics that
say when a setting could not be honoured (:func:`ttl_diagnostics`).

Anthropic's rule is "longer TTL entries must come before shorter ones".  The profile's own
setting cannot break it (:class:`~protocol.context.PromptProfile` refuses a setting whose TTLs
grow toward the tail); a marker placed by position — the extra marker at the previous
request's last entry, which takes that entry's TTL — can land after a shorter one.  Such a
marker is sent at the shorter TTL before it (a demotion, never a promotion: a promotion would
write the earlier prefix again at twice the price), and its reason says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sidecar.context.limits import cache_rules, catalog_row

if TYPE_CHECKING:
    from collections.abc import Sequence

    from protocol.context import CacheRetention, PromptProfile

__all__ = ["TTL_ORDER", "accepted_retention", "in_ttl_order", "longer", "ttl_diagnostics"]

#: Anthropic TTLs, shortest first.
TTL_ORDER = {"5m": 0, "1h": 1}


def longer(a: str | None, b: str | None) -> str | None:
    """The longer of two Anthropic TTLs (``None`` when both are)."""
    if a is None or b is None:
        return a or b
    return a if TTL_ORDER[a] >= TTL_ORDER[b] else b


def in_ttl_order(points: Sequence[dict[str, Any]]) -> None:
    """Demote, in place, every marker whose TTL is longer than one before it in the prompt
    (``points`` in prompt order, each with ``ttl`` and ``reason``)."""
    shortest: str | None = None
    for point in points:
        ttl = point.get("ttl")
        if ttl not in TTL_ORDER:
            continue
        if shortest is not None and TTL_ORDER[ttl] > TTL_ORDER[shortest]:
            point["ttl"] = shortest
            point["reason"] += f" (sent as {shortest}: a longer TTL may not follow a shorter one)"
            continue
        shortest = ttl


def accepted_retention(profile: PromptProfile) -> CacheRetention | None:
    """The profile's OpenAI retention when its provider is OpenAI and the model's catalog row
    lists it among its cache lifetimes; else ``None`` (nothing is sent)."""
    asked = profile.cache.retention
    if asked is None or profile.provider != "openai":
        return None
    return asked if asked in _lifetimes(profile.model) else None


def ttl_diagnostics(profile: PromptProfile) -> list[dict[str, Any]]:
    """Warnings for lifetimes asked for that the request will not carry."""
    cache = profile.cache
    markers = cache_rules(profile.provider, profile.model).markers
    out: list[dict[str, Any]] = []
    asked_ttl = [
        name
        for name, value in (
            ("ttl", cache.ttl),
            ("prefixTtl", cache.prefix_ttl),
            ("historyTtl", cache.history_ttl),
            ("tailTtl", cache.tail_ttl),
        )
        if value is not None
    ]
    if asked_ttl and not markers:
        out.append(
            _warning(
                "cache.ttl_ignored",
                f"cache.{asked_ttl[0]}: {profile.provider} takes no cache marker TTL "
                + (
                    "(its implicit cache has no lifetime to ask for)"
                    if profile.provider == "gemini"
                    else "(OpenAI's lifetime is cache.retention)"
                    if profile.provider == "openai"
                    else "(no prompt cache is assumed)"
                ),
            )
        )
    retention = cache.retention
    if retention is not None and accepted_retention(profile) is None:
        if profile.provider != "openai":
            why = f"{profile.provider} has no prompt_cache_retention"
        else:
            lifetimes = _lifetimes(profile.model)
            why = f"model {profile.model!r} accepts " + (
                ", ".join(lifetimes) if lifetimes else "none (not in the model catalog)"
            )
        out.append(
            _warning(
                "cache.retention_unsupported",
                f"cache.retention {retention!r} is not sent: {why}",
            )
        )
    return out


def _lifetimes(model: str) -> list[str]:
    match = catalog_row(model)
    cache = match.row.get("cache") if match is not None else None
    return list(cache.get("ttl", [])) if isinstance(cache, dict) else []


def _warning(code: str, message: str) -> dict[str, Any]:
    return {"severity": "warning", "code": code, "path": "profile.cache", "message": message}
