"""Runs on the wire: the model/tool loop, its event journal, and the host's side of tools.

Every event of a run has a per-run ``seq`` (1, 2, 3, …) and is appended to the run's journal
before it is sent as a ``run/event`` notification, so ``run/subscribe {afterSeq}`` can replay
exactly what a front end missed and then continue live: no gap, no duplicate.  Each run ends
with exactly one ``run.completed`` event (``completed | cancelled | failed``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from protocol._base import JsonObject, NonEmptyStr, SeqNumber, Timestamp, WireModel
from protocol.context import ToolDefinition
from protocol.entries import ContentPart, ImagePart, TextPart
from protocol.snapshots import ProfileInput
from protocol.tools import ApprovalModeId, BuiltinTools, FileChange

__all__ = [
    "ApprovalRequestParams",
    "ApprovalRequestResult",
    "AssemblyRequestParams",
    "AssemblyRequestResult",
    "FileChange",
    "KeepEverythingCall",
    "KeepEverythingTotals",
    "Run",
    "RunEvent",
    "RunFailure",
    "RunGetParams",
    "RunLagged",
    "RunListParams",
    "RunListResult",
    "RunResumeParams",
    "RunStartParams",
    "RunStartResult",
    "RunStartSettings",
    "RunSubscribeParams",
    "RunSubscribeResult",
    "RunUnsubscribeParams",
    "ToolExecuteParams",
    "ToolExecuteResult",
]

RunStatus = Literal[
    "created",
    "assembling",
    "callingModel",
    "dispatchingTool",
    "compacting",
    "completed",
    "cancelled",
    "failed",
]
TerminalStatus = Literal["completed", "cancelled", "failed"]


class RunFailure(WireModel):
    code: str
    """Dotted: ``model.request_failed``, ``agent.max_tool_rounds_exceeded``,
    ``agent.tool_loop_detected``, ``agent.interrupted``, ``context.budget_exceeded``, …"""
    message: str
    retryable: bool = False
    """The same request may succeed if tried again later (rate limit, overload, crash)."""
    user_retryable: bool = False
    """Worth offering the user a "retry" button (``run/resume``)."""
    details: JsonObject | None = None


class RunEvent(WireModel):
    """Params of the ``run/event`` notification and one line of the run's journal."""

    run_id: str
    session_id: str
    seq: SeqNumber
    time: Timestamp
    type: str
    """``run.created``, ``run.statusChanged``, ``context.assembled``,
    ``model.requestCreated``, ``model.delta``, ``model.completed``, ``tool.callRequested``,
    ``tool.approval``, ``plan.updated``, ``tool.resultStored``, ``history.appended``,
    ``compaction.started``, ``compaction.completed``, ``compaction.failed``,
    ``run.completed``."""
    payload: JsonObject


class KeepEverythingTotals(WireModel):
    """A session's model calls so far (as far as this process saw them), summed: what they
    cost as sent and under keep-everything-then-compact, priced alike."""

    calls: int
    cost: float
    """USD under keep-everything-then-compact, summary calls included."""
    own_cost: float
    """USD as sent, priced by the same simulator with the same times."""
    compactions: int = 0
    """Summary calls keep-everything would have made."""


class KeepEverythingCall(WireModel):
    """``keepEverything`` on a session's own ``model.completed``: what the call would have
    cost under keep-everything-then-compact (Claude Code's way: the whole transcript until the
    window less the output reserve is reached, then a priced summary call and a 2,000-token
    summary plus the newest ~20,000 tokens; its marker layout), beside the call as sent, both
    priced by the reference cache simulator with entries expiring their TTL from the real
    times of the calls, output included.  A model, not a bill (``docs/guide/cache.md``).
    Absent for a sub-agent's call, for a model the price table does not list, and for bodies
    other than Anthropic Messages and OpenAI Chat Completions."""

    cost: float
    """USD this call would have cost under keep-everything (with the summary call a
    compaction made before it)."""
    tokens: int
    """The prompt keep-everything would have sent (cl100k on each block's JSON)."""
    compacted: bool = False
    """Keep-everything compacted before this call."""
    own_cost: float
    """USD this call cost as sent, priced the same way (not ``predictedCache``, which knows no
    time)."""
    own_tokens: int
    """The prompt sent, counted the same way."""
    at: float
    """When the call was priced, seconds since the epoch (the simulator's clock)."""
    session: KeepEverythingTotals
    """The session's calls so far, this one included."""


