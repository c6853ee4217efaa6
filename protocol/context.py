"""The context pipeline on the wire: sources, skills, assembly, the assembled prompt.

An :class:`AssembledPrompt` is provider-neutral: ``system`` is an ordered list of sections
(each with its category, token count, hash and provenance), ``messages`` the selected
transcript plus the current user turn (content parts as in history), ``tools`` the tool
catalog.  ``ledger`` says, for every candidate, whether it is in the prompt and why;
``dashboard`` gives tokens per category.  ``lowerTo`` turns it into a provider request body.
"""

from __future__ import annotations

import itertools
from datetime import datetime
from typing import Annotated, Literal, get_args

from pydantic import Field, field_validator, model_validator

from protocol._base import JsonObject, NonEmptyStr, PathStr, SeqNumber, Timestamp, WireModel
from protocol.entries import ContentPart, EntryRef, ItemRef

__all__ = [
    "SECTION_CATEGORIES",
    "AssembledPrompt",
    "CacheAccounting",
    "CacheBreakpoint",
    "CacheCost",
    "CacheRetention",
    "CacheSettings",
    "CacheTtl",
    "CompactionAdvice",
    "ContextAssembleParams",
    "ContextAssembleResult",
    "ContextSourcesParams",
    "ContextSourcesResult",
    "CountCalibration",
    "Dashboard",
    "Diagnostic",
    "HistoryWindow",
    "HostSource",
    "HostSourceRef",
    "RegisterSourceParams",
    "SourceRegistration",
    "InstructionFile",
    "InstructionsDiff",
    "LedgerItem",
    "LowerTarget",
    "MaskingPolicy",
    "ModelLimits",
    "PromptMessage",
    "PromptProfile",
    "Provenance",
    "ReportedUsage",
    "Section",
    "SectionCategory",
    "SessionCompactParams",
    "SessionControlParams",
    "SkillInfo",
    "SkillsActivateParams",
    "SkillsActivateResult",
    "SkillsListParams",
    "SkillsListResult",
    "ToolDefinition",
    "TurnMessage",
]

SectionCategory = Literal[
    "system",
    "tools",
    "instructions",
    "skills",
    "pinned",
    "host",
    "summary",
    "transcript",
    "userTurn",
]
#: The dashboard's categories, in the order every view lists them.
SECTION_CATEGORIES: tuple[SectionCategory, ...] = get_args(SectionCategory)
LowerTarget = Literal[
    "anthropic-messages", "openai-chat", "openai-responses", "gemini", "system-as-user"
]
Provider = Literal["anthropic", "openai", "gemini", "other"]
#: An Anthropic cache marker's lifetime (``cache_control.ttl``), refreshed on every hit.
CacheTtl = Literal["5m", "1h"]
#: OpenAI's ``prompt_cache_retention``: ``in_memory`` (minutes idle, at most an hour) or
#: ``24h`` (extended: offloaded to GPU-local storage, kept up to 24 hours).
CacheRetention = Literal["in_memory", "24h"]
Visibility = Literal[
    "visible", "pinned", "candidate", "archived", "dropped", "blocked", "summaryOnly", "masked"
]


# --- sources ---------------------------------------------------------------------------------


class Diagnostic(WireModel):
    """A problem found while reading a source; the source is skipped, never fatal."""

    severity: Literal["warning", "error"]
    code: str
    """Dotted, e.g. ``instructions.oversized``, ``skills.invalid_frontmatter``."""
    path: str
    message: str


class InstructionFile(WireModel):
    """One project-instruction file (AGENTS.md and friends) found for a workspace."""

    path: str
    """Workspace-relative path, ``/``-separated."""
    scope: str
    """Directory (workspace-relative, ``.`` for the root) the file applies to."""
    hash: str
    """xxh3-128 of the full file, even when the text is cut at the size cap."""
    bytes: int
    truncated: bool
    applies: bool
    """The root file always applies; a nested one when a mentioned or pinned path is in scope."""
    reason: str


