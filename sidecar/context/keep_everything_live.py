"""What a live session's model calls would have cost under keep-everything-then-compact.

After each of a session's own model calls (a run's rounds, an ACP prompt's: both go through
the run loop), :meth:`KeepEverythingMeter.price` prices two requests with the same reference
cache simulator (:mod:`sidecar.context.cache_sim`, entries expiring their TTL from the real
time of each call):

- the **counterfactual**: the request keep-everything-then-compact would have sent at that
  moment (:class:`~sidecar.context.keep_everything.KeepEverything`, the rules the replay's
  reference uses: the whole transcript — every message the session's history holds, in the
  canonical lowering — after the same tools and system prompt as the call sent, until the
  budget, the window less the output reserve, is reached; then a priced summary call and a
  2,000-token summary plus the newest ~20,000 tokens; Claude Code's marker layout at the TTL
  of the call's own last marker; for OpenAI, the call's own ``prompt_cache_retention``), its
  summary call included;
- the **call as sent** (``own``): the body the sidecar lowered, priced the same way, so that
  the two figures differ only by the policy, not by the pricing model.  The sidecar's own
  prediction (``predictedCache``) knows no time; with pauses past the TTL the like-for-like
  figure is the higher one.

Both add the call's output tokens at the output rate (the model answered the same), and a
compaction adds its summary call's output of 2,000 tokens.  Figures are per call and summed
for the session as far as this process saw it (:class:`KeepEverythingMeter` lives in the
session's :class:`~sidecar.context.session_memory.SessionMemory`; a new process, or a memory
dropped for room, starts again from a cold cache and zero).

Only Anthropic Messages bodies (``anthropic-messages``) and OpenAI Chat Completions bodies
(``openai-chat``, OpenAI's automatic prefix cache) are simulated, and only for a model the
price table lists: other calls carry no comparison (``None``).  A model, not a bill: see
``docs/guide/cache.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from protocol._base import dump_wire, parse_wire
from protocol.context import ModelLimits
from protocol.entries import MessageEntry, MessageInput
from protocol.runs import KeepEverythingCall, KeepEverythingTotals
from sidecar.context.cache_sim import AnthropicCache, Bill, OpenAICache
from sidecar.context.keep_everything import (
    KEEP_TOKENS,
    SUMMARY_TOKENS,
    Fixed,
    KeepEverything,
    lower_message,
    message_tokens,
)
from sidecar.context.limits import available_input, prices_of

if TYPE_CHECKING:
    from sidecar.context.limits import Prices
    from sidecar.store.sessions import SessionStore

__all__ = ["SIMULATED_TARGETS", "KeepEverythingMeter", "bill_cost", "compare_call", "fixed_of"]

#: The request bodies the reference simulator prices, and its provider for each.
SIMULATED_TARGETS = {"anthropic-messages": "anthropic", "openai-chat": "openai"}
_PAGE = 1_000
MILLION = 1_000_000


def bill_cost(bill: Bill, prices: Prices) -> float:
    """A simulated request's input side at ``prices``, USD."""
    return bill.priced_at(
        prices.input, prices.cache_write_5m, prices.cache_write_1h, prices.cache_read
    )


def fixed_of(body: dict[str, Any], provider: str) -> Fixed:
    """The tools and system prompt ``body`` sent, as the reference sends them; its markers'
    TTL is that of the body's last marker (Anthropic: the moving tail's; ``5m`` without)."""
    model = str(body.get("model", ""))
    tools = [t for t in body.get("tools", []) if isinstance(t, dict)]
    if provider == "openai":
        system: list[dict[str, Any]] = []
        for message in body.get("messages", []):
            if message.get("role") not in ("system", "developer"):
                break
            content = message.get("content")
            if isinstance(content, str):
                system.append({"type": "text", "text": content})
            elif isinstance(content, list):
                system += [b for b in content if isinstance(b, dict)]
        return Fixed(model, tools, system, "5m", provider="openai")
    raw = body.get("system", [])
    system = [{"type": "text", "text": raw}] if isinstance(raw, str) else list(raw)
    return Fixed(model, tools, system, _last_ttl(body), provider="anthropic")


def _last_ttl(body: dict[str, Any]) -> str:
    ttl = "5m"
    blocks: list[Any] = [*body.get("tools", [])]
    system = body.get("system", [])
    blocks += system if isinstance(system, list) else []
    for message in body.get("messages", []):
        content = message.get("content")
        blocks += content if isinstance(content, list) else []
    for block in blocks:
        control = block.get("cache_control") if isinstance(block, dict) else None
        if isinstance(control, dict):
            ttl = "1h" if control.get("ttl") == "1h" else "5m"
    return ttl