class RunStartSettings(WireModel):
    """What a run was started with, kept in its record: ``run/resume`` continues with exactly
    these (a resumed run keeps them too)."""

    profile_id: str | None = None
    """The stored profile named by ``run/start``."""
    profile: ProfileInput | None = None
    """The profile as it was when the run started (inline, or the stored one's content): a
    resumed run keeps its model binding, window and instructions even if the stored profile
    changed or was deleted since."""
    approval_required: list[str] = Field(default_factory=list)
    max_rounds: int = Field(default=10, ge=1, le=100)
    tool_timeout_ms: int = Field(default=60_000, ge=1, le=3_600_000)
    delegation: bool = False
    compaction: Literal["auto", "off"] = "auto"
    builtin_tools: BuiltinTools | None = None
    """The built-in tools as the run offered them (the profile's narrowing applied)."""
    script_blob: str | None = None
    """For the ``scripted`` provider: the script still to play, a stored object (``git
    cat-file -p`` shows it).  A resumed run without a ``script`` of its own plays the rounds
    the run it resumes had not reached."""


class Run(WireModel):
    run_id: str
    session_id: str
    input_id: str
    status: RunStatus
    rounds: int
    """Model calls made so far."""
    head_seq: SeqNumber
    """Seq of the run's newest journal event."""
    created_at: Timestamp
    updated_at: Timestamp
    failure: RunFailure | None = None
    resume_of: str | None = None
    """The run this one resumed."""
    settings: RunStartSettings | None = None
    """What the run was started with.  Absent from records written before the settings were
    kept: ``run/resume`` then uses safe defaults (approval before every tool of the input)
    and says so (``settingsDefaulted`` in the new run's ``run.created``)."""
    usage: JsonObject = Field(default_factory=dict)
    """Totals: inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens."""


class RunStartParams(WireModel):
    session_id: NonEmptyStr
    user_turn: list[ContentPart] | None = None
    """The turn to run; appended to history when the run starts."""
    input_id: str | None = None
    """Or: an input frozen beforehand with ``input/freeze`` (its user turn is the turn)."""
    profile_id: str | None = None
    profile: ProfileInput | None = None
    tools: list[ToolDefinition] = Field(default_factory=list)
    """Tools the host executes (``tool/execute``); ignored when ``inputId`` carries tools."""
    approval_required: list[str] = Field(default_factory=list)
    """Tool names that need ``approval/request`` before each call."""
    max_rounds: int = Field(default=10, ge=1, le=100)
    tool_timeout_ms: int = Field(default=60_000, ge=1, le=3_600_000)
    script: JsonObject | None = None
    """For the ``scripted`` provider: the answers to play (see *Scripted runs*)."""
    delegation: bool = False
    """Offer the built-in ``agent_delegate`` / ``agent_handoff`` tools (sub-agents)."""
    compaction: Literal["auto", "off"] = "auto"
    """``auto``: when an assembly advises it, the model first writes a checkpoint summary
    (stored as a compaction entry), then the same turn continues."""
    builtin_tools: BuiltinTools | None = None
    """Offer the sidecar's own workspace tools (see *Built-in tools*): they run in the
    sidecar, confined to the session's ``workspaceRoots``; writes and commands are approved
    as ``mode`` says (``approval/request`` when it asks)."""
    subscribe: bool = True
    """Stream this run's events to this client from seq 1."""

    @model_validator(mode="after")
    def _one_source(self) -> RunStartParams:
        if (self.user_turn is None) == (self.input_id is None):
            raise ValueError("give exactly one of userTurn and inputId")
        return self


class RunStartResult(WireModel):
    run_id: str
    session_id: str
    input_id: str


