"""What every replayed policy shares: the prepared transcript, and how a request is measured.

:func:`prepare` turns a :class:`~sidecar.transcripts.model.Transcript` into what the policies
replay alike:

- **Thinking.**  Recent models keep their thinking in the prompt, and logs hold it redacted or
  empty.  With ``thinking`` on, each response (``Request.response``) whose request logged
  thinking (``Request.thinking_logged``) carries one signed reasoning part of ``usage.output -
  output_text_tokens`` tokens of filler, in place of what the log kept, so every policy carries
  the same thinking; with it off, reasoning parts are dropped.
- **The user turns**, found by their first text part (:attr:`Prepared.turn_keys`), so that a
  request's "user turns in view" is counted the same way in every policy's body.
- **The canonical lowering** of each message to Anthropic Messages blocks
  (:func:`~sidecar.context.keep_everything.lower_message`, the shapes the sidecar's own
  lowering sends), which the reference policies send and which sizes what is new in each
  request.

:func:`measure` reads a body as sent: transcript tokens, user turns and tool-result tokens in
view, and the whole prompt's tokens (``cl100k`` on each block's JSON, as the cache simulator
counts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol._base import dump_wire
from protocol.entries import MessageInput, ReasoningPart, TextPart, ToolResultPart
from sidecar.context.cache_sim import AnthropicCache, Bill, OpenAICache, block_tokens
from sidecar.context.keep_everything import filler, lower_message
from sidecar.transcripts.model import Request, Transcript

__all__ = [
    "PolicyRun",
    "content_wire",
    "Prepared",
    "RequestFigures",
    "filler",
    "lower_message",
    "measure",
    "new_cache",
    "prepare",
    "user_turn_at",
]

#: The signature of synthesized thinking (a lowering sends signed reasoning back).
SYNTHETIC_SIGNATURE = "replay-synthetic-thinking"


def _is_turn(message: MessageInput) -> bool:
    """A user turn: a user message that carries no tool result."""
    return message.role == "user" and not any(
        isinstance(p, ToolResultPart) for p in message.content
    )


def _key(message: MessageInput) -> str | None:
    for part in message.content:
        if isinstance(part, TextPart) and part.text.strip():
            return part.text
    return None


@dataclass(slots=True)
class Prepared:
    """A transcript as every policy replays it."""

    transcript: Transcript
    messages: list[MessageInput]
    """The main thread with thinking synthesized (or dropped)."""
    requests: list[Request]
    """The main thread's recorded requests, in order, those with a user turn in view."""
    turn_keys: dict[str, int]
    """The first text of each user turn -> how many user turns open with it."""
    lowered: list[dict[str, Any]]
    """Each message lowered to Anthropic Messages (:func:`lower_message`)."""
    message_tokens: list[int]
    """Tokens of each lowered message (its blocks, as the simulator counts them)."""
    thinking_tokens: int = 0
    """Thinking tokens synthesized in all."""
    skipped: list[str] = field(default_factory=list)


def user_turn_at(messages: list[MessageInput], end: int) -> int | None:
    """The index of the last user turn before ``end`` (``None``: no user turn yet)."""
    for index in range(end - 1, -1, -1):
        if _is_turn(messages[index]):
            return index
    return None


def _with_thinking(message: MessageInput, tokens: int, seed: int) -> MessageInput:
    rest: list[Any] = [p for p in message.content if not isinstance(p, ReasoningPart)]
    if tokens > 0:
        thought = ReasoningPart(
            type="reasoning",
            text=filler(tokens, seed),
            signature=SYNTHETIC_SIGNATURE,
            provider="anthropic",
        )
        rest = [thought, *rest]
    if not rest:
        rest = [TextPart(type="text", text="(no text)")]
    return message.model_copy(update={"content": rest})


def prepare(transcript: Transcript, *, thinking: bool = True) -> Prepared:
    """The transcript as the policies replay it (see the module docstring)."""
    messages = list(transcript.messages)
    synthesized = 0
    answered: dict[int, int] = {}
    if thinking:
        for request in transcript.requests:
            if request.thinking_logged and request.response is not None:
                size = max(0, request.usage.output - request.output_text_tokens)
                answered[request.response] = answered.get(request.response, 0) + size
    for index, message in enumerate(messages):
        has_reasoning = any(isinstance(p, ReasoningPart) for p in message.content)
        if message.role == "assistant" and (index in answered or has_reasoning):
            size = answered.get(index, 0)
            synthesized += size
            messages[index] = _with_thinking(message, size, seed=index)
    skipped: list[str] = []
    requests = []
    for request in transcript.requests:
        if user_turn_at(messages, request.context_end) is None:
            skipped.append(f"request {request.index}: no user turn in view")
            continue
        requests.append(request)
    keys: dict[str, int] = {}
    for message in messages:
        key = _key(message) if _is_turn(message) else None
        if key is not None:
            keys[key] = keys.get(key, 0) + 1
    lowered = [lower_message(m) for m in messages]
    sizes = [sum(block_tokens(b)[1] for b in m["content"]) for m in lowered]
    return Prepared(transcript, messages, requests, keys, lowered, sizes, synthesized, skipped)