class InstructionsDiff(WireModel):
    """How the instruction files changed since this session's previous assembly."""

    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    unreadable: list[str] = Field(default_factory=list)
    oversized: list[str] = Field(default_factory=list)


class SkillInfo(WireModel):
    """A skill's metadata (its ``SKILL.md`` frontmatter), as in the Agent Skills spec."""

    name: str
    description: str
    path: str
    """Absolute path of the skill directory."""
    root: str
    """The skills root it was found under (e.g. ``<workspace>/.agents/skills``)."""
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] | None = None
    allowed_tools: list[str] | None = None


class ContextSourcesParams(WireModel):
    session_id: NonEmptyStr
    cwd: PathStr | None = None
    """Absolute directory inside a workspace root; default: the session's primary root."""
    mentioned_paths: list[PathStr] = Field(default_factory=list)
    """Workspace-relative paths the turn mentions; nested instruction files apply to them."""


class ContextSourcesResult(WireModel):
    project_root: str
    instructions: list[InstructionFile]
    skills: list[SkillInfo]
    diagnostics: list[Diagnostic]


class SkillsListParams(WireModel):
    session_id: NonEmptyStr


class SkillsListResult(WireModel):
    skills: list[SkillInfo]
    diagnostics: list[Diagnostic]


class SkillsActivateParams(WireModel):
    session_id: NonEmptyStr
    name: NonEmptyStr


class SkillReference(WireModel):
    path: str
    """Relative to the skill directory."""
    bytes: int
    truncated: bool


class SkillsActivateResult(WireModel):
    skill: SkillInfo
    body: str
    """``SKILL.md`` without its frontmatter, then each reference file, within the limits."""
    references: list[SkillReference]
    blob: str
    """Blob id of the activated text (the ``hash`` recorded in the ``skillActivated`` entry)."""
    entry: EntryRef
    diagnostics: list[Diagnostic]


# --- ledger controls -------------------------------------------------------------------------


class SessionControlParams(WireModel):
    """Params of ``session/pin``, ``session/unpin``, ``session/drop``, ``session/recover``."""

    session_id: NonEmptyStr
    target: ItemRef
    reason: str | None = None


class SessionCompactParams(WireModel):
    session_id: NonEmptyStr
    summary: NonEmptyStr
    through_seq: SeqNumber
    keep_from_seq: SeqNumber | None = None


class HostSource(WireModel):
    """A section supplied by the host (RAG results, editor state, ...)."""

    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:-]{1,80}$")]
    title: str = ""
    text: str
    priority: int = 0
    """Higher is selected first among host sources."""


class RegisterSourceParams(WireModel):
    session_id: NonEmptyStr
    source: HostSource


class HostSourceRef(WireModel):
    session_id: NonEmptyStr
    id: NonEmptyStr


class SourceRegistration(WireModel):
    session_id: NonEmptyStr
    ids: list[str]
    """Ids of the host sources registered for the session after this call (kept in memory
    for the sidecar's lifetime, not in history)."""


# --- assembly inputs -------------------------------------------------------------------------