class RunLagged(WireModel):
    """Server -> client notification: the client read too slowly, so this run's events (live,
    or a ``run/subscribe`` replay past the 4 MiB backlog bound) stopped being sent after
    ``lastSentSeq``; ``run/subscribe {afterSeq: lastSentSeq}`` catches up (after
    ``retryAfterMs``).  Nothing is lost: the journal has every event."""

    run_id: str
    session_id: str
    last_sent_seq: SeqNumber
    code: str
    """``server.overloaded``."""
    retry_after_ms: int


class RunGetParams(WireModel):
    run_id: NonEmptyStr


class RunListParams(WireModel):
    session_id: str | None = None
    limit: int = Field(default=50, ge=1, le=500)


class RunListResult(WireModel):
    runs: list[Run]
    """Newest first."""


class RunSubscribeParams(WireModel):
    run_id: NonEmptyStr
    after_seq: SeqNumber = 0
    """Replay journal events after this seq, then continue live."""


class RunSubscribeResult(WireModel):
    run_id: str
    replayed: int
    """Events sent from the journal (before this answer)."""
    head_seq: SeqNumber
    status: RunStatus
    live: bool
    """False when the run had already ended, or when the replay paused at the backlog bound (a
    ``run/lagged`` came before this answer): nothing more comes until the next
    ``run/subscribe``."""


class RunUnsubscribeParams(WireModel):
    run_id: NonEmptyStr


class RunResumeParams(WireModel):
    run_id: NonEmptyStr
    additional_rounds: int | None = Field(default=None, ge=1, le=100)
    """Model calls the resumed run may make; default: the run's own ``maxRounds``."""
    revision_guidance: str | None = None
    """Extra instruction for the continued run (added as a user note)."""
    script: JsonObject | None = None
    """For the ``scripted`` provider: the answers to play (see *Scripted runs*)."""


class ToolExecuteParams(WireModel):
    """Server -> client request: run a tool for a run."""

    run_id: str
    call_id: str
    name: str
    arguments: dict[str, Any]


class ToolExecuteResult(WireModel):
    content: list[Annotated[TextPart | ImagePart, Field(discriminator="type")]]
    is_error: bool = False


class AssemblyRequestParams(WireModel):
    """Server -> client request, sent only to hosts that declared
    ``capabilities.experimental.contextSidecar.assembly = true``: build a sub-agent's prompt
    with the host's own assembler."""

    run_id: str
    call_id: str
    scope: Literal["delegate", "handoff"]
    input_id: str
    fingerprint: str
    """sha256 of the preset components, the input id and the task."""
    turn: list[JsonObject]
    """The sub-agent's turn so far (``{role, content}``), its task first."""


class AssemblyRequestResult(WireModel):
    messages: list[JsonObject] = Field(min_length=1)
    """``{role: user | assistant, content: [parts]}``, the last one the sub-agent answers."""
    system: str | None = None


class ApprovalRequestParams(WireModel):
    run_id: str
    call_id: str
    name: str
    arguments: dict[str, Any]
    builtin: bool = False
    """A built-in tool: the sidecar runs it once approved."""
    effect: Literal["read", "edit", "execute", "mcp"] | None = None
    """What a built-in call does, as the approval mode counts it."""
    mode: ApprovalModeId | None = None
    """The approval mode that asked."""
    change: FileChange | None = None
    """A built-in write or edit: what it would do (the diff to show)."""
    command: str | None = None
    """A built-in ``run_command``: the command and ``cwd`` it would run in."""
    cwd: str | None = None
    escalation: Literal["requested", "blocked"] | None = None
    """``auto`` mode: why a command is asked about — the model asked to run it outside the
    sandbox (``requested``), or it failed in the sandbox in a way that shows the sandbox
    blocked it (``blocked``).  Approved, it runs outside the sandbox."""
    justification: str | None = None
    """With ``escalation``: the model's reason (``requested``) or what the sandbox blocked."""


class ApprovalRequestResult(WireModel):
    approved: bool
    reason: str | None = None
