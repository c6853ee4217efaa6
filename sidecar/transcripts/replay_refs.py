"""The references a replay prices beside the sidecar, on the same requests and the same cache.

Every reference sends the same tools and system prompt as the sidecar (the recorded size: see
:mod:`sidecar.transcripts.replay`) and the transcript's messages in the canonical lowering
(:func:`~sidecar.context.keep_everything.lower_message`), consecutive messages of one role
merged into one as the API wants them.

- :func:`keep_everything`: Claude Code's way (its rules, request by request, are
  :class:`sidecar.context.keep_everything.KeepEverything`'s, which a live session's
  comparison steps through too).  The whole transcript until the request no longer
  fits the budget (the window less the output reserve), then a compaction: the summary call
  (the conversation so far plus a summary request, priced, its output at the output rate), and
  from then on a summary of :data:`SUMMARY_TOKENS` tokens plus the newest ~:data:`KEEP_TOKENS`
  tokens of the transcript, growing again until the next compaction.  Claude Code's marker
  layout: ``cache_control`` on the last system block, on the last assistant message and on the
  last message.
- :func:`agent_view`: what the agent itself sent (the recorded view: its own compactions'
  summaries and the messages after them), in the same layout: a check of the simulator
  against the recorded usage, and the per-request ratio of the provider's count to ours.
- :func:`langchain_trim`: LangChain ``trim_messages(strategy="last", start_on="human")`` over
  the history before the request's user turn, in the room the turn leaves; markers at the end
  of the tools, of the system prompt, on the message before the last and on the last (the
  ``cache`` suite's peer).  ``None`` when ``langchain-core`` is not installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sidecar.context.keep_everything import (
    CLAUDE_CODE_MARKS,
    KEEP_TOKENS,
    SUMMARY_TOKENS,
    Fixed,
    KeepEverything,
    is_result,
    merged,
    recent_cut,
)
from sidecar.transcripts.pricing import Rates, bill_cost
from sidecar.transcripts.replay_views import (
    PolicyRun,
    RequestFigures,
    measure,
    new_cache,
    user_turn_at,
)

if TYPE_CHECKING:
    from sidecar.context.cache_sim import AnthropicCache, OpenAICache
    from sidecar.transcripts.replay_views import Prepared

__all__ = [
    "CLAUDE_CODE_MARKS",
    "KEEP_TOKENS",
    "SUMMARY_TOKENS",
    "Fixed",
    "agent_view",
    "keep_everything",
    "langchain_trim",
    "recent_start",
]


def recent_start(prepared: Prepared, start: int, end: int, keep: int) -> int:
    """Where the newest ~``keep`` tokens of ``messages[start:end]`` begin: a message boundary
    that does not open on tool results (the calls they answer are kept with them)."""
    return recent_cut(prepared.lowered, prepared.message_tokens, start, end, keep)


def _is_result(prepared: Prepared, index: int) -> bool:
    return is_result(prepared.lowered[index])


def _figures(
    prepared: Prepared,
    index: int,
    at: float,
    body: dict[str, Any],
    cache: AnthropicCache | OpenAICache,
    rates: Rates,
    expire: bool,
    provider: str,
) -> RequestFigures:
    bill = cache.price(body, at if expire else None)
    prompt, view, turns, results = measure(body, prepared.turn_keys, provider)
    return RequestFigures(index, at, bill, bill_cost(bill, rates), prompt, view, turns, results)


def keep_everything(
    prepared: Prepared,
    fixed: Fixed,
    rates: Rates,
    budget: int,
    *,
    expire: bool = True,
    summary_tokens: int = SUMMARY_TOKENS,
    keep_tokens: int = KEEP_TOKENS,
) -> PolicyRun:
    """Keep everything, compact when the budget is reached (the rules:
    :mod:`sidecar.context.keep_everything`, which a live session's comparison steps through
    too)."""
    run = PolicyRun("keep everything, compact at the window")
    cache = new_cache(fixed.provider)
    reference = KeepEverything(
        fixed, budget, summary_tokens=summary_tokens, keep_tokens=keep_tokens
    )
    for request in prepared.requests:
        step = reference.step(
            prepared.lowered, prepared.message_tokens, request.context_end, request.index
        )
        if step.summary_call is not None:
            bill = cache.price(step.summary_call, request.at if expire else None)
            run.summary_bill.add(bill)
            run.summary_cost += bill_cost(bill, rates) + summary_tokens * rates.output / 1e6
            run.summaries += 1
        run.requests.append(
            _figures(
                prepared, request.index, request.at, step.body, cache, rates, expire, fixed.provider
            )
        )
    return run


def agent_view(prepared: Prepared, fixed: Fixed, rates: Rates, *, expire: bool = True) -> PolicyRun:
    """What the agent sent, as recorded (its own compactions), in Claude Code's layout."""
    run = PolicyRun("the agent's own view, simulated")
    cache = new_cache(fixed.provider)
    for request in prepared.requests:
        head = []
        if request.summary:
            head = [{"role": "user", "content": [{"type": "text", "text": request.summary}]}]
        start = min(request.view_start, request.context_end)
        view = merged([*head, *prepared.lowered[start : request.context_end]])
        body = fixed.body(view, CLAUDE_CODE_MARKS)
        run.requests.append(
            _figures(
                prepared, request.index, request.at, body, cache, rates, expire, fixed.provider
            )
        )
    return run


def langchain_trim(
    prepared: Prepared, fixed: Fixed, rates: Rates, budget: int, *, expire: bool = True
) -> PolicyRun | None:
    """LangChain ``trim_messages`` (see the module docstring); ``None`` without LangChain."""
    try:
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, trim_messages
    except ImportError:
        return None
    run = PolicyRun("LangChain trim_messages")
    cache = new_cache(fixed.provider)
    fixed_tokens = measure(fixed.body([], ()), {}, fixed.provider)[0]
    history: list[Any] = []
    for index, message in enumerate(prepared.lowered):
        meta = {"i": index}
        if message["role"] == "assistant":
            history.append(AIMessage(content="", additional_kwargs=meta))
        elif _is_result(prepared, index):
            call = next(b["tool_use_id"] for b in message["content"] if "tool_use_id" in b)
            history.append(ToolMessage(content="", tool_call_id=call, additional_kwargs=meta))
        else:
            history.append(HumanMessage(content="", additional_kwargs=meta))

    def count(batch: list[Any]) -> int:
        return sum(prepared.message_tokens[m.additional_kwargs["i"]] for m in batch)

    for request in prepared.requests:
        end = request.context_end
        turn = user_turn_at(prepared.messages, end)
        assert turn is not None
        room = budget - fixed_tokens - sum(prepared.message_tokens[turn:end])
        kept: list[Any] = []
        if room > 0 and turn > 0:
            kept = trim_messages(
                history[:turn],
                max_tokens=room,
                token_counter=count,
                strategy="last",
                start_on="human",
            )
        indices = [m.additional_kwargs["i"] for m in kept] + list(range(turn, end))
        view = merged([prepared.lowered[i] for i in indices])
        body = fixed.body(view, ("tools", "system", "previous", "last"))
        run.requests.append(
            _figures(
                prepared, request.index, request.at, body, cache, rates, expire, fixed.provider
            )
        )
    return run
