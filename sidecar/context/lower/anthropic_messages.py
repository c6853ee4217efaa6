"""Lowering to the Anthropic Messages API (``POST /v1/messages``, target ``anthropic-messages``).

Body: ``{model, max_tokens, system: [text blocks], messages, tools}``; ``system`` and ``tools``
are omitted when empty.

System prompt
    One text block per section (blank sections skipped), so cache markers and provenance follow
    section boundaries.  Every block but the last ends with the blank-line separator, so the
    blocks read back to back are exactly the joined system prompt the other targets send.

Messages
    Turns alternate (see ``_common``); the first is a user turn (a
    :data:`~._common.CONTINUATION_NOTE` is put first when the window opens on an assistant
    turn).  Text -> ``text`` (whitespace-only text is skipped: the API rejects it); image ->
    base64 ``image`` for JPEG, PNG, GIF and WebP, any other type a text placeholder; Anthropic's
    reasoning goes back as it came, in its place: signed -> ``thinking {thinking, signature}``,
    redacted -> ``redacted_thinking {data}`` (the API wants a tool-use turn's thinking blocks
    back unchanged, and checks the signatures); unsigned reasoning and another provider's
    cannot be replayed and are dropped; a paired tool call -> ``tool_use {id, name, input}``;
    a paired result -> ``tool_result {tool_use_id, content, is_error}`` placed first in its
    user message;
    unpaired calls and results -> text.  Tool-use ids must match ``^[A-Za-z0-9_-]+$``: any
    other character becomes ``_``, the same way on both sides.

Cache markers (``cache_control``)
    A breakpoint with a TTL becomes ``{"type": "ephemeral"}`` (5 minutes, the default) or
    ``{"type": "ephemeral", "ttl": "1h"}``; a ``null`` TTL (or an OpenAI retention, when a
    prompt assembled for OpenAI is lowered here) places nothing.  ``tools`` marks the
    last tool, ``system`` the last system block, ``message`` the last block rendered from
    ``messages[messageIndex]`` that may carry a marker (thinking blocks may not), else the
    nearest such block before it.  At most :data:`MAX_CACHE_MARKERS` are placed (a fifth is a
    400): the tools and system markers are kept first, then the latest message markers.  A
    longer TTL must precede a shorter one, so a ``1h`` marker after a ``5m`` one is sent as
    ``5m`` (the assembler's breakpoints already are in that order: ``cache_ttl``; this keeps
    any other prompt valid).
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any, Literal

from protocol.entries import (
    ContentPart,
    ImagePart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sidecar.context.lower._common import (
    CONTINUATION_NOTE,
    SYSTEM_SEPARATOR,
    Images,
    ReadBlob,
    TurnItem,
    build_turns,
    has_text,
    image_placeholder,
    pair_tool_calls,
    system_texts,
    tool_call_text,
    tool_names,
    tool_result_text,
)

if TYPE_CHECKING:
    from protocol.context import ToolDefinition
    from sidecar.context.lower.prompt import Lowerable

__all__ = ["IMAGE_MEDIA_TYPES", "MAX_CACHE_MARKERS", "lower_anthropic_messages"]

#: Image types the Messages API accepts in base64 image blocks.
IMAGE_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
#: The API allows at most four cache breakpoints per request.
MAX_CACHE_MARKERS = 4

Ttl = Literal["5m", "1h"]
Block = dict[str, Any]
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")


def lower_anthropic_messages(
    prompt: Lowerable, *, read_blob: ReadBlob, max_output: int, cache_key: str | None = None
) -> dict[str, Any]:
    """The Messages API request body for ``prompt``."""
    turns = build_turns(prompt, _keep)
    renderer = _Renderer(
        Images(read_blob),
        tool_names(prompt),
        pair_tool_calls(turns) if prompt.tools else frozenset(),
    )
    messages: list[dict[str, Any]] = []
    if turns and turns[0].role == "assistant":
        messages.append({"role": "user", "content": [_text(CONTINUATION_NOTE)]})
    for turn in turns:
        blocks = [renderer.block(item) for item in turn.items]
        if turn.role == "user":
            # Tool results must open the user message that answers the tool_use blocks.
            blocks = [b for b in blocks if b["type"] == "tool_result"] + [
                b for b in blocks if b["type"] != "tool_result"
            ]
        messages.append({"role": turn.role, "content": blocks})

    system = _system_blocks(prompt)
    tools = [_tool(tool) for tool in prompt.tools]
    _place_cache_markers(prompt, system, tools, renderer.markable)

    body: dict[str, Any] = {"model": prompt.model_limits.model, "max_tokens": max_output}
    if system:
        body["system"] = system
    body["messages"] = messages
    if tools:
        body["tools"] = tools
    return body


def _keep(part: ContentPart) -> bool:
    if isinstance(part, TextPart):
        return has_text(part.text)
    if isinstance(part, ReasoningPart):
        if part.provider not in (None, "anthropic"):
            return False
        return part.data is not None if part.redacted else part.signature is not None
    return True


def _text(text: str) -> Block:
    return {"type": "text", "text": text}


def _safe_id(call_id: str) -> str:
    return _UNSAFE_ID.sub("_", call_id)


def _system_blocks(prompt: Lowerable) -> list[Block]:
    texts = system_texts(prompt)
    return [
        _text(text if index == len(texts) - 1 else text + SYSTEM_SEPARATOR)
        for index, text in enumerate(texts)
    ]


def _tool(tool: ToolDefinition) -> Block:
    out: Block = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["input_schema"] = copy.deepcopy(tool.parameters)
    return out


class _Renderer:
    """Turns parts into content blocks and remembers, per prompt message, its last block that
    may carry a cache marker."""

    def __init__(
        self, images: Images, names: dict[str, str], paired: frozenset[tuple[int, int]]
    ) -> None:
        self._images = images
        self._names = names
        self._paired = paired
        self.markable: dict[int, Block] = {}

    def block(self, item: TurnItem) -> Block:
        part = item.part
        block: Block
        if isinstance(part, TextPart):
            block = _text(part.text)
        elif isinstance(part, ImagePart):
            block = self._image(part)
        elif isinstance(part, ReasoningPart):  # not markable: thinking blocks take no marker
            if part.redacted:
                return {"type": "redacted_thinking", "data": part.data}
            return {"type": "thinking", "thinking": part.text, "signature": part.signature}
        elif isinstance(part, ToolCallPart):
            if item.key in self._paired:
                block = {
                    "type": "tool_use",
                    "id": _safe_id(part.call_id),
                    "name": part.name,
                    "input": copy.deepcopy(part.arguments),
                }
            else:
                block = _text(tool_call_text(part))
        elif item.key in self._paired:
            block = self._tool_result(part)
        else:
            block = _text(tool_result_text(part, self._names))
        self.markable[item.message_index] = block
        return block

    def _image(self, part: ImagePart) -> Block:
        if part.media_type not in IMAGE_MEDIA_TYPES:
            return _text(image_placeholder(part))
        return {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": part.media_type,
                "data": self._images.base64(part),
            },
        }

    def _tool_result(self, part: ToolResultPart) -> Block:
        content: list[Block] = []
        for inner in part.content:
            if isinstance(inner, TextPart):
                if has_text(inner.text):
                    content.append(_text(inner.text))
            else:
                content.append(self._image(inner))
        block: Block = {"type": "tool_result", "tool_use_id": _safe_id(part.call_id)}
        if content:
            block["content"] = content
        block["is_error"] = part.is_error
        return block


def _cache_control(ttl: Ttl) -> Block:
    return {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}


def _place_cache_markers(
    prompt: Lowerable,
    system: list[Block],
    tools: list[Block],
    markable: dict[int, Block],
) -> None:
    """Put ``cache_control`` on the blocks the breakpoints name (see the module docstring)."""
    # position in prefix order (tools, system, messages) -> (ttl, block)
    planned: dict[tuple[int, int], tuple[Ttl, Block]] = {}
    for point in prompt.cache_breakpoints:
        point_ttl = point.ttl
        if point_ttl != "5m" and point_ttl != "1h":
            continue  # no marker: an automatic cache's point (OpenAI's retention, Gemini)
        target: tuple[tuple[int, int], Block] | None = None
        if point.location == "tools":
            target = ((0, 0), tools[-1]) if tools else None
        elif point.location == "system":
            target = ((1, 0), system[-1]) if system else None
        else:
            index = point.message_index
            if index is None or not 0 <= index < len(prompt.messages):
                raise ValueError(
                    f"cache breakpoint names message {index!r}, which is not in the prompt"
                )
            found = next((at for at in range(index, -1, -1) if at in markable), None)
            target = ((2, found), markable[found]) if found is not None else None
        if target is None:
            continue
        position, block = target
        previous = planned.get(position)
        ttl: Ttl = point_ttl
        if previous is not None and previous[0] == "1h":
            ttl = "1h"
        planned[position] = (ttl, block)

    ordered = sorted(planned.items(), key=lambda entry: entry[0])
    if len(ordered) > MAX_CACHE_MARKERS:
        fixed = [entry for entry in ordered if entry[0][0] < 2]
        latest = [entry for entry in ordered if entry[0][0] == 2]
        ordered = fixed + latest[len(latest) - (MAX_CACHE_MARKERS - len(fixed)) :]
    shorter_seen = False
    for _, (ttl, block) in ordered:
        if ttl == "5m":
            shorter_seen = True
        block["cache_control"] = _cache_control("5m" if shorter_seen else ttl)
