"""Every method of the protocol, declared once.

The server registers its handlers from this table, the exporter generates the TypeScript
method table, the Lua annotations and the protocol reference from it, and ``initialize``
advertises the names in it.  A method missing here does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from protocol._base import WireModel
from protocol.checkpoints import (
    CheckpointDiffParams,
    CheckpointDiffResult,
    CheckpointListParams,
    CheckpointListResult,
    CheckpointRestoreParams,
    CheckpointRestoreResult,
    StoreStatsResult,
)
from protocol.context import (
    ContextAssembleParams,
    ContextAssembleResult,
    ContextSourcesParams,
    ContextSourcesResult,
    HostSourceRef,
    RegisterSourceParams,
    SessionCompactParams,
    SessionControlParams,
    SkillsActivateParams,
    SkillsActivateResult,
    SkillsListParams,
    SkillsListResult,
    SourceRegistration,
)
from protocol.inputs import FrozenInput, InputFreezeParams, InputFreezeResult, InputGetParams
from protocol.runs import (
    ApprovalRequestParams,
    ApprovalRequestResult,
    AssemblyRequestParams,
    AssemblyRequestResult,
    Run,
    RunEvent,
    RunGetParams,
    RunLagged,
    RunListParams,
    RunListResult,
    RunResumeParams,
    RunStartParams,
    RunStartResult,
    RunSubscribeParams,
    RunSubscribeResult,
    RunUnsubscribeParams,
    ToolExecuteParams,
    ToolExecuteResult,
)
from protocol.server import ServerInfo, ServerPingResult, ServerSleepParams, ServerSleepResult
from protocol.sessions import (
    Session,
    SessionAppendParams,
    SessionAppendResult,
    SessionCreateParams,
    SessionDeleteResult,
    SessionForkParams,
    SessionListParams,
    SessionListResult,
    SessionReadParams,
    SessionReadResult,
    SessionRef,
    SessionReleaseResult,
    SessionRenameParams,
)
from protocol.snapshots import (
    BlobReadParams,
    BlobReadResult,
    DeleteResult,
    DocumentRef,
    Preset,
    PresetInput,
    PresetList,
    PresetUpdateParams,
    Profile,
    ProfileInput,
    ProfileList,
    ProfileUpdateParams,
    PromptSnapshot,
    SnapshotAssembleParams,
    SnapshotAssembleResult,
    SnapshotDiff,
    SnapshotDiffParams,
    SnapshotGetParams,
    SnapshotLowerParams,
    SnapshotLowerResult,
    StoreGcParams,
    StoreGcResult,
)
from protocol.tokens import TokensCountParams, TokensCountResult

__all__ = [
    "ALL_METHODS",
    "CLIENT_METHODS",
    "METHODS_BY_NAME",
    "EmptyParams",
    "MethodSpec",
]

P = TypeVar("P", bound=WireModel)
R = TypeVar("R", bound=WireModel)


class EmptyParams(WireModel):
    """Params of methods that take none (``{}`` or omitted)."""


@dataclass(frozen=True, slots=True)
class MethodSpec(Generic[P, R]):
    """One method: its name, who sends it, and its typed params and result."""

    name: str
    params: type[P]
    result: type[R] | None
    summary: str
    kind: Literal["request", "notification"] = "request"
    direction: Literal["clientToServer", "serverToClient"] = "clientToServer"

    @property
    def family(self) -> str:
        return self.name.split("/", 1)[0]


SESSION_CREATE = MethodSpec(
    "session/create", SessionCreateParams, Session, "Create an empty session."
)
SESSION_LIST = MethodSpec(
    "session/list", SessionListParams, SessionListResult, "List sessions, newest first, by cursor."
)
SESSION_GET = MethodSpec("session/get", SessionRef, Session, "Get one session's metadata.")
SESSION_APPEND = MethodSpec(
    "session/append",
    SessionAppendParams,
    SessionAppendResult,
    "Append entries durably; optional optimistic check of the head seq.",
)
SESSION_READ = MethodSpec(
    "session/read", SessionReadParams, SessionReadResult, "Read a page of history by seq."
)
SESSION_FORK = MethodSpec(
    "session/fork",
    SessionForkParams,
    Session,
    "Copy a session's history up to a seq into a new session.",
)
SESSION_RENAME = MethodSpec("session/rename", SessionRenameParams, Session, "Retitle a session.")
SESSION_DELETE = MethodSpec(
    "session/delete",
    SessionRef,
    SessionDeleteResult,
    "Move a session to the store's trash; `session.busy` (retryable) while a run is active on it.",
)
SESSION_RELEASE = MethodSpec(
    "session/release",
    SessionRef,
    SessionReleaseResult,
    "Give the session back so that another sidecar on the store can write it (this one takes "
    "it again on its next write); `session.busy` (retryable) while a run is active on it.",
)
SESSION_PIN = MethodSpec(
    "session/pin", SessionControlParams, SessionAppendResult, "Pin an item into the prompt."
)
SESSION_UNPIN = MethodSpec(
    "session/unpin", SessionControlParams, SessionAppendResult, "Undo a pin."
)
SESSION_DROP = MethodSpec(
    "session/drop", SessionControlParams, SessionAppendResult, "Keep an item out of the prompt."
)
SESSION_RECOVER = MethodSpec(
    "session/recover", SessionControlParams, SessionAppendResult, "Undo a drop."
)
SESSION_COMPACT = MethodSpec(
    "session/compact",
    SessionCompactParams,
    SessionAppendResult,
    "Record a compaction: a summary standing for history up to a seq (nothing is deleted).",
)
CONTEXT_SOURCES = MethodSpec(
    "context/sources",
    ContextSourcesParams,
    ContextSourcesResult,
    "Instruction files and skills found for a session, with diagnostics.",
)
CONTEXT_ASSEMBLE = MethodSpec(
    "context/assemble",
    ContextAssembleParams,
    ContextAssembleResult,
    "What exactly the model would see for this turn, and why; optionally lowered.",
)
CONTEXT_REGISTER_SOURCE = MethodSpec(
    "context/registerSource",
    RegisterSourceParams,
    SourceRegistration,
    "Register a host source (RAG results, editor state) for a session's assemblies.",
)
CONTEXT_UNREGISTER_SOURCE = MethodSpec(
    "context/unregisterSource",
    HostSourceRef,
    SourceRegistration,
    "Remove a registered host source.",
)
SKILLS_LIST = MethodSpec(
    "skills/list", SkillsListParams, SkillsListResult, "Skills available to a session."
)
SKILLS_ACTIVATE = MethodSpec(
    "skills/activate",
    SkillsActivateParams,
    SkillsActivateResult,
    "Load a skill's body and references; records a skillActivated entry.",
)
INPUT_FREEZE = MethodSpec(
    "input/freeze",
    InputFreezeParams,
    InputFreezeResult,
    "Capture everything a turn depends on, once; content-addressed (same inputs, same id).",
)
INPUT_GET = MethodSpec("input/get", InputGetParams, FrozenInput, "Read a frozen input back.")
SNAPSHOT_ASSEMBLE = MethodSpec(
    "snapshot/assemble",
    SnapshotAssembleParams,
    SnapshotAssembleResult,
    "Assemble a frozen input with a profile into a stored, content-addressed snapshot.",
)
SNAPSHOT_GET = MethodSpec("snapshot/get", SnapshotGetParams, PromptSnapshot, "Read a snapshot.")
SNAPSHOT_LOWER = MethodSpec(
    "snapshot/lower", SnapshotLowerParams, SnapshotLowerResult, "A snapshot as a provider body."
)
SNAPSHOT_DIFF = MethodSpec(
    "snapshot/diff",
    SnapshotDiffParams,
    SnapshotDiff,
    "What changed between two snapshots, and the identical prefix (predicted cache hit).",
)
BLOB_READ = MethodSpec("blob/read", BlobReadParams, BlobReadResult, "Read a range of a blob.")
PROFILE_CREATE = MethodSpec("profile/create", ProfileInput, Profile, "Store a profile.")
PROFILE_GET = MethodSpec("profile/get", DocumentRef, Profile, "Read a profile.")
PROFILE_LIST = MethodSpec("profile/list", EmptyParams, ProfileList, "List profiles.")
PROFILE_UPDATE = MethodSpec("profile/update", ProfileUpdateParams, Profile, "Replace a profile.")
PROFILE_DELETE = MethodSpec("profile/delete", DocumentRef, DeleteResult, "Delete a profile.")
PRESET_CREATE = MethodSpec("preset/create", PresetInput, Preset, "Store a preset.")
PRESET_GET = MethodSpec("preset/get", DocumentRef, Preset, "Read a preset.")
PRESET_LIST = MethodSpec("preset/list", EmptyParams, PresetList, "List presets.")
PRESET_UPDATE = MethodSpec("preset/update", PresetUpdateParams, Preset, "Replace a preset.")
PRESET_DELETE = MethodSpec("preset/delete", DocumentRef, DeleteResult, "Delete a preset.")
STORE_GC = MethodSpec(
    "store/gc",
    StoreGcParams,
    StoreGcResult,
    "Collect blobs no session, kept snapshot or input refers to (explicit, never automatic).",
)
STORE_STATS = MethodSpec(
    "store/stats",
    EmptyParams,
    StoreStatsResult,
    "What the store holds: sessions, objects and their bytes, checkpoints.",
)
CHECKPOINT_LIST = MethodSpec(
    "checkpoint/list",
    CheckpointListParams,
    CheckpointListResult,
    "A session's checkpoints of its workspace, newest first, with how many files changed since.",
)
CHECKPOINT_DIFF = MethodSpec(
    "checkpoint/diff",
    CheckpointDiffParams,
    CheckpointDiffResult,
    "Per file, what changed from a checkpoint to the workspace now (bounded unified diffs).",
)
CHECKPOINT_RESTORE = MethodSpec(
    "checkpoint/restore",
    CheckpointRestoreParams,
    CheckpointRestoreResult,
    "Put the files back as a checkpoint holds them (checkpointed first, so it can be undone) "
    "and/or fork the conversation before its turn; files changed outside the agent are "
    "conflicts unless `force`.",
)
RUN_START = MethodSpec(
    "run/start", RunStartParams, RunStartResult, "Start a run: the model/tool loop for a turn."
)
RUN_GET = MethodSpec("run/get", RunGetParams, Run, "A run's state.")
RUN_LIST = MethodSpec("run/list", RunListParams, RunListResult, "Runs, newest first.")
RUN_SUBSCRIBE = MethodSpec(
    "run/subscribe",
    RunSubscribeParams,
    RunSubscribeResult,
    "Replay a run's events after afterSeq, then continue live (no gap, no duplicate).",
)
RUN_UNSUBSCRIBE = MethodSpec(
    "run/unsubscribe", RunUnsubscribeParams, Run, "Stop receiving a run's live events."
)
RUN_CANCEL = MethodSpec("run/cancel", RunGetParams, Run, "Cancel a run; answers once it ended.")
RUN_RESUME = MethodSpec(
    "run/resume",
    RunResumeParams,
    RunStartResult,
    "Continue a stopped run (a new run on the same input; settled tool calls are not redone).",
)
RUN_EVENT: MethodSpec[RunEvent, WireModel] = MethodSpec(
    "run/event",
    RunEvent,
    None,
    "A run event, journaled before it is sent.",
    kind="notification",
    direction="serverToClient",
)
RUN_LAGGED: MethodSpec[RunLagged, WireModel] = MethodSpec(
    "run/lagged",
    RunLagged,
    None,
    "The client read too slowly: live events paused; catch up with run/subscribe.",
    kind="notification",
    direction="serverToClient",
)
TOOL_EXECUTE = MethodSpec(
    "tool/execute",
    ToolExecuteParams,
    ToolExecuteResult,
    "The host runs a tool for a run and answers with its result.",
    direction="serverToClient",
)
ASSEMBLY_REQUEST = MethodSpec(
    "assembly/request",
    AssemblyRequestParams,
    AssemblyRequestResult,
    "The host assembles a sub-agent's prompt with its own assembler (hosts that declared it).",
    direction="serverToClient",
)
APPROVAL_REQUEST = MethodSpec(
    "approval/request",
    ApprovalRequestParams,
    ApprovalRequestResult,
    "The host approves or denies a tool call the profile marks as needing approval.",
    direction="serverToClient",
)
TOKENS_COUNT = MethodSpec(
    "tokens/count", TokensCountParams, TokensCountResult, "Count tokens of texts."
)
SERVER_INFO = MethodSpec(
    "server/info", EmptyParams, ServerInfo, "Capabilities, limits and live server facts."
)
SERVER_PING = MethodSpec("server/ping", EmptyParams, ServerPingResult, "Trivial round trip.")
SERVER_SLEEP = MethodSpec(
    "server/sleep",
    ServerSleepParams,
    ServerSleepResult,
    "Answer after a delay (cancellable); for testing client timeouts and cancellation.",
)

ALL_METHODS: tuple[MethodSpec[Any, Any], ...] = (
    SESSION_CREATE,
    SESSION_LIST,
    SESSION_GET,
    SESSION_APPEND,
    SESSION_READ,
    SESSION_FORK,
    SESSION_RENAME,
    SESSION_DELETE,
    SESSION_RELEASE,
    SESSION_PIN,
    SESSION_UNPIN,
    SESSION_DROP,
    SESSION_RECOVER,
    SESSION_COMPACT,
    CONTEXT_SOURCES,
    CONTEXT_ASSEMBLE,
    CONTEXT_REGISTER_SOURCE,
    CONTEXT_UNREGISTER_SOURCE,
    SKILLS_LIST,
    SKILLS_ACTIVATE,
    INPUT_FREEZE,
    INPUT_GET,
    SNAPSHOT_ASSEMBLE,
    SNAPSHOT_GET,
    SNAPSHOT_LOWER,
    SNAPSHOT_DIFF,
    BLOB_READ,
    PROFILE_CREATE,
    PROFILE_GET,
    PROFILE_LIST,
    PROFILE_UPDATE,
    PROFILE_DELETE,
    PRESET_CREATE,
    PRESET_GET,
    PRESET_LIST,
    PRESET_UPDATE,
    PRESET_DELETE,
    STORE_GC,
    STORE_STATS,
    CHECKPOINT_LIST,
    CHECKPOINT_DIFF,
    CHECKPOINT_RESTORE,
    RUN_START,
    RUN_GET,
    RUN_LIST,
    RUN_SUBSCRIBE,
    RUN_UNSUBSCRIBE,
    RUN_CANCEL,
    RUN_RESUME,
    RUN_EVENT,
    RUN_LAGGED,
    TOOL_EXECUTE,
    ASSEMBLY_REQUEST,
    APPROVAL_REQUEST,
    TOKENS_COUNT,
    SERVER_INFO,
    SERVER_PING,
    SERVER_SLEEP,
)

METHODS_BY_NAME: dict[str, MethodSpec[Any, Any]] = {m.name: m for m in ALL_METHODS}

#: What a client can call, in the registry's order: ``methods`` of ``initialize`` and
#: ``server/info``.
CLIENT_METHODS: tuple[MethodSpec[Any, Any], ...] = tuple(
    m for m in ALL_METHODS if m.direction == "clientToServer"
)
