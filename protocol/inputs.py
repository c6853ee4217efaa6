"""Frozen inputs and context items on the wire (DESIGN.md §3, REFERENCES.md A).

A :class:`FrozenInput` is everything one turn depends on, captured once: the user turn and
attachments (as :class:`ContextItem` s whose full content is a blob), prompt components and
activated entries, the macro context with raw (unevaluated) templates, variables as they
were, the model connection as a *reference* (never a secret), tools, skills metadata, and the
project instructions, activated skills and pinned files as blobs.  Its id is the git blob id
of its JSON (compact, keys in their order), and it is stored in the blob store, so freezing
the same inputs twice gives the same id and the input can always be read back (``input/get``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from protocol._base import JsonObject, NonEmptyPath, NonEmptyStr, PathStr, SeqNumber, WireModel
from protocol.context import Diagnostic, HostSource, SkillInfo, ToolDefinition
from protocol.entries import ContentPart

__all__ = [
    "SECRET_KEY",
    "SERVER_CONTEXT_KEYS",
    "Clock",
    "ContextItem",
    "ContextItemInput",
    "FrozenInput",
    "InputFreezeParams",
    "InputFreezeResult",
    "InputGetParams",
    "InstructionSnapshot",
    "MacroContextInput",
    "ModelConnection",
    "PromptComponent",
    "SkillSnapshot",
    "Variables",
    "refuse_server_context",
]

ItemKind = Literal["file", "url", "snippet", "command", "image", "other"]
#: Parameter names that would carry a credential: refused in connections and presets, and
#: redacted from traces.  ``connectionRef`` is one too: a key pasted there instead of
#: ``env:NAME`` is refused, and the trace (written before validation) must not keep it.
#: ``token`` alone, or as in ``access_token``/``authToken``; not ``max_tokens``,
#: ``maxOutputTokens``, ``budget_tokens``, ``tokenizer`` or ``token_count``, which are
#: generation parameters, nor the LSP fields ``workDoneToken``/``partialResultToken``
#: (progress ids) and ``tokenTypes``/``tokenModifiers`` (the semantic-token legend).
SECRET_KEY = re.compile(
    r"(api[_-]?key|secret|password|passwd|authorization|bearer|connection[_-]?ref"
    r"|(?<!workdone)(?<!partialresult)token(?!s|iz|types|modifiers|_?count|_?limit|_?budget))",
    re.I,
)


#: Generation parameters that would let the provider edit the prompt on its side (Anthropic
#: ``context_management`` clearing and compaction, OpenAI Responses ``context_management``
#: compaction, ``truncation: "auto"``) or build it from state kept on its servers
#: (``previous_response_id``, ``conversation``): refused, because the sidecar's own masking,
#: window and compaction decide what the model sees, and a snapshot must stay the prompt that
#: was sent (``docs/decisions.md``, *Provider-side context management*).
SERVER_CONTEXT_KEYS = {
    "context_management": "server-side context editing (clearing or compaction)",
    "contextManagement": "server-side context editing (clearing or compaction)",
    "previous_response_id": "a prompt continued from state kept on the provider's servers",
    "conversation": "a prompt continued from state kept on the provider's servers",
    "truncation": "server-side truncation of the prompt",
}


def refuse_server_context(value: dict[str, Any], where: str) -> None:
    """Refuse the :data:`SERVER_CONTEXT_KEYS` among generation parameters (``truncation``
    only when it is not ``"disabled"``, the API's default), saying why."""
    for key, what in SERVER_CONTEXT_KEYS.items():
        if key not in value or (key == "truncation" and value[key] == "disabled"):
            continue
        raise ValueError(
            f"{where}.{key}: {what} is not supported: the sidecar's own masking, history "
            "window and compaction decide what the model sees, and a snapshot must stay the "
            "prompt that was sent (see docs/decisions.md, 'Provider-side context management')"
        )


class ContextItem(WireModel):
    """One captured item: a locator, a short preview, and the full content as a blob."""

    kind: ItemKind
    path: NonEmptyStr
    """Locator: workspace-relative path, URL, label, shell command or file name."""
    preview: Annotated[str, Field(max_length=500)] | None = None
    """At most 500 characters, never splitting one."""
    blob: str | None = None
    """Git object id of the full content (for a file tracked by git: its git blob id)."""


class ContextItemInput(WireModel):
    """An attachment as the host sends it.  Files are read from the workspace (confined to
    its roots) unless ``content`` is given; URLs are never fetched: the host supplies the
    content."""

    kind: ItemKind
    path: NonEmptyPath
    content: str | None = None
    """Text content (url, snippet, command output, other; optional for files)."""
    data_base64: str | None = None
    """Binary content (images)."""
    media_type: str | None = None


class PromptComponent(WireModel):
    """A preset's prompt component (SillyTavern PromptManager style)."""

    identifier: NonEmptyStr
    role: Literal["system", "user", "assistant"] = "system"
    content: str
    """Raw template: macros are evaluated at assembly, on a working copy."""
    position: Literal["relative", "inChat"] = "relative"
    """``relative``: a system section in preset order; ``inChat``: injected into the
    transcript ``depth`` messages from the end, moved back to the start of a tool call and its
    results when it would fall between them."""
    depth: int = Field(default=4, ge=0)
    enabled: bool = True


class ModelConnection(WireModel):
    """Which model to call, by reference.  ``connectionRef`` names where the credential
    lives (``env:NAME`` or ``secret:NAME``); the credential itself is never accepted here."""

    connection_ref: (
        Annotated[str, Field(pattern=r"^(env|secret):[A-Za-z0-9_.\-]{1,128}$")] | None
    ) = None
    provider: Literal["anthropic", "openai", "openai-responses", "gemini", "scripted", "other"] = (
        "anthropic"
    )
    """``openai`` is Chat Completions (and compatible servers), but a model OpenAI serves only
    through the Responses API (``*-codex``, ``*-pro``, deep research) goes there;
    ``openai-responses`` is the Responses API for every model."""
    model_id: str = "claude-sonnet-4-5"
    base_url: str | None = None
    """For OpenAI-compatible servers (Ollama, llama.cpp, vLLM) or a proxy."""
    parameters: JsonObject = Field(default_factory=dict)
    """Generation parameters (temperature, top_p, ...); credential-like keys are refused."""

    @field_validator("parameters")
    @classmethod
    def _no_credentials(cls, value: dict[str, Any]) -> dict[str, Any]:
        _refuse_credentials(value, "parameters")
        refuse_server_context(value, "parameters")
        return value


def _refuse_credentials(value: Any, where: str) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            if SECRET_KEY.search(str(key)):
                raise ValueError(
                    f"{where}.{key}: credentials are not accepted here; use connectionRef "
                    "(env:NAME or secret:NAME)"
                )
            _refuse_credentials(inner, f"{where}.{key}")
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            _refuse_credentials(inner, f"{where}.{index}")


class MacroContextInput(WireModel):
    user: str = "User"
    char: str = "Assistant"
    templates: dict[str, str] = Field(default_factory=dict)
    """Named raw templates (character description, scenario, ...), stored unevaluated."""
    facts: dict[str, str] = Field(default_factory=dict)
    """Chat facts (e.g. ``lastMessage``); read-only text."""


class Variables(WireModel):
    local: JsonObject = Field(default_factory=dict)
    global_: JsonObject = Field(default_factory=dict, alias="global")


class Clock(WireModel):
    """When the input was frozen, to the minute: what ``{{date}}`` and ``{{time}}`` show."""

    date: Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$")]
    time: Annotated[str, Field(pattern=r"^\d{2}:\d{2}$")]


class InstructionSnapshot(WireModel):
    path: str
    scope: str
    hash: str
    blob: str
    """Blob id of the text as cut for the prompt."""
    truncated: bool
    depth: int


class SkillSnapshot(WireModel):
    name: str
    blob: str
    """Blob id of the activated text (body + references)."""


class FrozenInput(WireModel):
    session_id: NonEmptyStr
    through_seq: SeqNumber
    """History up to this seq belongs to the turn; later appends do not."""
    clock: Clock
    user_turn: list[ContentPart] = Field(min_length=1)
    attachments: list[ContextItem] = Field(default_factory=list)
    components: list[PromptComponent] = Field(default_factory=list)
    activated_entries: list[HostSource] = Field(default_factory=list)
    macro_context: MacroContextInput = Field(default_factory=MacroContextInput)
    variables: Variables = Field(default_factory=Variables)
    model_connection: ModelConnection | None = None
    tools: list[ToolDefinition] = Field(default_factory=list)
    skills: list[SkillInfo] = Field(default_factory=list)
    activated_skills: list[SkillSnapshot] = Field(default_factory=list)
    instructions: list[InstructionSnapshot] = Field(default_factory=list)
    pinned_files: list[ContextItem] = Field(default_factory=list)
    fragment_overrides: dict[str, str] = Field(default_factory=dict)
    """Prompt fragments replaced by workspace files (``.context-sidecar/fragments/<id>.md``)."""
    cwd: str | None = None
    mentioned_paths: list[str] = Field(default_factory=list)


class InputFreezeParams(WireModel):
    session_id: NonEmptyStr
    user_turn: list[ContentPart] = Field(min_length=1)
    attachments: list[ContextItemInput] = Field(default_factory=list)
    components: list[PromptComponent] = Field(default_factory=list)
    activated_entries: list[HostSource] = Field(default_factory=list)
    macro_context: MacroContextInput = Field(default_factory=MacroContextInput)
    variables: Variables = Field(default_factory=Variables)
    model_connection: ModelConnection | None = None
    tools: list[ToolDefinition] = Field(default_factory=list)
    cwd: PathStr | None = None
    mentioned_paths: list[PathStr] = Field(default_factory=list)
    clock: Clock | None = None
    """Default: now (UTC), to the minute."""


class InputFreezeResult(WireModel):
    input_id: str
    """Git blob id of the input's stored JSON (compact, keys in their order; ``git cat-file -p``
    shows it)."""
    input: FrozenInput
    diagnostics: list[Diagnostic]


class InputGetParams(WireModel):
    input_id: NonEmptyStr
