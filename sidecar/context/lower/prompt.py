"""What a lowering reads of an assembled prompt, and the model that validates only that.

Every lowering reads five fields of an :class:`~protocol.context.AssembledPrompt`: its system
sections, its messages' roles and content, its tools, its cache breakpoints and its model
limits.  :class:`Lowerable` says so (an ``AssembledPrompt`` is one); :class:`LoweringPrompt`
validates just that from an assembled prompt or a snapshot as JSON, and ignores the rest.

Validating the whole ``AssembledPrompt`` before each lowering, as was done, also built a model
for every ledger item and every message's provenance, none of them read: half the objects of
a run round's lowering, alive until its body was built (``make soak``: about a fifth of
what each young collection walked), and took half of ``lower_result``'s time (6.7 -> 3.1 ms
for a 500-message prompt).

A session's prompts repeat its messages: they are its transcript groups' own dicts, shared by
every assembly that shows them (``sidecar.context.transcript``).  With a
:data:`LoweringMemo`, a message dict lowered before is not validated again: its model is
taken from the memo, by the dict's identity.  Validating every message was seven objects per
message alive through the lowering — two thirds of what an assembly allocates (3,450 objects
for a 321-message prompt, 2,378 of them these) — and with ``make soak``'s large sessions it
was what made most young collections.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import ConfigDict

from protocol._base import WireModel
from protocol.context import CacheBreakpoint, ModelLimits, Section, ToolDefinition
from protocol.entries import ContentPart

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Lowerable", "LoweringMemo", "LoweringPrompt", "lowering_prompt"]


class _Message(Protocol):
    @property
    def role(self) -> Literal["user", "assistant"]: ...
    @property
    def content(self) -> list[ContentPart]: ...


class Lowerable(Protocol):
    """The fields a lowering reads (an ``AssembledPrompt`` has them)."""

    @property
    def system(self) -> Sequence[Section]: ...
    @property
    def messages(self) -> Sequence[_Message]: ...
    @property
    def tools(self) -> Sequence[ToolDefinition]: ...
    @property
    def cache_breakpoints(self) -> Sequence[CacheBreakpoint]: ...
    @property
    def model_limits(self) -> ModelLimits: ...


class _LoweringMessage(WireModel):
    model_config = ConfigDict(extra="ignore")  # tokens, provenance: not read

    role: Literal["user", "assistant"]
    content: list[ContentPart]


class LoweringPrompt(WireModel):
    """An assembled prompt's fields that a lowering reads; the others are ignored."""

    model_config = ConfigDict(extra="ignore")  # ledger, dashboard, diagnostics, ...: not read

    system: list[Section]
    messages: list[_LoweringMessage]
    tools: list[ToolDefinition]
    cache_breakpoints: list[CacheBreakpoint]
    model_limits: ModelLimits


LoweringMemo = dict[int, tuple[dict[str, Any], _LoweringMessage]]
"""The messages of a session's last lowered prompt, validated, by their dict's identity (the
dict is held, so its identity is not reused).  Sound because a message dict is never changed
once in a prompt: transcript groups hand theirs out read-only."""


def lowering_prompt(prompt: dict[str, Any], memo: LoweringMemo | None = None) -> LoweringPrompt:
    """Validate what a lowering reads of ``prompt`` (an assembled prompt or a snapshot, as
    JSON, camelCase); with ``memo``, a message validated for the memo's last prompt is taken
    from it, and the memo then holds this prompt's messages."""
    if memo is None:
        return LoweringPrompt.model_validate(prompt, by_alias=True, by_name=False)
    rest = LoweringPrompt.model_validate({**prompt, "messages": []}, by_alias=True, by_name=False)
    kept: LoweringMemo = {}
    messages: list[_LoweringMessage] = []
    for message in prompt["messages"]:
        hit = memo.get(id(message))  # the memo holds the dict: the same id is the same dict
        if hit is None:
            hit = (message, _LoweringMessage.model_validate(message, by_alias=True, by_name=False))
        kept[id(message)] = hit
        messages.append(hit[1])
    memo.clear()
    memo.update(kept)
    return LoweringPrompt.model_construct(
        rest.model_fields_set,
        system=rest.system,
        messages=messages,
        tools=rest.tools,
        cache_breakpoints=rest.cache_breakpoints,
        model_limits=rest.model_limits,
    )
