"""Profiles, presets, snapshots, blobs and retention on the wire."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from protocol._base import JsonObject, NonEmptyStr, WireModel
from protocol.context import (
    AssembledPrompt,
    CacheAccounting,
    CompactionAdvice,
    Dashboard,
    LowerTarget,
    PromptProfile,
)
from protocol.inputs import (
    ContextItem,
    ModelConnection,
    PromptComponent,
    _refuse_credentials,
    refuse_server_context,
)
from protocol.tools import BuiltinTools

__all__ = [
    "BlobReadParams",
    "BlobReadResult",
    "DeleteResult",
    "DocumentRef",
    "LedgerChange",
    "Preset",
    "PresetBinding",
    "PresetInput",
    "PresetList",
    "PresetUpdateParams",
    "Profile",
    "ProfileInput",
    "ProfileList",
    "ProfileUpdateParams",
    "PromptSnapshot",
    "SnapshotAssembleParams",
    "SnapshotAssembleResult",
    "SnapshotDiff",
    "SnapshotDiffParams",
    "SnapshotGetParams",
    "SnapshotLowerParams",
    "SnapshotLowerResult",
    "StoreGcParams",
    "StoreGcResult",
]


# --- presets and profiles --------------------------------------------------------------------


class PresetInput(WireModel):
    name: str = ""
    components: list[PromptComponent] = Field(default_factory=list)
    parameters: JsonObject = Field(default_factory=dict)
    """Generation parameters (macros allowed in string values)."""
    max_context: int | None = Field(default=None, ge=1024)
    max_output: int | None = Field(default=None, ge=1)

    @field_validator("parameters")
    @classmethod
    def _no_credentials(cls, value: JsonObject) -> JsonObject:
        _refuse_credentials(value, "parameters")
        refuse_server_context(value, "parameters")
        return value


class Preset(PresetInput):
    preset_id: NonEmptyStr


class PresetBinding(WireModel):
    mode: Literal["current", "ref"] = "current"
    """``current``: the components frozen with the input; ``ref``: the stored preset."""
    preset_id: str | None = None


class ProfileInput(WireModel):
    name: str = ""
    model_binding: ModelConnection = Field(default_factory=ModelConnection)
    """Overrides the connection fields of presets and inputs."""
    assembly: PromptProfile = Field(default_factory=PromptProfile)
    """History window, fragments, cache TTL, ...; ``provider``/``model`` come from the binding."""
    preset: PresetBinding = Field(default_factory=PresetBinding)
    agent_system_prompt: str = ""
    """The profile's instructions: a system section right after the fragments (macros allowed)."""
    builtin_tools: BuiltinTools | None = None
    """Runs with this profile offer the built-in workspace tools (a run's own
    ``builtinTools`` overrides the mode and the bound; the tool lists narrow each other)."""


class Profile(ProfileInput):
    profile_id: NonEmptyStr


class DocumentRef(WireModel):
    """Params naming one stored profile or preset."""

    id: NonEmptyStr


class ProfileUpdateParams(WireModel):
    id: NonEmptyStr
    profile: ProfileInput


class PresetUpdateParams(WireModel):
    id: NonEmptyStr
    preset: PresetInput


class ProfileList(WireModel):
    profiles: list[Profile]


class PresetList(WireModel):
    presets: list[Preset]


class DeleteResult(WireModel):
    id: str
    deleted: bool


# --- snapshots -------------------------------------------------------------------------------


class PromptSnapshot(AssembledPrompt):
    """An assembled prompt, immutable and content-addressed."""

    snapshot_id: str
    """Git blob id of the snapshot's stored JSON (compact, keys in the order sent; without this
    field)."""
    input_id: str
    session_id: str
    profile_id: str | None = None
    profile_hash: str
    """xxh3-128 of the effective profile's canonical JSON."""
    parameters: JsonObject = Field(default_factory=dict)
    """Generation parameters after macro evaluation (merged into lowered bodies)."""
    unknown_macros: list[str] = Field(default_factory=list)
    items: list[ContextItem] = Field(default_factory=list)
    """The attachments and pinned files the prompt carries (their blobs hold the content)."""
    checkpoint_id: str | None = None
    """The checkpoint of the workspace this snapshot's turn saw (``checkpoint/restore`` puts
    those files back); ``null`` when none was taken (no roots, checkpoints off, or assembled
    outside a run)."""


class SnapshotAssembleParams(WireModel):
    session_id: NonEmptyStr
    input_id: NonEmptyStr
    profile_id: str | None = None
    """Stored profile to assemble with; default: the default profile."""
    profile: ProfileInput | None = None
    """An inline profile instead of a stored one."""


class LedgerChange(WireModel):
    item_id: str
    kind: str
    locator: str | None = None
    before: str | None = None
    """Visibility in the older snapshot (``null``: not a candidate then)."""
    after: str | None = None


class SnapshotDiff(WireModel):
    from_snapshot: str | None
    to_snapshot: str
    sections_added: list[str]
    sections_removed: list[str]
    sections_changed: list[str]
    ledger_changes: list[LedgerChange]
    messages_before: int
    messages_after: int
    prefix_units: int
    """Leading request units (each tool, system section, message) identical in both."""
    prefix_tokens: int
    """Tokens of those units: what a prompt cache can serve (predicted cache hit)."""
    total_tokens_before: int
    total_tokens_after: int


class SnapshotAssembleResult(WireModel):
    snapshot_id: str
    input_id: str
    dashboard: Dashboard
    compaction: CompactionAdvice
    diff: SnapshotDiff
    """Against the session's previous snapshot (all ``added`` for the first one)."""
    unknown_macros: list[str]
    cache: CacheAccounting
    """Predicted cache read / write / uncached tokens and cost of this prompt against the
    session's previous snapshot."""


class SnapshotGetParams(WireModel):
    snapshot_id: NonEmptyStr


class SnapshotLowerParams(WireModel):
    snapshot_id: NonEmptyStr
    target: LowerTarget


class SnapshotLowerResult(WireModel):
    snapshot_id: str
    target: LowerTarget
    body: JsonObject


class SnapshotDiffParams(WireModel):
    to: NonEmptyStr
    from_: str | None = Field(default=None, alias="from")
    """Default: the snapshot assembled before ``to`` in the same session."""


# --- blobs and retention ---------------------------------------------------------------------


class BlobReadParams(WireModel):
    blob: NonEmptyStr
    offset: int = Field(default=0, ge=0)
    length: Annotated[int, Field(ge=0, le=4 * 1024 * 1024)] = 1024 * 1024
    encoding: Literal["utf-8", "base64"] = "utf-8"
    """``utf-8`` when the range is text (a range cut inside a character is widened to whole
    characters); ``base64`` for anything."""


class BlobReadResult(WireModel):
    blob: str
    size: int
    offset: int
    length: int
    data: str
    encoding: Literal["utf-8", "base64"]
    eof: bool


class StoreGcParams(WireModel):
    keep_recent: int = Field(default=20, ge=0)
    """Snapshots kept per session besides those a run or a pin refers to."""
    grace_seconds: int = Field(default=3600, ge=0)
    """Blobs younger than this are kept (an input being frozen right now is not yet referenced)."""
    dry_run: bool = False


class StoreGcResult(WireModel):
    kept: int
    collected: int
    collected_bytes: int
    dry_run: bool
    snapshots_dropped: int
    checkpoints_dropped: int
    """Workspace checkpoints past their session's retention (the newest ``keep``, none older
    than ``maxAgeDays``) dropped by this collection (a dry run: that would be)."""
