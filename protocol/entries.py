"""Session history entries and message content parts (DESIGN.md §3).

A client appends an :data:`EntryInput` (the entry's own content); the store assigns ``seq``,
``id``, ``time`` and ``hash`` and returns it as an :data:`Entry`.  Both are unions
discriminated by ``kind``; content parts are discriminated by ``type``.

Seq numbers start at 1, are strictly increasing and never reused; an entry is never rewritten
or removed (compaction and drops are entries of their own).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from protocol._base import JsonObject, NonEmptyStr, PathStr, SeqNumber, Timestamp, WireModel

__all__ = [
    "CompactionEntry",
    "CompactionInput",
    "ContentPart",
    "DropEntry",
    "DropInput",
    "Entry",
    "EntryInput",
    "EntryRef",
    "ImagePart",
    "ItemRef",
    "MessageEntry",
    "MessageInput",
    "NoteEntry",
    "NoteInput",
    "PinEntry",
    "PinInput",
    "ReasoningPart",
    "ReasoningProvider",
    "RecoverEntry",
    "RecoverInput",
    "SkillActivatedEntry",
    "SkillActivatedInput",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "UnpinEntry",
    "UnpinInput",
    "VariablesEntry",
    "VariablesInput",
]

Role = Literal["user", "assistant", "system"]


# --- content parts -------------------------------------------------------------------------


class TextPart(WireModel):
    """Plain text."""

    type: Literal["text"]
    text: str


class ImagePart(WireModel):
    """An image held in the blob store (see ``blob/read``)."""

    type: Literal["image"]
    blob: NonEmptyStr
    """Git object id of the image bytes in the blob store."""
    media_type: NonEmptyStr
    """MIME type, e.g. ``image/png``."""
    alt: str | None = None


class ToolCallPart(WireModel):
    """The model asked for a tool to run."""

    type: Literal["toolCall"]
    call_id: NonEmptyStr
    name: NonEmptyStr
    arguments: JsonObject
    signature: str | None = None
    """Opaque data the provider attached to the call, kept verbatim and sent back with it
    (Gemini's ``thoughtSignature``: Gemini 3 refuses a call of the current turn without
    it); absent for providers that sign nothing."""


class ToolResultPart(WireModel):
    """The settled result of a tool call, matched to it by ``callId``."""

    type: Literal["toolResult"]
    call_id: NonEmptyStr
    content: list[Annotated[TextPart | ImagePart, Field(discriminator="type")]]
    is_error: bool = False


#: The provider whose opaque reasoning data a :class:`ReasoningPart` carries.
ReasoningProvider = Literal["anthropic", "openai-responses", "gemini"]


class ReasoningPart(WireModel):
    """Model reasoning ("thinking"), with the provider's opaque data kept verbatim so that
    it can be sent back, unchanged, in every later request (see *Providers* in the guide).

    - Anthropic ``thinking``: ``text`` and ``signature``; ``redacted_thinking``: ``redacted``
      true, ``data`` the encrypted block, ``text`` empty.
    - OpenAI Responses reasoning item: ``id`` (``rs_...``), ``data`` its
      ``encrypted_content``, ``summary`` its summary texts in order and ``text`` them joined
      with a blank line.
    - Unsigned reasoning (Chat Completions servers, Gemini thought summaries, the scripted
      provider) has ``text`` only and is shown, never sent back.
    """

    type: Literal["reasoning"]
    text: str
    signature: str | None = None
    """Anthropic's signature of a thinking block."""
    provider: ReasoningProvider | None = None
    """Whose opaque data this is; a lowering sends the part back only to that provider's API
    (``null``: written before this field existed, treated as Anthropic when signed)."""
    id: str | None = None
    """The provider's id of the reasoning item (OpenAI Responses ``rs_...``)."""
    data: str | None = None
    """Encrypted reasoning: OpenAI's ``encrypted_content``, Anthropic's redacted block."""
    summary: list[str] | None = None
    """OpenAI Responses: the summary parts as sent (``text`` is them joined)."""
    redacted: bool = False
    """Anthropic ``redacted_thinking``: ``data`` holds the block, nothing is readable."""


ContentPart = Annotated[
    TextPart | ImagePart | ToolCallPart | ToolResultPart | ReasoningPart,
    Field(discriminator="type"),
]


# --- references used by ledger controls ----------------------------------------------------