def content_wire(message: MessageInput) -> list[dict[str, Any]]:
    """The message's parts as wire JSON (what ``session/append`` and a turn take)."""
    return [dump_wire(p) for p in message.content]


@dataclass(frozen=True, slots=True)
class RequestFigures:
    """One replayed request, as a policy sent it."""

    index: int
    at: float
    bill: Bill
    cost: float
    prompt_tokens: int
    """Everything sent: tools, system and messages."""
    view_tokens: int
    """The messages (the transcript and the turn)."""
    user_turns: int
    tool_result_tokens: int


def measure(
    body: dict[str, Any], turn_keys: dict[str, int], provider: str = "anthropic"
) -> tuple[int, int, int, int]:
    """(prompt tokens, tokens of the messages, user turns in view, tool-result tokens), counted
    as the provider's simulator counts: Anthropic per content block, OpenAI per message (the
    system and developer messages are the prompt's fixed part, with the tools)."""
    if provider == "openai":
        return _measure_openai(body, turn_keys)
    fixed = sum(block_tokens(b)[1] for b in body.get("tools", []))
    system = body.get("system", [])
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    fixed += sum(block_tokens(b)[1] for b in system)
    view = results = 0
    seen: dict[str, int] = {}
    for message in body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks:
            tokens = block_tokens(block)[1]
            view += tokens
            kind = block.get("type")
            if kind == "tool_result":
                results += tokens
            elif kind == "text" and message["role"] == "user":
                _see(block.get("text", ""), turn_keys, seen)
    return fixed + view, view, sum(seen.values()), results


def _see(text: str, turn_keys: dict[str, int], seen: dict[str, int]) -> None:
    """Count the user turns ``text`` shows: itself, or those it holds whole between blank
    lines (a lowering may join consecutive user messages into one text with a blank line)."""
    if text in turn_keys:
        if seen.get(text, 0) < turn_keys[text]:
            seen[text] = seen.get(text, 0) + 1
        return
    if "\n\n" not in text:
        return
    for key, most in turn_keys.items():
        if seen.get(key, 0) >= most:
            continue
        framed = f"\n\n{text}\n\n".count(f"\n\n{key}\n\n")
        if framed:
            seen[key] = seen.get(key, 0) + min(most - seen.get(key, 0), framed)


def _measure_openai(body: dict[str, Any], turn_keys: dict[str, int]) -> tuple[int, int, int, int]:
    fixed = sum(block_tokens(b)[1] for b in body.get("tools", []))
    view = results = 0
    seen: dict[str, int] = {}
    for message in body["messages"]:
        tokens = block_tokens(message)[1]
        role = message.get("role")
        if role in ("system", "developer"):
            fixed += tokens
            continue
        view += tokens
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        if role == "tool":
            results += tokens
            continue
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_result":
                results += block_tokens(block)[1]
            elif kind == "text" and role == "user":
                _see(block.get("text", ""), turn_keys, seen)
    return fixed + view, view, sum(seen.values()), results


def new_cache(provider: str) -> AnthropicCache | OpenAICache:
    """The simulator of ``provider``'s cache (Anthropic's rules for any provider but OpenAI)."""
    return OpenAICache() if provider == "openai" else AnthropicCache()


@dataclass(slots=True)
class PolicyRun:
    """What one policy sent over a whole replay."""

    name: str
    requests: list[RequestFigures] = field(default_factory=list)
    summary_bill: Bill = field(default_factory=Bill)
    """The compaction summary calls' input."""
    summary_cost: float = 0.0
    """Their input and output, USD."""
    summaries: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def bill(self) -> Bill:
        total = Bill()
        for request in self.requests:
            total.add(request.bill)
        return total

    @property
    def input_cost(self) -> float:
        return sum(r.cost for r in self.requests)

    @property
    def cost(self) -> float:
        """The requests' input and the summary calls (input and output)."""
        return self.input_cost + self.summary_cost