class ToolDefinition(WireModel):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    """Letters, digits, ``_`` and ``-``, at most 64: what every provider accepts (Anthropic and
    OpenAI reject dots), so a name valid here is valid everywhere it is lowered."""
    description: str = ""
    parameters: JsonObject = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON Schema of the arguments; must be an object schema."""


#: The default working budget of the history window (``HistoryWindow.working_tokens``).
WORKING_TOKENS = 64_000
#: The default ``cache.compactWhenCold``: a cold cache is re-written by the next request
#: anyway, so a transcript past this share of the available input is compacted then (on a
#: 200k window about 40k tokens; on a 1M window it rarely fires).
COLD_COMPACT_SHARE = 0.3


class HistoryWindow(WireModel):
    """Where the transcript starts once it no longer fits.

    The window start moves forward by a quantum, not one group at a time, and then holds
    still until the transcript overflows again: the cached prompt prefix is re-written once
    per quantum instead of on every turn.  It never moves back before where the session's
    window last started (kept in the store, per model), and always falls on a user turn."""

    max_messages: int | None = Field(default=None, ge=1)
    """Most transcript messages kept, counted over whole groups (default: no cap)."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Most transcript tokens kept (default: the working budget, ``workingTokens``)."""
    working_tokens: int | None = Field(default=WORKING_TOKENS, ge=1)
    """The working budget: most transcript tokens kept whatever the model's window, unless
    ``maxTokens`` says less (``null``: whatever the budget allows).  Every request reads its
    whole transcript from the cache, so a transcript held near a 200k (or 1M) window pays
    for all of it on every request; what the model works with is its newest turns, and the
    user's own messages (``keepUserMessages``).  ``docs/guide/context-policy.md`` gives what
    it costs and shows at 40k, 64k and 100k."""
    quantum: float | None = Field(default=None, gt=0, le=1)
    """How far the window start moves when the transcript overflows, as a share of what
    overflowed: of the room the transcript has in the budget, of ``maxTokens``, or of
    ``maxMessages``.  Default: a quarter of the budget's room (large: a quarter is many
    turns), half of an explicit ``maxTokens`` / ``maxMessages`` (small: a quarter of 50
    messages would move the window, and re-write the cached prompt, every third turn)."""
    keep_user_messages: bool | None = None
    """Show the user's own messages that the window start or a compaction left out, verbatim,
    at the start of the transcript (what the user asked survives what the window hides; the
    text changes only when the start moves).  They take at most ``userMessagesShare`` of the
    input budget, kept for them; the oldest beyond it are left out.  Inside a host's explicit
    cap they are part of it, never on top: ``maxTokens`` keeps that share of its tokens for
    them, ``maxMessages`` one of its messages, holding at most that share of its count of
    them; the window has the rest.  Default: on."""
    user_messages_share: float = Field(default=0.2, gt=0, le=0.5)
    """The share of the input budget kept for those messages (out of what the working budget
    leaves free when there is one: a window smaller than it keeps none); with an explicit
    ``maxTokens`` / ``maxMessages``, the share of that cap."""

    def keeps_user_messages(self) -> bool:
        """:attr:`keep_user_messages`, its default applied."""
        return self.keep_user_messages is not False

    def token_cap(self) -> int | None:
        """The tokens the transcript is held under: ``maxTokens``, else the working budget."""
        caps = [c for c in (self.max_tokens, self.working_tokens) if c is not None]
        return min(caps) if caps else None


class MaskingPolicy(WireModel):
    """Observation masking: old tool results shown as short placeholders.

    A tool result older than the newest ``protectTokens`` of tool output is shown as a
    placeholder (tool name and arguments, its size, a preview, the ledger id that brings it
    back with ``session/recover``) inside its call/result group.  The masked boundary moves
    in batches of ``batchTokens`` of tool output, so the prompt prefix stays byte-identical
    between moves.  A pinned or recovered result is never masked."""

    mode: Literal["auto", "off"] = "auto"
    protect_tokens: int | None = Field(default=None, ge=0)
    """Newest tool output kept whole (default: a twelfth of the room tool output has — the
    available input, or ``historyWindow.maxTokens`` when smaller —, at most 40,000 tokens)."""
    batch_tokens: int | None = Field(default=None, ge=1)
    """Tool output masked per move of the boundary (default: five twelfths of that room, at
    most 160,000 tokens)."""
    preview_chars: int = Field(default=300, ge=0, le=4000)
    """Characters of the original result shown in its placeholder."""
    keep_turns: int = Field(default=0, ge=0)
    """The results of the newest ``keepTurns`` user turns in history are never masked,
    whatever ``protectTokens`` says (the turn in progress, ``turn``, never is)."""
    batch_rounds: int | None = Field(default=4, ge=1)
    """Tool rounds a batch holds at least, by the session's own output per round: while the
    default batch (five twelfths of the working budget) holds fewer, the working budget
    doubles (within the input budget) and the batch is five eighths of it, ``protectTokens``
    staying at a twelfth of the budget as set — a session whose commands return logs of
    10k tokens moves its boundary, a cache re-write, every few rounds otherwise.  The
    output per round is measured every 8th round, so the budget changes rarely.  Only with
    the working budget (no ``maxTokens`` / ``maxMessages``) and no ``batchTokens``;
    ``null``: the budget as set."""
    count_turn: bool = True
    """The tool output of the turn in progress (``turn``, a run's rounds) counts on the
    tool-output axis, as if already in history: the boundary moves on the request that
    brings new output, which writes to the cache anyway, not on the next one, which would
    write that output a second time.  It is never masked itself."""
    to_protect: bool = True
    """A move masks everything older than the newest ``protectTokens`` at the point the
    output crossed the batch line, not only what ends before that line: the result that
    straddles the line (a command's log of 10k tokens is most of a batch) is masked with
    the move instead of being re-written by it and masked by the next."""


