"""Lowering to the Gemini API ``generateContent`` REST body (target ``gemini``).

Body (``GenerateContentRequest`` JSON, camelCase): ``{systemInstruction: {parts: [{text}]},
contents: [{role, parts}], tools: [{functionDeclarations: [...]}], generationConfig:
{maxOutputTokens}}``.  The model is not in the body: it is in the URL
(``models/{model}:generateContent``).  ``systemInstruction`` and ``tools`` are omitted when
empty.

- ``systemInstruction`` is one text part holding the system prompt (sections joined with a
  blank line).
- ``contents`` alternate ``user`` / ``model`` (see ``_common``) and open with a user turn (a
  :data:`~._common.CONTINUATION_NOTE` is put first when the window opens on a model turn).
- Text -> ``{text}`` (empty text is skipped); image -> ``{inlineData: {mimeType, data}}`` for
  PNG, JPEG, WebP, HEIC and HEIF, any other type a text placeholder.
- A paired tool call -> ``{functionCall: {name, args}}``, with the ``thoughtSignature`` it came
  with when history kept one (Gemini 3 refuses a call of the current turn without its
  signature; the provider puts Google's stand-in only on calls history has none for); a
  paired result -> ``{functionResponse: {name, response}}`` with the name looked up from the
  call it answers
  (results only carry the call id) and ``response`` ``{"output": text}``, or ``{"error": text}``
  for a failed result (the keys the API documents).  Function responses open their user turn;
  images of a result are a placeholder in its text and an ``inlineData`` part right after the
  turn's function responses.  Unpaired calls and results are text.
- Reasoning is dropped: thought summaries are not replayed; the signatures that matter travel
  with the calls they came with.
- Tools: one ``{functionDeclarations: [{name, description, parameters}]}``; ``parameters`` is
  the tool's JSON Schema converted by :mod:`.gemini_schema` and omitted for a tool without
  arguments.
- Cache breakpoints are not rendered: Gemini caches implicitly, and its implicit cache has no
  lifetime to ask for (only explicit ``cachedContents`` objects take a TTL; they are not used).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from protocol.entries import ImagePart, TextPart, ToolCallPart, ToolResultPart
from sidecar.context.lower._common import (
    CONTINUATION_NOTE,
    Images,
    ReadBlob,
    Turn,
    build_turns,
    image_placeholder,
    keep_visible,
    pair_tool_calls,
    system_text,
    tool_call_text,
    tool_names,
    tool_result_body,
    tool_result_text,
)
from sidecar.context.lower.gemini_schema import function_parameters

if TYPE_CHECKING:
    from protocol.context import ToolDefinition
    from sidecar.context.lower.prompt import Lowerable

__all__ = ["IMAGE_MEDIA_TYPES", "lower_gemini"]

#: Image types the Gemini API accepts inline.
IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"})

Part = dict[str, Any]
_ROLES = {"user": "user", "assistant": "model"}


def lower_gemini(
    prompt: Lowerable, *, read_blob: ReadBlob, max_output: int, cache_key: str | None = None
) -> dict[str, Any]:
    """The ``generateContent`` request body for ``prompt``."""
    turns = build_turns(prompt, keep_visible)
    renderer = _Renderer(
        Images(read_blob),
        tool_names(prompt),
        pair_tool_calls(turns) if prompt.tools else frozenset(),
    )
    contents: list[dict[str, Any]] = []
    if turns and turns[0].role == "assistant":
        contents.append({"role": "user", "parts": [{"text": CONTINUATION_NOTE}]})
    for turn in turns:
        contents.append({"role": _ROLES[turn.role], "parts": renderer.parts(turn)})

    body: dict[str, Any] = {}
    system = system_text(prompt)
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    body["contents"] = contents
    if prompt.tools:
        body["tools"] = [{"functionDeclarations": [_declaration(t) for t in prompt.tools]}]
    body["generationConfig"] = {"maxOutputTokens": max_output}
    return body


def _declaration(tool: ToolDefinition) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    parameters = function_parameters(tool.parameters)
    if parameters is not None:
        out["parameters"] = parameters
    return out


class _Renderer:
    def __init__(
        self, images: Images, names: dict[str, str], paired: frozenset[tuple[int, int]]
    ) -> None:
        self._images = images
        self._names = names
        self._paired = paired

    def parts(self, turn: Turn) -> list[Part]:
        responses: list[Part] = []
        response_images: list[Part] = []
        parts: list[Part] = []
        for item in turn.items:
            part = item.part
            if isinstance(part, TextPart):
                parts.append({"text": part.text})
            elif isinstance(part, ImagePart):
                parts.append(self._image(part) if turn.role == "user" else _placeholder(part))
            elif isinstance(part, ToolCallPart):
                if item.key in self._paired:
                    call = {"name": part.name, "args": copy.deepcopy(part.arguments)}
                    if part.signature is None:
                        parts.append({"functionCall": call})
                    else:
                        parts.append({"functionCall": call, "thoughtSignature": part.signature})
                else:
                    parts.append({"text": tool_call_text(part)})
            elif isinstance(part, ToolResultPart):
                if item.key in self._paired:
                    responses.append(self._response(part))
                    response_images.extend(
                        self._image(inner)
                        for inner in part.content
                        if isinstance(inner, ImagePart) and inner.media_type in IMAGE_MEDIA_TYPES
                    )
                else:
                    parts.append({"text": tool_result_text(part, self._names)})
        return [*responses, *response_images, *parts]

    def _image(self, part: ImagePart) -> Part:
        if part.media_type not in IMAGE_MEDIA_TYPES:
            return _placeholder(part)
        return {"inlineData": {"mimeType": part.media_type, "data": self._images.base64(part)}}

    def _response(self, part: ToolResultPart) -> Part:
        key = "error" if part.is_error else "output"
        response = {"name": self._names[part.call_id], "response": {key: tool_result_body(part)}}
        return {"functionResponse": response}


def _placeholder(part: ImagePart) -> Part:
    return {"text": image_placeholder(part)}
