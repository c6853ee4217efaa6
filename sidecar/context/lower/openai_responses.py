"""Lowering to the OpenAI Responses API (``POST /v1/responses``, target ``openai-responses``).

Body: ``{model, max_output_tokens, instructions, input, tools, prompt_cache_key,
prompt_cache_retention}``; ``instructions`` is omitted when the system prompt is empty,
``tools`` when the catalog is, ``prompt_cache_key`` when no cache key is given,
``prompt_cache_retention`` as in :mod:`.openai_chat`.

- ``instructions`` is the system prompt (sections joined with a blank line).
- ``input`` follows the turns.  A user turn starts with one
  ``{"type": "function_call_output", "call_id", "output"}`` item per paired result (``output``
  is a string when the result is text only, else a list of ``input_text`` / ``input_image``
  items; a failed result is headed ``[tool error]``), then one
  ``{"type": "message", "role": "user", "content": [input_text | input_image]}``.  An assistant
  turn becomes, in order, ``{"type": "message", "role": "assistant", "content": "<text>"}``
  items for its runs of text and ``{"type": "function_call", "call_id", "name", "arguments"}``
  items for its paired calls.
- Assistant text is a plain string, not ``output_text`` parts: that form belongs to an output
  message replayed with the ``id`` and ``status`` of the original response, which history does
  not keep (the SDK's ``ResponseOutputMessageParam`` requires both).
- Images are ``input_image`` items with a base64 data URL and ``detail: "auto"``; types other
  than PNG, JPEG, GIF and WebP become text placeholders.
- Tools are ``{type: "function", name, description, parameters, strict: false}``: the API
  defaults to strict mode, which rejects schemas not written for it (every property required,
  ``additionalProperties: false``).
- Reasoning the Responses API produced (``provider: "openai-responses"`` with its encrypted
  ``data``) is sent back where it stands in its assistant turn, as the item it came as:
  ``{"type": "reasoning", "id", "summary": [{"type": "summary_text", "text"}...],
  "encrypted_content"}``, the same bytes in every request of the session (with ``store:
  false`` nothing else carries the model's reasoning from one request to the next, and the
  prefix stays cacheable).  A reasoning item with nothing after it in its turn is left out:
  the API wants each reasoning item followed by the item it led to.  Other reasoning
  (another provider's, or without encrypted content) is dropped.
- Cache breakpoints are not rendered: OpenAI caches prefixes automatically.  The cache key
  (the session id) is sent as ``prompt_cache_key``, so the requests of one session are routed
  to the same cache.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from protocol.entries import (
    ContentPart,
    ImagePart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sidecar.context.lower._common import (
    PART_SEPARATOR,
    Images,
    ReadBlob,
    Turn,
    build_turns,
    has_text,
    image_placeholder,
    json_arguments,
    keep_visible,
    pair_tool_calls,
    system_text,
    tool_call_text,
    tool_names,
    tool_result_text,
)
from sidecar.context.lower.openai_chat import (
    IMAGE_MEDIA_TYPES,
    TOOL_ERROR_HEADER,
    cache_retention,
    tool_output_text,
)

if TYPE_CHECKING:
    from protocol.context import ToolDefinition
    from sidecar.context.lower.prompt import Lowerable

__all__ = ["lower_openai_responses", "reasoning_item"]

Item = dict[str, Any]


def lower_openai_responses(
    prompt: Lowerable, *, read_blob: ReadBlob, max_output: int, cache_key: str | None = None
) -> dict[str, Any]:
    """The Responses API request body for ``prompt``."""
    turns = build_turns(prompt, _keep)
    renderer = _Renderer(
        Images(read_blob),
        tool_names(prompt),
        pair_tool_calls(turns) if prompt.tools else frozenset(),
    )
    items: list[Item] = []
    for turn in turns:
        items.extend(renderer.turn(turn))

    body: dict[str, Any] = {"model": prompt.model_limits.model, "max_output_tokens": max_output}
    instructions = system_text(prompt)
    if instructions:
        body["instructions"] = instructions
    body["input"] = items
    if prompt.tools:
        body["tools"] = [_tool(tool) for tool in prompt.tools]
    if cache_key is not None:
        body["prompt_cache_key"] = cache_key
        if (retention := cache_retention(prompt)) is not None:
            body["prompt_cache_retention"] = retention
    return body


def _keep(part: ContentPart) -> bool:
    if isinstance(part, ReasoningPart):
        return part.provider == "openai-responses" and part.data is not None
    return keep_visible(part)


def reasoning_item(part: ReasoningPart) -> Item:
    """A kept reasoning part as the Responses input item it came as."""
    item: Item = {"type": "reasoning"}
    if part.id is not None:
        item["id"] = part.id
    texts = part.summary if part.summary is not None else ([part.text] if part.text else [])
    item["summary"] = [{"type": "summary_text", "text": text} for text in texts]
    item["encrypted_content"] = part.data
    return item


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "function", "name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["parameters"] = copy.deepcopy(tool.parameters)
    out["strict"] = False
    return out


class _Renderer:
    def __init__(
        self, images: Images, names: dict[str, str], paired: frozenset[tuple[int, int]]
    ) -> None:
        self._images = images
        self._names = names
        self._paired = paired

    def turn(self, turn: Turn) -> list[Item]:
        return self._assistant(turn) if turn.role == "assistant" else self._user(turn)

    def _assistant(self, turn: Turn) -> list[Item]:
        items: list[Item] = []
        texts: list[str] = []

        def flush() -> None:
            if texts:
                items.append(
                    {"type": "message", "role": "assistant", "content": PART_SEPARATOR.join(texts)}
                )
                texts.clear()

        for item in turn.items:
            part = item.part
            if isinstance(part, TextPart):
                texts.append(part.text)
            elif isinstance(part, ImagePart):
                texts.append(image_placeholder(part))
            elif isinstance(part, ReasoningPart):
                flush()
                items.append(reasoning_item(part))
            elif isinstance(part, ToolCallPart):
                if item.key in self._paired:
                    flush()
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": part.call_id,
                            "name": part.name,
                            "arguments": json_arguments(part.arguments),
                        }
                    )
                else:
                    texts.append(tool_call_text(part))
        flush()
        while items and items[-1]["type"] == "reasoning":  # nothing it led to follows
            items.pop()
        return items

    def _user(self, turn: Turn) -> list[Item]:
        outputs: list[Item] = []
        content: list[Item] = []
        for item in turn.items:
            part = item.part
            if isinstance(part, TextPart):
                content.append(_input_text(part.text))
            elif isinstance(part, ImagePart):
                content.append(self._image(part))
            elif isinstance(part, ToolResultPart):
                if item.key in self._paired:
                    outputs.append(
                        {
                            "type": "function_call_output",
                            "call_id": part.call_id,
                            "output": self._output(part),
                        }
                    )
                else:
                    content.append(_input_text(tool_result_text(part, self._names)))
        if content:
            outputs.append({"type": "message", "role": "user", "content": content})
        return outputs

    def _image(self, part: ImagePart) -> Item:
        if part.media_type not in IMAGE_MEDIA_TYPES:
            return _input_text(image_placeholder(part))
        return {"type": "input_image", "image_url": self._images.data_url(part), "detail": "auto"}

    def _output(self, part: ToolResultPart) -> str | list[Item]:
        if all(isinstance(inner, TextPart) for inner in part.content):
            return tool_output_text(part)
        output: list[Item] = [_input_text(TOOL_ERROR_HEADER)] if part.is_error else []
        for inner in part.content:
            if isinstance(inner, TextPart):
                if has_text(inner.text):
                    output.append(_input_text(inner.text))
            else:
                output.append(self._image(inner))
        return output


def _input_text(text: str) -> Item:
    return {"type": "input_text", "text": text}