class CacheSettings(WireModel):
    """How long the provider is asked to keep what a request caches (``docs/guide/cache.md``).

    Anthropic: the TTL of each cache marker, by the part of the prompt it ends.  The stable
    prefix (the end of the tool catalog, of the system prompt) is written once and read by
    every turn; the masked history changes only when the masked boundary moves; the tail (the
    transcript before the new turn, the new turn, an extra marker at the previous request's
    last entry) is written every turn.  A 1-hour marker is written at twice the input price
    (5 minutes: 1.25x), read at the same 0.1x.  The API requires a longer TTL before a shorter
    one in the prompt: a setting whose TTLs grow toward the tail (``prefixTtl: "5m"``,
    ``tailTtl: "1h"``) is refused; a marker placed out of that order (the extra marker at the
    previous request's entry, before a 1-hour history marker) is sent, and priced, at the
    shorter TTL before it.

    OpenAI: ``retention`` is sent as ``prompt_cache_retention`` when the model accepts that
    value (the model catalog's ``cache.ttl``); otherwise it is left out and the assembly says
    so in its diagnostics.  Prices do not change with it.  Gemini's implicit cache has no
    lifetime to ask for: nothing is sent, and asking is noted in the diagnostics."""

    ttl: CacheTtl | None = None
    """Every Anthropic marker's TTL unless one below says otherwise (default ``5m``)."""
    prefix_ttl: CacheTtl | None = None
    """Markers at the end of the tool catalog and of the system prompt (default: the
    profile's ``cacheTtl``, else ``ttl``)."""
    history_ttl: CacheTtl | None = None
    """The marker at the end of the masked history (default ``ttl``)."""
    tail_ttl: CacheTtl | None = None
    """Markers on the moving tail: the transcript before the new turn, the new turn, the
    previous request's last entry (default ``ttl``)."""
    retention: CacheRetention | None = None
    """OpenAI's ``prompt_cache_retention`` (default: not sent, the provider's default)."""
    from_pauses: bool = True
    """Choose the stable prefix's and the masked history's TTL from the session's own pauses
    (Anthropic): ``1h`` when, over its recent model calls, a 5-minute entry would have expired
    often enough to pay for the dearer 1-hour writes, else ``prefixTtl`` / ``historyTtl`` as
    set; the tail keeps ``tailTtl`` (``docs/guide/context-policy.md``).  On by default: a
    host that wants fixed TTLs sets it ``false``."""
    compact_when_cold: float | None = Field(default=COLD_COMPACT_SHARE, gt=0, le=1)
    """Advise compaction when the cache is cold anyway (the time since the session's last
    model call is past the stable prefix's TTL, so the next request writes it again) and the
    transcript is past this share of the available input (default 0.3; ``null``: only at the
    usual threshold)."""


