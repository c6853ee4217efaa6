"""``usage_update``: how full the context is and what the session has cost, after every model
call of a prompt.

From the run's own events (the journal holds the same): ``context.assembled`` carries the
round's dashboard — ``used`` (tokens the prompt takes) and ``window`` (the model's context
window) become ``used`` / ``size`` —, and ``model.completed`` ends the call, so an update is
sent then.  ``cost`` is the session's cumulative cost in USD, as far as this process saw it:
each call's input priced by the cache accounting (``predictedCache.cost.total``: uncached,
cache write and cache read tokens at the model's prices, from the shipped price table) plus its
output tokens (``usage.outputTokens``) at the model's output price.  A model the price table
does not list has no cost, so ``cost`` is left out rather than reported as zero.  A
sub-agent's calls add to the cost but not to the context figures (its prompt is its own).

The comparison with keep-everything-then-compact rides in ``_meta`` (ACP's extension point:
``UsageUpdate`` has no field for it) under :data:`META_KEY`, once a call carried it
(``keepEverything`` on ``model.completed``: :mod:`sidecar.context.keep_everything_live`):
``keepEverythingCost`` (what the session's calls would have cost that way), ``ownCost`` (what
they cost as sent, priced the same way: the reference simulator with the real times of the
calls, not ``cost``'s prediction, which knows no time), ``saved`` (``keepEverythingCost -
ownCost``, USD; negative when keep-everything would have been cheaper), ``compactions`` and
``calls`` (the calls compared; a sub-agent's are not).  A model, not a bill.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp.schema import Cost, UsageUpdate

from sidecar.context.limits import prices_of

__all__ = ["META_KEY", "UsageMeter"]

#: The ``_meta`` key of the sidecar's own figures on ``usage_update``.
META_KEY = "context-sidecar"


@dataclass(slots=True)
class _SessionUsage:
    used: int | None = None
    size: int | None = None
    cost: float = 0.0
    priced: bool = False
    keep_everything: float = 0.0
    own: float = 0.0
    compared: int = 0
    compactions: int = 0


class UsageMeter:
    """Per session of this process: the latest context figures and the cost so far."""

    def __init__(self) -> None:
        self._sessions: dict[str, _SessionUsage] = {}

    def updates(self, session_id: str, event: dict[str, Any]) -> list[UsageUpdate]:
        kind, payload = event.get("type"), event.get("payload") or {}
        usage = self._sessions.setdefault(session_id, _SessionUsage())
        sub_agent = "agent" in payload
        if kind == "context.assembled" and not sub_agent:
            dashboard = payload.get("dashboard") or {}
            usage.used, usage.size = dashboard.get("used"), dashboard.get("window")
            return []
        if kind != "model.completed":
            return []
        call_cost = _call_cost(payload)
        if call_cost is not None:
            usage.cost += call_cost
            usage.priced = True
        compared = payload.get("keepEverything")
        if isinstance(compared, dict) and not sub_agent:
            usage.keep_everything += float(compared.get("cost", 0.0))
            usage.own += float(compared.get("ownCost", 0.0))
            usage.compactions += bool(compared.get("compacted"))
            usage.compared += 1
        if sub_agent or usage.used is None or usage.size is None:
            return []
        return [
            UsageUpdate(
                session_update="usage_update",
                used=max(0, int(usage.used)),
                size=max(0, int(usage.size)),
                cost=Cost(amount=round(usage.cost, 6), currency="USD") if usage.priced else None,
                field_meta={META_KEY: _comparison(usage)} if usage.compared else None,
            )
        ]


def _comparison(usage: _SessionUsage) -> dict[str, Any]:
    return {
        "keepEverythingCost": round(usage.keep_everything, 6),
        "ownCost": round(usage.own, 6),
        "saved": round(usage.keep_everything - usage.own, 6),
        "compactions": usage.compactions,
        "calls": usage.compared,
    }


def _call_cost(completed: dict[str, Any]) -> float | None:
    """One model call's cost in USD, or ``None`` when its model is not priced."""
    predicted = completed.get("predictedCache") or {}
    cost = predicted.get("cost")
    model = predicted.get("model")
    if not cost or not isinstance(model, str):
        return None
    total = float(cost.get("total", 0.0))
    prices = prices_of(model)
    output = int((completed.get("usage") or {}).get("outputTokens", 0))
    if prices is not None:
        total += output * prices.output / 1_000_000
    return total
