"""The references a replay prices beside the sidecar, on the same requests and the same cache.

Every reference sends the same tools and system prompt as the sidecar (the recorded size: see
:mod:`sidecar.transcripts.replay`) and the transcript's messages in the canonical lowering
(:func:`~sidecar.transcripts.replay_views.lower_message`), consecutive messages of one role
merged into one as the API wants them.

- :func:`keep_everything`: Claude Code's way.  The whole transcript until the request no longer
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

from sidecar.transcripts.cache_sim import AnthropicCache, Bill
from sidecar.transcripts.pricing import Rates, bill_cost
from sidecar.transcripts.replay_views import (
    PolicyRun,
    RequestFigures,
    filler,
    measure,
    user_turn_at,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sidecar.transcripts.replay_views import Prepared

__all__ = [
    "KEEP_TOKENS",
    "SUMMARY_TOKENS",
    "Fixed",
    "agent_view",
    "keep_everything",
    "langchain_trim",
    "recent_start",
]

SUMMARY_TOKENS = 2_000
KEEP_TOKENS = 20_000
SUMMARY_ASK = (
    "Your task is to create a detailed summary of the conversation so far, paying close "
    "attention to the user's explicit requests and your previous actions."
)


class Fixed:
    """What every request sends before its messages: the model, tools and system blocks."""

    def __init__(
        self, model: str, tools: list[dict[str, Any]], system: list[dict[str, Any]], ttl: str
    ) -> None:
        self.model = model
        self.tools = [_bare(t) for t in tools]
        self.system = [_bare(s) for s in system]
        self.control: dict[str, Any] = (
            {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}
        )

    def body(self, messages: list[dict[str, Any]], marks: Sequence[str]) -> dict[str, Any]:
        """A request: ``marks`` among ``tools``, ``system``, ``assistant`` (the last assistant
        message), ``previous`` (the message before the last) and ``last``."""
        tools = list(self.tools)
        system = list(self.system)
        if "tools" in marks and tools:
            tools[-1] = {**tools[-1], "cache_control": self.control}
        if "system" in marks and system:
            system[-1] = {**system[-1], "cache_control": self.control}
        out = [{"role": m["role"], "content": list(m["content"])} for m in messages]
        indices: list[int] = []
        if "assistant" in marks:
            last = [i for i, m in enumerate(out) if m["role"] == "assistant"]
            indices += last[-1:]
        if "previous" in marks and len(out) >= 2:
            indices.append(len(out) - 2)
        if "last" in marks and out:
            indices.append(len(out) - 1)
        for index in dict.fromkeys(indices):
            _mark(out[index]["content"], self.control)
        body: dict[str, Any] = {"model": self.model, "max_tokens": 1, "messages": out}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = tools
        return body


def _bare(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _mark(blocks: list[dict[str, Any]], control: dict[str, Any]) -> None:
    """A marker on the last block that may take one (thinking blocks may not)."""
    for index in range(len(blocks) - 1, -1, -1):
        if blocks[index].get("type") not in ("thinking", "redacted_thinking"):
            blocks[index] = {**blocks[index], "cache_control": control}
            return


def merged(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive messages of one role as one message."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if out and out[-1]["role"] == message["role"]:
            out[-1]["content"] = [*out[-1]["content"], *message["content"]]
        else:
            out.append({"role": message["role"], "content": list(message["content"])})
    return out


def _summary(tokens: int, seed: int) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": filler(tokens, seed)}]}


def _ask() -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": SUMMARY_ASK}]}


def recent_start(prepared: Prepared, start: int, end: int, keep: int) -> int:
    """Where the newest ~``keep`` tokens of ``messages[start:end]`` begin: a message boundary
    that does not open on tool results (the calls they answer are kept with them)."""
    cut, kept = end, 0
    while cut > start and kept < keep:
        cut -= 1
        kept += prepared.message_tokens[cut]
    while cut > start and _is_result(prepared, cut):
        cut -= 1
    return cut


def _is_result(prepared: Prepared, index: int) -> bool:
    return any(b.get("type") == "tool_result" for b in prepared.lowered[index]["content"])


def _figures(
    prepared: Prepared,
    index: int,
    at: float,
    body: dict[str, Any],
    cache: AnthropicCache,
    rates: Rates,
    expire: bool,
) -> RequestFigures:
    bill = cache.price(body, at if expire else None)
    prompt, view, turns, results = measure(body, prepared.turn_keys)
    return RequestFigures(index, at, bill, bill_cost(bill, rates), prompt, view, turns, results)


CLAUDE_CODE_MARKS = ("system", "assistant", "last")


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
    """Keep everything, compact when the budget is reached (see the module docstring)."""
    run = PolicyRun("keep everything, compact at the window")
    cache = AnthropicCache()
    fixed_tokens = measure(fixed.body([], ()), {})[0]
    start, summary = 0, None
    for request in prepared.requests:
        end = request.context_end
        start = min(start, end)
        size = fixed_tokens + sum(prepared.message_tokens[start:end])
        size += summary_tokens if summary is not None else 0
        if size > budget:  # compact first, as Claude Code does before it sends
            before = merged([*([summary] if summary else []), *prepared.lowered[start:end]])
            ask = fixed.body([*before, _ask()], CLAUDE_CODE_MARKS)
            bill = cache.price(ask, request.at if expire else None)
            run.summary_bill.add(bill)
            run.summary_cost += bill_cost(bill, rates) + summary_tokens * rates.output / 1e6
            run.summaries += 1
            start = recent_start(prepared, start, end, keep_tokens)
            summary = _summary(summary_tokens, request.index)
        view = merged([*([summary] if summary else []), *prepared.lowered[start:end]])
        body = fixed.body(view, CLAUDE_CODE_MARKS)
        run.requests.append(
            _figures(prepared, request.index, request.at, body, cache, rates, expire)
        )
    return run


def agent_view(prepared: Prepared, fixed: Fixed, rates: Rates, *, expire: bool = True) -> PolicyRun:
    """What the agent sent, as recorded (its own compactions), in Claude Code's layout."""
    run = PolicyRun("the agent's own view, simulated")
    cache = AnthropicCache()
    for request in prepared.requests:
        head = []
        if request.summary:
            head = [{"role": "user", "content": [{"type": "text", "text": request.summary}]}]
        start = min(request.view_start, request.context_end)
        view = merged([*head, *prepared.lowered[start : request.context_end]])
        body = fixed.body(view, CLAUDE_CODE_MARKS)
        run.requests.append(
            _figures(prepared, request.index, request.at, body, cache, rates, expire)
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
    cache = AnthropicCache()
    fixed_tokens = measure(fixed.body([], ()), {})[0]
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
            _figures(prepared, request.index, request.at, body, cache, rates, expire)
        )
    return run


def total_bill(runs: Sequence[RequestFigures]) -> Bill:
    out = Bill()
    for figures in runs:
        out.add(figures.bill)
    return out
