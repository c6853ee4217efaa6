"""Lowering for endpoints without a system role (target ``system-as-user``).

Modelled on thndrs' ``lower_to_umans_messages``.  Body: ``{model, max_tokens, messages}`` in
the Anthropic Messages form, every ``content`` a plain string (text only):

- the system prompt (sections joined with a blank line) is the first user message;
- assistant text becomes assistant messages; tool calls become assistant text
  ``[tool call: name {json args}]``;
- settled tool output becomes user text ``[tool: name]\\n<output>`` (``[tool: name (error)]``
  for a failed call), the name looked up from the call;
- images become ``[image: media/type]`` placeholders; reasoning is dropped;
- the parts of one side are joined with a blank line, so roles alternate; the system prompt
  merges with a first user turn (and stands alone before a first assistant turn; without a
  system prompt a :data:`~._common.CONTINUATION_NOTE` opens such a window); the current user
  turn is last.

Cache breakpoints are not rendered: string contents cannot carry markers, and endpoints of this
kind do not take them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.entries import ImagePart, TextPart, ToolCallPart, ToolResultPart
from sidecar.context.lower._common import (
    CONTINUATION_NOTE,
    PART_SEPARATOR,
    ReadBlob,
    TurnItem,
    build_turns,
    image_placeholder,
    keep_visible,
    system_text,
    tool_call_text,
    tool_names,
    tool_result_text,
)

if TYPE_CHECKING:
    from sidecar.context.lower.prompt import Lowerable

__all__ = ["lower_system_as_user"]


def lower_system_as_user(
    prompt: Lowerable, *, read_blob: ReadBlob, max_output: int, cache_key: str | None = None
) -> dict[str, Any]:
    """The text-only, system-less request body for ``prompt`` (``read_blob`` is not needed:
    images are never sent)."""
    names = tool_names(prompt)
    messages: list[dict[str, Any]] = []
    system = system_text(prompt)
    if system:
        messages.append({"role": "user", "content": system})
    for turn in build_turns(prompt, keep_visible):
        text = PART_SEPARATOR.join(_text(item, names) for item in turn.items)
        if messages and messages[-1]["role"] == turn.role:
            messages[-1]["content"] += PART_SEPARATOR + text
        else:
            messages.append({"role": turn.role, "content": text})
    if messages and messages[0]["role"] == "assistant":
        messages.insert(0, {"role": "user", "content": CONTINUATION_NOTE})
    return {"model": prompt.model_limits.model, "max_tokens": max_output, "messages": messages}


def _text(item: TurnItem, names: dict[str, str]) -> str:
    part = item.part
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ImagePart):
        return image_placeholder(part)
    if isinstance(part, ToolCallPart):
        return tool_call_text(part)
    if isinstance(part, ToolResultPart):
        return tool_result_text(part, names)
    raise AssertionError(f"reasoning is filtered out before rendering: {part.type}")