class PromptProfile(WireModel):
    """How to assemble: the model and its limits, the history window, fragment overrides."""

    provider: Provider = "anthropic"
    model: str = "claude-sonnet-4-5"
    window: int | None = Field(default=None, ge=1024)
    """Context window override; default from the shipped model table."""
    max_output: int | None = Field(default=None, ge=1)
    """Output tokens reserved; default from the model table."""
    history_window: HistoryWindow = Field(default_factory=HistoryWindow)
    fragments: dict[str, str | None] = Field(default_factory=dict)
    """Replace a prompt fragment's text by id, or disable it with ``null``."""
    search_mode: str = "off"
    cache_ttl: CacheTtl | None = None
    """TTL for Anthropic cache markers on the stable prefix (tools, system); kept for older
    clients: ``cache.prefixTtl`` says the same and wins."""
    cache: CacheSettings = Field(default_factory=CacheSettings)
    """Cache lifetimes per marker (Anthropic) and OpenAI's retention."""
    skills_catalog_share: float = Field(default=0.02, gt=0, le=0.5)
    """Share of the window the skills catalog may use."""
    masking: MaskingPolicy | Literal["auto", "off"] = Field(default_factory=MaskingPolicy)
    """Observation masking of old tool results; ``"off"`` disables it, ``"auto"`` is the
    default policy."""

    @model_validator(mode="after")
    def _longer_ttl_first(self) -> PromptProfile:
        """Anthropic refuses a shorter TTL before a longer one: the stable prefix comes
        first, the masked history next, the tail last."""
        order = {"5m": 0, "1h": 1}
        ttls = self.marker_ttls()
        named = [("prefixTtl", ttls["prefix"]), ("historyTtl", ttls["history"])]
        named.append(("tailTtl", ttls["tail"]))
        for (before, a), (after, b) in itertools.pairwise(named):
            if order[a] < order[b]:
                raise ValueError(
                    f"cache.{after} {b!r} is longer than cache.{before} {a!r}, which comes "
                    "before it in the prompt: Anthropic requires longer TTLs first"
                )
        return self

    def marker_ttls(self) -> dict[Literal["prefix", "history", "tail"], CacheTtl]:
        """The TTL of each group of Anthropic markers, defaults applied."""
        cache = self.cache
        default: CacheTtl = cache.ttl or "5m"
        return {
            "prefix": cache.prefix_ttl or self.cache_ttl or default,
            "history": cache.history_ttl or default,
            "tail": cache.tail_ttl or default,
        }

    def masking_policy(self) -> MaskingPolicy:
        """:attr:`masking` as a :class:`MaskingPolicy` (the shorthands expanded)."""
        if isinstance(self.masking, MaskingPolicy):
            return self.masking
        return MaskingPolicy(mode=self.masking)


class TurnMessage(WireModel):
    """One message of the turn in progress after its user message: the model's answer with
    its tool calls, or the results of those calls (``role: "user"``, ``toolResult`` parts)."""

    role: Literal["user", "assistant"]
    content: list[ContentPart] = Field(min_length=1)


class ReportedUsage(WireModel):
    """What the provider counted for the session's previous assembled request: the budget's
    calibration (``docs/guide/context-policy.md``)."""

    prompt_tokens: int = Field(ge=1)
    """The whole prompt as the provider counted it, cached or not (Anthropic:
    ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``; OpenAI:
    ``prompt_tokens`` / ``input_tokens``; Gemini: ``promptTokenCount``)."""