@dataclass(slots=True)
class KeepEverythingMeter:
    """One session's counterfactual: its transcript lowered so far, the reference's state,
    the two simulated caches and the totals."""

    provider: str
    lowered: list[dict[str, Any]] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    seq: int = 0
    """The newest history entry lowered."""
    reference: KeepEverything | None = None
    cache: AnthropicCache | OpenAICache = field(default_factory=AnthropicCache)
    own_cache: AnthropicCache | OpenAICache = field(default_factory=AnthropicCache)
    totals: KeepEverythingTotals = field(
        default_factory=lambda: KeepEverythingTotals(calls=0, cost=0.0, own_cost=0.0)
    )
    summary_tokens: int = SUMMARY_TOKENS
    keep_tokens: int = KEEP_TOKENS

    @classmethod
    def for_provider(cls, provider: str) -> KeepEverythingMeter:
        if provider == "openai":
            return cls(provider, cache=OpenAICache(), own_cache=OpenAICache())
        return cls(provider)

    def catch_up(self, sessions: SessionStore, session_id: str) -> None:
        """Lower the messages the session's history gained since the last call (blocking)."""
        while True:
            page = sessions.read(session_id, after_seq=self.seq, before_seq=None, limit=_PAGE)
            for record in page.entries:
                self.seq = int(record["seq"])
                if record.get("kind") == "message":
                    self.add(parse_wire(MessageEntry, record))
            if not page.has_more or not page.entries:
                return

    def add(self, message: MessageInput) -> None:
        """A message of the transcript, in order."""
        lowered = lower_message(message)
        self.lowered.append(lowered)
        self.sizes.append(message_tokens(lowered))

    def price(
        self,
        body: dict[str, Any],
        limits: dict[str, Any],
        *,
        at: float,
        output_tokens: int,
    ) -> dict[str, Any] | None:
        """The comparison for one call that sent ``body`` at ``at`` (seconds since the epoch)
        and answered ``output_tokens``, with the assembly's ``limits`` (``modelLimits``), as
        wire JSON (:class:`~protocol.runs.KeepEverythingCall`); ``None`` for a model the
        price table does not list."""
        model = str(body.get("model", ""))
        prices = prices_of(model)
        if prices is None or not self.lowered:
            return None
        fixed = fixed_of(body, self.provider)
        budget = available_input(parse_wire(ModelLimits, limits))
        if self.reference is None:
            self.reference = KeepEverything(
                fixed, budget, summary_tokens=self.summary_tokens, keep_tokens=self.keep_tokens
            )
        else:  # the tools, system prompt or model may change between calls: the state stays
            self.reference.fixed, self.reference.budget = fixed, budget
            self.reference.fixed_tokens = fixed.tokens()
        step = self.reference.step(self.lowered, self.sizes, len(self.lowered), self.totals.calls)
        retention = body.get("prompt_cache_retention")
        if retention is not None:  # OpenAI: the lifetime the call asked for, asked alike
            for sent in (step.body, step.summary_call):
                if sent is not None:
                    sent["prompt_cache_retention"] = retention
        output = output_tokens * prices.output / MILLION
        cost = output
        if step.summary_call is not None:
            summary = self.cache.price(step.summary_call, at)
            cost += bill_cost(summary, prices) + self.summary_tokens * prices.output / MILLION
        bill = self.cache.price(step.body, at)
        cost += bill_cost(bill, prices)
        own = self.own_cache.price(body, at)
        own_cost = bill_cost(own, prices) + output
        totals = self.totals
        self.totals = KeepEverythingTotals(
            calls=totals.calls + 1,
            cost=totals.cost + cost,
            own_cost=totals.own_cost + own_cost,
            compactions=totals.compactions + (step.summary_call is not None),
        )
        call = KeepEverythingCall(
            cost=_round(cost),
            tokens=bill.total,
            compacted=step.summary_call is not None,
            own_cost=_round(own_cost),
            own_tokens=own.total,
            at=at,
            session=self.totals.model_copy(
                update={"cost": _round(self.totals.cost), "own_cost": _round(self.totals.own_cost)}
            ),
        )
        return dump_wire(call)


def _round(usd: float) -> float:
    """USD to a millionth of a cent (the figures are a model: no need for more)."""
    return math.floor(usd * 1e8 + 0.5) / 1e8


def compare_call(
    meter: KeepEverythingMeter | None,
    sessions: SessionStore,
    session_id: str,
    target: str,
    body: dict[str, Any],
    limits: dict[str, Any],
    *,
    at: float,
    output_tokens: int,
) -> tuple[KeepEverythingMeter | None, dict[str, Any] | None]:
    """The session's meter (``meter``, or a new one when there was none or the provider
    changed) after pricing one call of a ``target`` body, and the call's comparison (``None``
    when the body or the model is not simulated).  Blocking: call from a worker thread."""
    provider = SIMULATED_TARGETS.get(target)
    if provider is None:
        return meter, None
    if meter is None or meter.provider != provider:
        meter = KeepEverythingMeter.for_provider(provider)
    meter.catch_up(sessions, session_id)
    return meter, meter.price(body, limits, at=at, output_tokens=output_tokens)