class ItemRef(WireModel):
    """What a pin / unpin / drop / recover acts on.

    ``file``, ``instruction`` and ``skill`` are named by ``locator`` (a workspace-relative path
    or a skill name); ``range`` covers transcript entries ``fromSeq..throughSeq``; ``item`` names
    a ledger item by its stable id (``ctx_<kind>_<16hex>``).
    """

    kind: Literal["file", "instruction", "skill", "range", "item"]
    locator: PathStr | None = None
    from_seq: SeqNumber | None = None
    through_seq: SeqNumber | None = None
    item_id: str | None = None

    @model_validator(mode="after")
    def _fields_match_kind(self) -> ItemRef:
        if self.kind == "range":
            if self.from_seq is None or self.through_seq is None:
                raise ValueError("a range needs fromSeq and throughSeq")
            if self.from_seq > self.through_seq:
                raise ValueError("fromSeq must not be greater than throughSeq")
        elif self.kind == "item":
            if not self.item_id:
                raise ValueError("an item reference needs itemId")
        elif not self.locator:
            raise ValueError(f"a {self.kind} reference needs a locator")
        return self


# --- entry inputs (what a client appends) --------------------------------------------------


class _InputBase(WireModel):
    meta: JsonObject | None = None
    """Host data kept with the entry and returned verbatim; never shown to the model."""


class MessageInput(_InputBase):
    """A user, assistant or system message."""

    kind: Literal["message"]
    role: Role
    content: list[ContentPart] = Field(min_length=1)
    name: str | None = None
    """Optional author name (multi-agent hosts)."""


class CompactionInput(_InputBase):
    """Everything up to ``throughSeq`` is represented by ``summary``, except the kept tail
    ``keepFromSeq..throughSeq``.  Nothing is deleted."""

    kind: Literal["compaction"]
    summary: NonEmptyStr
    through_seq: SeqNumber
    keep_from_seq: SeqNumber | None = None

    @model_validator(mode="after")
    def _tail_inside_range(self) -> CompactionInput:
        if self.keep_from_seq is not None and self.keep_from_seq > self.through_seq:
            raise ValueError("keepFromSeq must not be greater than throughSeq")
        return self


class PinInput(_InputBase):
    """Keep an item in the prompt whatever the budget pressure."""

    kind: Literal["pin"]
    target: ItemRef
    reason: str | None = None


class UnpinInput(_InputBase):
    kind: Literal["unpin"]
    target: ItemRef
    reason: str | None = None


class DropInput(_InputBase):
    """Keep an item out of the prompt (it stays in history and can be recovered)."""

    kind: Literal["drop"]
    target: ItemRef
    reason: str | None = None


class RecoverInput(_InputBase):
    kind: Literal["recover"]
    target: ItemRef
    reason: str | None = None


class SkillActivatedInput(_InputBase):
    """A skill's body was loaded into context."""

    kind: Literal["skillActivated"]
    name: NonEmptyStr
    path: str | None = None
    blob: str | None = None
    """Blob id of the activated text (what ``skills/activate`` stored).  Named ``blob``, not
    ``hash``: every stored entry's ``hash`` is the store's content hash of the entry."""


class VariablesInput(_InputBase):
    """A committed change of session variables: keys set to values (``null`` unsets)."""

    kind: Literal["variables"]
    scope: Literal["local", "global"] = "local"
    values: JsonObject


class NoteInput(_InputBase):
    """A host note kept in history; never shown to the model."""

    kind: Literal["note"]
    text: str


EntryInput = Annotated[
    MessageInput
    | CompactionInput
    | PinInput
    | UnpinInput
    | DropInput
    | RecoverInput
    | SkillActivatedInput
    | VariablesInput
    | NoteInput,
    Field(discriminator="kind"),
]


# --- stored entries (what the store returns) -----------------------------------------------


class EntryRef(WireModel):
    """The fields the store assigns to an appended entry."""

    seq: SeqNumber
    id: NonEmptyStr
    """Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its
    entries with their ids, so an id names the same content in every branch."""
    time: Timestamp
    hash: NonEmptyStr
    """xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came,
    ``meta`` left out); keys the token-count cache."""


class _Stored(EntryRef):
    tokens: dict[str, int] | None = None
    """Cached token counts per tokenizer id, present when asked for (``withTokens``)."""


class MessageEntry(_Stored, MessageInput):
    pass


class CompactionEntry(_Stored, CompactionInput):
    pass


class PinEntry(_Stored, PinInput):
    pass


class UnpinEntry(_Stored, UnpinInput):
    pass


class DropEntry(_Stored, DropInput):
    pass


class RecoverEntry(_Stored, RecoverInput):
    pass


class SkillActivatedEntry(_Stored, SkillActivatedInput):
    pass


class VariablesEntry(_Stored, VariablesInput):
    pass


class NoteEntry(_Stored, NoteInput):
    pass


Entry = Annotated[
    MessageEntry
    | CompactionEntry
    | PinEntry
    | UnpinEntry
    | DropEntry
    | RecoverEntry
    | SkillActivatedEntry
    | VariablesEntry
    | NoteEntry,
    Field(discriminator="kind"),
]