class ContextAssembleParams(WireModel):
    session_id: NonEmptyStr
    user_turn: list[ContentPart] = Field(min_length=1)
    """The turn being asked now (not yet in history)."""
    turn: list[TurnMessage] = Field(default_factory=list)
    """The turn in progress after its user message, when a host that runs its own loop
    assembles a later round of it (not yet in history): the model's tool calls and their
    results, in order.  Like the user turn, never evicted nor masked; the request ends on
    its last message (the results the model answers next).  Every result answers a call
    before it in the turn, and every call is answered before the next assistant message and
    by the end."""
    previous_usage: ReportedUsage | None = None
    """The provider's count of the session's previous request assembled here (a host that
    runs its own loop reports it with its next assembly): the budget is calibrated per model
    family from it, so what is assembled fits the window as the provider counts it."""
    profile: PromptProfile = Field(default_factory=PromptProfile)
    tools: list[ToolDefinition] = Field(default_factory=list)
    sources: list[HostSource] = Field(default_factory=list)
    cwd: PathStr | None = None
    mentioned_paths: list[PathStr] = Field(default_factory=list)
    lower_to: LowerTarget | None = None
    """Also return the provider request body."""
    reuse_instructions: dict[str, str] = Field(default_factory=dict)
    """Instruction path -> hash the provider has already cached: an unchanged file is sent as
    a one-line "unchanged, text omitted" note (HistoryReuse)."""
    date: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    """The day shown in the environment block; default: today (UTC)."""
    at: Timestamp | None = None
    """When this request is sent (ISO 8601 with an offset; default: now): how long the
    session's cache has been idle, for ``profile.cache.compactWhenCold``.  A host replaying
    or importing a session passes the recorded time."""

    @field_validator("at")
    @classmethod
    def _at_has_an_offset(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parsed = datetime.fromisoformat(value)
            except ValueError:
                raise ValueError(f"at: {value!r} is not an ISO 8601 time") from None
            if parsed.tzinfo is None:
                raise ValueError(f"at: {value!r} has no UTC offset")
        return value

    @model_validator(mode="after")
    def _turn_pairs_calls_and_results(self) -> ContextAssembleParams:
        """Providers refuse a call without its result and a result without its call."""
        open_calls: set[str] = set()
        for index, message in enumerate(self.turn):
            if message.role == "assistant":
                if open_calls:
                    raise ValueError(
                        f"turn[{index}]: the calls {sorted(open_calls)} have no result "
                        "before this assistant message"
                    )
                open_calls = {p.call_id for p in message.content if p.type == "toolCall"}
                continue
            for part in message.content:
                if part.type == "toolResult":
                    if part.call_id not in open_calls:
                        raise ValueError(
                            f"turn[{index}]: the result of {part.call_id!r} answers no call "
                            "of the assistant message before it"
                        )
                    open_calls.discard(part.call_id)
        if open_calls:
            raise ValueError(f"turn: the calls {sorted(open_calls)} have no result")
        return self


# --- the assembled prompt --------------------------------------------------------------------


class Provenance(WireModel):
    """Where a section or message came from."""

    kind: Literal[
        "fragment",
        "environment",
        "instruction",
        "skillCatalog",
        "skill",
        "pin",
        "host",
        "summary",
        "transcript",
        "interruption",
        "userTurn",
    ]
    id: str
    path: str | None = None
    from_seq: SeqNumber | None = None
    through_seq: SeqNumber | None = None


class Section(WireModel):
    id: str
    category: SectionCategory
    title: str
    text: str
    tokens: int
    hash: str
    provenance: Provenance


class PromptMessage(WireModel):
    role: Literal["user", "assistant"]
    content: list[ContentPart]
    tokens: int
    provenance: list[Provenance]


class CacheBreakpoint(WireModel):
    """A place where the prefix before it is expected to be cached."""

    location: Literal["tools", "system", "message"]
    message_index: int | None = None
    """For ``message``: index in ``messages`` whose last block carries the marker."""
    ttl: CacheTtl | CacheRetention | None = None
    """How long the provider is asked to keep the prefix: an Anthropic marker's TTL (``5m``,
    ``1h``: the lowering writes ``cache_control`` with it); for OpenAI the
    ``prompt_cache_retention`` the body carries (``in_memory``, ``24h``) when one was asked
    and the model accepts it; ``null``: the provider's own lifetime (OpenAI without a
    retention, Gemini's implicit cache: no marker is written)."""
    prefix_tokens: int
    """Tokens from the start of the request up to and including this point."""
    reason: str


class CacheCost(WireModel):
    """Predicted cost of a request's input from the shipped price table
    (``sidecar/context/data/prices.json``; the output is not known before the call)."""

    input: float
    """Uncached input tokens at the model's input price."""
    cache_write: float
    """Tokens written to the cache at the 5-minute or 1-hour write price."""
    cache_read: float
    """Tokens read from the cache at the read price."""
    total: float
    currency: Literal["USD"]
    prices_as_of: str
    """Date of the price table the figures come from."""


class CacheAccounting(WireModel):
    """Predicted prompt-cache use of this request against the session's previous one, under the
    provider's rules (``sidecar/context/data/cache_rules.json``: breakpoints and their 20-block
    look-back, at most 4 markers, minimum cacheable tokens per model; OpenAI's automatic prefix
    caching in 128-token steps; Gemini's implicit caching).  Assumes the previous request was
    sent within the cache lifetime.  ``readTokens + writeTokens + uncachedTokens =
    inputTokens``."""

    provider: Provider
    model: str
    against_previous: bool
    """Whether the session's previous request was known (``false``: nothing can be read)."""
    input_tokens: int
    """All input tokens of the request (tools, system, messages)."""
    read_tokens: int
    """Tokens predicted to be read from the cache."""
    write_tokens: int
    """Tokens predicted to be written to the cache (Anthropic markers; 0 for providers that
    do not bill writes)."""
    one_hour_write_tokens: int = 0
    """Of ``writeTokens``, those written by 1-hour markers (billed at the 1-hour rate, 2x
    input; the rest at the 5-minute rate, 1.25x): Anthropic reports them as
    ``usage.cache_creation.ephemeral_1h_input_tokens``."""
    uncached_tokens: int
    """Tokens neither read nor written: billed at the plain input price."""
    first_change: str | None = None
    """What first differs from the previous request (``tool <name>``, ``system section <id>``,
    ``message <index>``, ``the model``): where its cache stops serving this one; ``null`` when
    everything the previous request sent is repeated."""
    rules_version: str
    """Version of the cache rules the prediction used."""
    cost: CacheCost | None = None
    """``null`` when the price table does not list the model."""


class LedgerItem(WireModel):
    item_id: str
    """Stable: ``ctx_<kind>_<16 hex>``, the same for the same item across turns."""
    kind: Literal[
        "harness",
        "instruction",
        "skill",
        "pin",
        "host",
        "summary",
        "transcript",
        "userTurn",
        "tool",
    ]
    visibility: Visibility
    reason: str
    tokens: int
    locator: str | None = None
    from_seq: SeqNumber | None = None
    through_seq: SeqNumber | None = None


class WindowState(WireModel):
    """Where the history window starts and when it moves next (``sidecar/context/window.py``)."""

    start_seq: SeqNumber | None = None
    """The first seq shown when a cap cut the transcript; ``null``: nothing was cut."""
    bound_by: Literal["budget", "maxTokens", "maxMessages"]
    """The cap with the least room left: the one that moves the start next."""
    unit: Literal["tokens", "messages"]
    limit: int
    """That cap's limit (the budget's room for the transcript, or the profile's cap)."""
    quantum: int
    """How far the start moves when it moves, in ``unit``."""
    room_left: int
    """Growth, in ``unit``, the transcript takes from this start before the start moves."""


class MaskingState(WireModel):
    """Observation masking now (``sidecar/context/masking.py``)."""

    masked_results: int
    """History entries whose tool results are shown as placeholders."""
    masked_tokens: int
    """What those entries would take shown whole."""
    protect_tokens: int
    batch_tokens: int
    tool_tokens: int
    """Tool output in the whole history, with the turn in progress' (``masking.countTurn``)."""
    next_move_in: int
    """Tokens of new tool output before the masked boundary moves next (a cache re-write)."""


class CountCalibration(WireModel):
    """What the provider counts per token the sidecar counts, for one model family: the input
    budget is the window's room divided by ``factor``, so what is assembled fits the window
    as the provider counts it (``docs/guide/context-policy.md``)."""

    family: str | None = None
    """The model catalog's family, else the model id (the key the ratios are kept under)."""
    factor: float
    samples: int = 0
    """Provider usages it was calibrated from (0: the margin for the family until then)."""


class Dashboard(WireModel):
    window: int
    reserved_output: int
    available_input: int
    used: int
    free: int
    categories: dict[str, int]
    """Tokens per category: system, tools, instructions, skills, pinned, host, summary,
    transcript, userTurn.  They add up to ``used``."""
    summary: str
    """One line, e.g. ``context 12 visible · 1 pinned · 40 archived · 18.2k/150.0k tokens``."""
    history_window: WindowState | None = None
    masking: MaskingState | None = None
    """``null`` when masking is off."""
    calibration: CountCalibration | None = None
    """How the budget's counts were scaled to the provider's."""


class ModelLimits(WireModel):
    """The window and output reservation an assembly used, and where they came from."""

    model: str
    window: int
    max_output: int
    """Output tokens reserved (the budget keeps them free), not the model's hard maximum."""
    source: Literal["profile", "live", "table", "family", "fallback"]
    """``profile``: the profile's window/maxOutput; ``live``: the window (and output limit)
    the provider's models endpoint reported to this process (``note`` names the request; the
    output reservation is still the catalog's, capped by that limit); ``table``: the model's
    catalog row (``sidecar/context/data/models.json``); ``family``: a model the catalog does
    not list, given the figures of its vendor's family; ``fallback``: nothing matched
    (32,768 / 4,096)."""
    family: str | None = None
    """The catalog family whose figures were used (absent for the fallback)."""
    output_limit: int | None = None
    """The model's maximum output: the models endpoint's when it reported one, else the
    family's documented figure, when the catalog knows it."""
    min_cache_tokens: int | None = None
    """The family's smallest cacheable prompt prefix, when the catalog knows it."""
    note: str | None = None
    """The catalog row's caveat (a figure taken from the nearest documented family); with
    ``live``, which request reported the figures."""
    warning: str | None = None
    """Set when the window is not the profile's, the models endpoint's, nor the model's own
    row's: which figures were used instead and how to override them."""


class CompactionAdvice(WireModel):
    advised: bool
    transcript_tokens: int
    """Tokens of the whole candidate transcript (after the latest compaction)."""
    threshold_tokens: int
    """92% of the available input."""
    keep_from_seq: SeqNumber | None = None
    """A suggested ``keepFromSeq``: the start of the newest ~20k tokens, on a user turn."""
    reason: Literal["threshold", "coldCache"] | None = None
    """Why it is advised (``None`` when it is not): the transcript is past the threshold, or
    the cache is cold anyway and the transcript past ``cache.compactWhenCold``'s share — a
    compaction that costs no re-write, taken once, never a failure when it cannot do more."""


class AssembledPrompt(WireModel):
    system: list[Section]
    messages: list[PromptMessage]
    tools: list[ToolDefinition]
    ledger: list[LedgerItem]
    dashboard: Dashboard
    cache_breakpoints: list[CacheBreakpoint]
    tokenizer: str
    model_limits: ModelLimits
    compaction: CompactionAdvice
    instructions_diff: InstructionsDiff
    diagnostics: list[Diagnostic]
    through_seq: SeqNumber
    """The session head this prompt was assembled from."""
    cache: CacheAccounting | None = None
    """Predicted cache read / write / uncached tokens and cost against the session's previous
    request.  Always in ``context/assemble`` answers; not kept in a stored snapshot (it says
    how this request relates to another, not what the model sees)."""


class ContextAssembleResult(AssembledPrompt):
    body: JsonObject | None = None
    """The provider request body, when ``lowerTo`` was given."""
