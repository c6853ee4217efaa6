"""What every lowering shares: the system text, the turn structure, tool pairing, images.

Every target builds its body in the same three steps:

1. :func:`build_turns` drops the parts the target cannot send (its ``keep`` predicate), gives
   each part the side it speaks for (a tool result is the user side, a tool call the assistant
   side, anything else the role of its message) and merges runs of the same side across message
   boundaries, so turns strictly alternate.  Every provider either requires alternation
   (Anthropic, Gemini) or is indifferent to it (OpenAI), so all targets share this structure.
2. :func:`pair_tool_calls` decides which calls and results may go out as structured blocks: a
   call is paired with a result only when that result sits in the turn *immediately after* the
   call's turn, which is what Anthropic ("each tool_use block must have a corresponding
   tool_result block in the next message"), OpenAI chat (tool messages right after the
   assistant message) and Gemini (functionResponse turn right after the functionCall turn)
   require.  With an empty catalog nothing is paired: Anthropic rejects tool blocks in a request
   that defines no tools.  Unpaired calls and results are rendered as text
   (:func:`tool_call_text`, :func:`tool_result_text`), so a body never carries a dangling call
   or an orphan result.
3. The target renders each turn into its own shapes; within a user turn, tool results come
   first (Anthropic: "messages following tool_use blocks must begin with tool_result blocks").

Nothing here depends on a provider SDK; the output is plain JSON-ready dicts, built in a fixed
key order so the same prompt always serializes to the same bytes (prompt caching is byte-exact).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from protocol.entries import (
    ContentPart,
    ImagePart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

if TYPE_CHECKING:
    from sidecar.context.lower.prompt import Lowerable

__all__ = [
    "ReadBlob",
    "Role",
    "SYSTEM_SEPARATOR",
    "PART_SEPARATOR",
    "CONTINUATION_NOTE",
    "Images",
    "Turn",
    "TurnItem",
    "build_turns",
    "pair_tool_calls",
    "tool_names",
    "system_texts",
    "system_text",
    "json_arguments",
    "image_placeholder",
    "tool_call_text",
    "tool_result_body",
    "tool_result_text",
    "has_text",
    "keep_visible",
]

#: Reads a blob's bytes by id (the sidecar's blob store); errors propagate to the caller.
ReadBlob = Callable[[str], bytes]
Role = Literal["user", "assistant"]

#: Sections of the system prompt are joined with a blank line.
SYSTEM_SEPARATOR = "\n\n"
#: Parts of one turn rendered as a single string are joined with a blank line as well.
PART_SEPARATOR = "\n\n"
#: The user message put first when a transcript window starts on an assistant turn
#: (Anthropic and Gemini want the conversation to open with a user turn).
CONTINUATION_NOTE = "(The conversation continues from earlier messages that are not shown.)"


# --- turns ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TurnItem:
    """One content part and where it came from in ``prompt.messages``."""

    message_index: int
    part_index: int
    part: ContentPart

    @property
    def key(self) -> tuple[int, int]:
        return (self.message_index, self.part_index)


@dataclass(slots=True)
class Turn:
    """Consecutive parts spoken by the same side, possibly from several prompt messages."""

    role: Role
    items: list[TurnItem] = field(default_factory=list)


def has_text(text: str) -> bool:
    """Whether a text is worth a block: providers reject empty or whitespace-only text."""
    return bool(text.strip())


def keep_visible(part: ContentPart) -> bool:
    """The default ``keep`` predicate: everything except empty text and reasoning."""
    if isinstance(part, TextPart):
        return has_text(part.text)
    return not isinstance(part, ReasoningPart)


def _side(role: Role, part: ContentPart) -> Role:
    if isinstance(part, ToolResultPart):
        return "user"
    if isinstance(part, ToolCallPart):
        return "assistant"
    return role


def build_turns(prompt: Lowerable, keep: Callable[[ContentPart], bool]) -> list[Turn]:
    """Alternating turns of the parts ``keep`` accepts, in prompt order."""
    turns: list[Turn] = []
    for m_index, message in enumerate(prompt.messages):
        for p_index, part in enumerate(message.content):
            if not keep(part):
                continue
            side = _side(message.role, part)
            if not turns or turns[-1].role != side:
                turns.append(Turn(side))
            turns[-1].items.append(TurnItem(m_index, p_index, part))
    return turns


def pair_tool_calls(turns: list[Turn]) -> frozenset[tuple[int, int]]:
    """Keys of the tool calls and results that answer each other across adjacent turns.

    A result pairs with a call of the turn right before its own; each call id pairs once (the
    first call with that id in the turn, the first result answering it)."""
    paired: set[tuple[int, int]] = set()
    for index in range(len(turns) - 1):
        turn, following = turns[index], turns[index + 1]
        if turn.role != "assistant":
            continue
        calls: dict[str, tuple[int, int]] = {}
        for item in turn.items:
            if isinstance(item.part, ToolCallPart):
                calls.setdefault(item.part.call_id, item.key)
        for item in following.items:
            part = item.part
            if isinstance(part, ToolResultPart) and part.call_id in calls:
                paired.add(calls.pop(part.call_id))
                paired.add(item.key)
    return frozenset(paired)


def tool_names(prompt: Lowerable) -> dict[str, str]:
    """Tool name by call id, from every tool call in the prompt (the first call wins)."""
    names: dict[str, str] = {}
    for message in prompt.messages:
        for part in message.content:
            if isinstance(part, ToolCallPart):
                names.setdefault(part.call_id, part.name)
    return names


# --- text renderings ------------------------------------------------------------------------


def system_texts(prompt: Lowerable) -> list[str]:
    """The texts of the system sections worth sending, in order (blank sections skipped)."""
    return [section.text for section in prompt.system if has_text(section.text)]


def system_text(prompt: Lowerable) -> str:
    """The whole system prompt: the sections joined with a blank line."""
    return SYSTEM_SEPARATOR.join(system_texts(prompt))


def json_arguments(arguments: dict[str, Any]) -> str:
    """Tool arguments as a compact JSON string, keys in the order the model produced them."""
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def image_placeholder(part: ImagePart) -> str:
    """What an image becomes where it cannot be sent: ``[image: image/png]`` (+ alt text)."""
    label = f"[image: {part.media_type}]"
    return f"{label} {part.alt}" if part.alt else label


def tool_call_text(part: ToolCallPart) -> str:
    """An unpaired tool call as assistant text: ``[tool call: name {json args}]``."""
    return f"[tool call: {part.name} {json_arguments(part.arguments)}]"


def tool_result_body(part: ToolResultPart) -> str:
    """A tool result's content as text; images become placeholders."""
    chunks: list[str] = []
    for inner in part.content:
        if isinstance(inner, TextPart):
            if has_text(inner.text):
                chunks.append(inner.text)
        else:
            chunks.append(image_placeholder(inner))
    return PART_SEPARATOR.join(chunks)


def tool_result_text(part: ToolResultPart, names: dict[str, str]) -> str:
    """An unpaired tool result as user text: ``[tool: name]\\n<output>`` (thndrs' form)."""
    name = names.get(part.call_id, "unknown")
    header = f"[tool: {name} (error)]" if part.is_error else f"[tool: {name}]"
    body = tool_result_body(part)
    return f"{header}\n{body}" if body else header


# --- images ---------------------------------------------------------------------------------


class Images:
    """Image bytes for one lowering: each blob is read and base64-encoded once."""

    def __init__(self, read_blob: ReadBlob) -> None:
        self._read_blob = read_blob
        self._encoded: dict[str, str] = {}

    def base64(self, part: ImagePart) -> str:
        encoded = self._encoded.get(part.blob)
        if encoded is None:
            encoded = base64.b64encode(self._read_blob(part.blob)).decode("ascii")
            self._encoded[part.blob] = encoded
        return encoded

    def data_url(self, part: ImagePart) -> str:
        return f"data:{part.media_type};base64,{self.base64(part)}"
