"""Lowering to OpenAI Chat Completions (``POST /v1/chat/completions``, target ``openai-chat``).

Body: ``{model, max_completion_tokens, messages, tools, prompt_cache_key,
prompt_cache_retention}``; ``tools`` is omitted when empty, ``prompt_cache_key`` when no cache
key is given, ``prompt_cache_retention`` unless the breakpoints carry a retention (the
profile's ``cache.retention``, when the model accepts it) and a cache key is given (both are
OpenAI's own fields: a server that is not OpenAI's gets neither).

- The system prompt (sections joined with a blank line) is the first message,
  ``{"role": "system", "content": ...}``; omitted when empty.
- An assistant turn is one message: its texts joined with a blank line as ``content`` (left out
  when the turn holds only tool calls) and its paired calls as ``tool_calls``
  (``{id, type: "function", function: {name, arguments: <JSON string>}}``).  Unpaired calls are
  text; images (which the assistant role cannot carry) are placeholders.
- A user turn starts with one ``{"role": "tool", "tool_call_id", "content"}`` message per paired
  result (they must follow the assistant message right away).  Tool messages carry text only,
  so images in a result become ``[image: media/type]`` and a failed result is headed
  ``[tool error]``.  The rest of the turn is one user message: a string when it is text only,
  otherwise an array of ``text`` and ``image_url`` parts (base64 data URLs; types other than
  PNG, JPEG, GIF and WebP become placeholders).
- Reasoning is dropped: Chat Completions cannot take it back.
- Cache breakpoints are not rendered: OpenAI caches prefixes automatically.  The cache key
  (the session id) is sent as ``prompt_cache_key``, so the requests of one session are routed
  to the same cache (OpenAI otherwise spreads them by a hash of the first ~256 tokens).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from protocol.entries import ImagePart, TextPart, ToolCallPart, ToolResultPart
from sidecar.context.lower._common import (
    PART_SEPARATOR,
    Images,
    ReadBlob,
    Turn,
    build_turns,
    image_placeholder,
    json_arguments,
    keep_visible,
    pair_tool_calls,
    system_text,
    tool_call_text,
    tool_names,
    tool_result_body,
    tool_result_text,
)

if TYPE_CHECKING:
    from protocol.context import ToolDefinition
    from sidecar.context.lower.prompt import Lowerable

__all__ = [
    "IMAGE_MEDIA_TYPES",
    "TOOL_ERROR_HEADER",
    "cache_retention",
    "lower_openai_chat",
    "tool_output_text",
]

#: Image types the vision models accept (GIF: non-animated only).
IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
#: First line of a tool message whose result is an error (the API has no error flag).
TOOL_ERROR_HEADER = "[tool error]"

Message = dict[str, Any]


def lower_openai_chat(
    prompt: Lowerable, *, read_blob: ReadBlob, max_output: int, cache_key: str | None = None
) -> dict[str, Any]:
    """The Chat Completions request body for ``prompt``."""
    turns = build_turns(prompt, keep_visible)
    paired = pair_tool_calls(turns) if prompt.tools else frozenset()
    names = tool_names(prompt)
    images = Images(read_blob)

    messages: list[Message] = []
    system = system_text(prompt)
    if system:
        messages.append({"role": "system", "content": system})
    for turn in turns:
        if turn.role == "assistant":
            messages.append(_assistant_message(turn, paired))
        else:
            messages.extend(_user_messages(turn, paired, names, images))

    body: dict[str, Any] = {
        "model": prompt.model_limits.model,
        "max_completion_tokens": max_output,
        "messages": messages,
    }
    if prompt.tools:
        body["tools"] = [_tool(tool) for tool in prompt.tools]
    if cache_key is not None:
        body["prompt_cache_key"] = cache_key
        if (retention := cache_retention(prompt)) is not None:
            body["prompt_cache_retention"] = retention
    return body


def cache_retention(prompt: Lowerable) -> str | None:
    """The ``prompt_cache_retention`` the breakpoints ask for (the assembler gives every
    breakpoint of an OpenAI prompt the profile's ``cache.retention`` when the model accepts
    it), else ``None``."""
    for point in prompt.cache_breakpoints:
        if point.ttl == "in_memory" or point.ttl == "24h":
            return point.ttl
    return None


def tool_output_text(part: ToolResultPart) -> str:
    """A tool result as the text of a tool message (or a Responses ``output`` string)."""
    body = tool_result_body(part)
    if part.is_error:
        return f"{TOOL_ERROR_HEADER}\n{body}" if body else TOOL_ERROR_HEADER
    return body


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = copy.deepcopy(tool.parameters)
    return {"type": "function", "function": function}


def _assistant_message(turn: Turn, paired: frozenset[tuple[int, int]]) -> Message:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in turn.items:
        part = item.part
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, ImagePart):
            texts.append(image_placeholder(part))
        elif isinstance(part, ToolCallPart):
            if item.key in paired:
                calls.append(
                    {
                        "id": part.call_id,
                        "type": "function",
                        "function": {
                            "name": part.name,
                            "arguments": json_arguments(part.arguments),
                        },
                    }
                )
            else:
                texts.append(tool_call_text(part))
    message: Message = {"role": "assistant"}
    if texts:
        message["content"] = PART_SEPARATOR.join(texts)
    if calls:
        message["tool_calls"] = calls
    return message


def _user_messages(
    turn: Turn, paired: frozenset[tuple[int, int]], names: dict[str, str], images: Images
) -> list[Message]:
    tool_messages: list[Message] = []
    parts: list[dict[str, Any]] = []
    for item in turn.items:
        part = item.part
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            if part.media_type in IMAGE_MEDIA_TYPES:
                parts.append({"type": "image_url", "image_url": {"url": images.data_url(part)}})
            else:
                parts.append({"type": "text", "text": image_placeholder(part)})
        elif isinstance(part, ToolResultPart):
            if item.key in paired:
                tool_messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.call_id,
                        "content": tool_output_text(part),
                    }
                )
            else:
                parts.append({"type": "text", "text": tool_result_text(part, names)})
    if not parts:
        return tool_messages
    content: str | list[dict[str, Any]]
    if all(p["type"] == "text" for p in parts):
        content = PART_SEPARATOR.join(p["text"] for p in parts)
    else:
        content = parts
    return [*tool_messages, {"role": "user", "content": content}]
