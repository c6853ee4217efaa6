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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import ConfigDict

from protocol._base import WireModel
from protocol.context import CacheBreakpoint, ModelLimits, Section, ToolDefinition
from protocol.entries import ContentPart

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Lowerable", "LoweringPrompt", "lowering_prompt"]


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


def lowering_prompt(prompt: dict[str, Any]) -> LoweringPrompt:
    """Validate what a lowering reads of ``prompt`` (an assembled prompt or a snapshot, as
    JSON, camelCase)."""
    return LoweringPrompt.model_validate(prompt, by_alias=True, by_name=False)
