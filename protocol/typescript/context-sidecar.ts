// context-sidecar protocol: wire types and typed method table.
// Generated from the protocol schema. Do not edit: regenerate with
// `python -m protocol.export`.

export const PROTOCOL_VERSION = 1 as const;
export const SCHEMA_HASH = "8722839f5f71d97c680c2add55162a15" as const;

export interface ApprovalRequestParams {
  runId: string;
  callId: string;
  name: string;
  arguments: { [key: string]: unknown };
  /**
   * A built-in tool: the sidecar runs it once approved.
   * @default false
   */
  builtin?: boolean;
  /** What a built-in call does, as the approval mode counts it. */
  effect?: "read" | "edit" | "execute" | "mcp" | null;
  /** The approval mode that asked. */
  mode?: "ask" | "accept_edits" | "auto" | "plan" | "read_only" | "allow_all" | null;
  /** A built-in write or edit: what it would do (the diff to show). */
  change?: protocol__tools__FileChange | null;
  /** A built-in ``run_command``: the command and ``cwd`` it would run in. */
  command?: string | null;
  cwd?: string | null;
  /**
   * ``auto`` mode: why a command is asked about — the model asked to run it outside the
   * sandbox (``requested``), or it failed in the sandbox in a way that shows the sandbox
   * blocked it (``blocked``).  Approved, it runs outside the sandbox.
   */
  escalation?: "requested" | "blocked" | null;
  /** With ``escalation``: the model's reason (``requested``) or what the sandbox blocked. */
  justification?: string | null;
}

export interface ApprovalRequestResult {
  approved: boolean;
  reason?: string | null;
}

/**
 * Server -> client request, sent only to hosts that declared
 * ``capabilities.experimental.contextSidecar.assembly = true``: build a sub-agent's prompt
 * with the host's own assembler.
 */
export interface AssemblyRequestParams {
  runId: string;
  callId: string;
  scope: "delegate" | "handoff";
  inputId: string;
  /** sha256 of the preset components, the input id and the task. */
  fingerprint: string;
  /** The sub-agent's turn so far (``{role, content}``), its task first. */
  turn: { [key: string]: unknown }[];
}

export interface AssemblyRequestResult {
  /** ``{role: user | assistant, content: [parts]}``, the last one the sub-agent answers. */
  messages: { [key: string]: unknown }[];
  system?: string | null;
}

export interface BlobReadParams {
  blob: string;
  /** @default 0 */
  offset?: number;
  /** @default 1048576 */
  length?: number;
  /**
   * ``utf-8`` when the range is text (a range cut inside a character is widened to whole
   * characters); ``base64`` for anything.
   * @default "utf-8"
   */
  encoding?: "utf-8" | "base64";
}

export interface BlobReadResult {
  blob: string;
  size: number;
  offset: number;
  length: number;
  data: string;
  encoding: "utf-8" | "base64";
  eof: boolean;
}

/**
 * Payload of ``tool.callRequested`` (every tool call; the ``builtin`` fields only for a
 * built-in one).
 */
export interface BuiltinCallRequested {
  callId: string;
  name: string;
  arguments: { [key: string]: unknown };
  /**
   * Run by the sidecar (no ``tool/execute`` follows).
   * @default false
   */
  builtin?: boolean;
  effect?: "read" | "edit" | "execute" | null;
  /** What a front end shows for it: "Read calc/add.py", "Run `pytest -q`". */
  title?: string | null;
}

/** Which built-in tools a run offers, who approves them, and how large a result may be. */
export interface BuiltinTools {
  /**
   * The tools to offer (always in the catalog's order); absent: all of them.  A profile's
   * list narrows a run's: a run gets only the tools both name.  ``[]`` turns them off (a run
   * whose host runs tools of these names itself, as the ACP face does).
   */
  tools?: ("list_dir" | "glob" | "grep" | "read_file" | "write_file" | "edit_file" | "run_command" | "recall" | "update_plan")[] | null;
  /** Absent: the session's mode (the one an ACP client set), else ``ask``. */
  mode?: "ask" | "accept_edits" | "auto" | "plan" | "read_only" | "allow_all" | null;
  /** Bound of one tool result, in tokens (default 10,000: about 30,000 characters). */
  maxResultTokens?: number | null;
  /**
   * Environment variables ``run_command`` passes on besides its allowlist (``PATH``,
   * ``HOME``, the locale, the toolchains' variables): exact names, taken even when a name
   * reads like a secret; a value that looks like one is still left out.  A run's names and
   * its profile's are both passed.
   */
  env?: string[] | null;
}

/**
 * Predicted prompt-cache use of this request against the session's previous one, under the
 * provider's rules (``sidecar/context/data/cache_rules.json``: breakpoints and their 20-block
 * look-back, at most 4 markers, minimum cacheable tokens per model; OpenAI's automatic prefix
 * caching in 128-token steps; Gemini's implicit caching).  Assumes the previous request was
 * sent within the cache lifetime.  ``readTokens + writeTokens + uncachedTokens =
 * inputTokens``.
 */
export interface CacheAccounting {
  provider: "anthropic" | "openai" | "gemini" | "other";
  model: string;
  /** Whether the session's previous request was known (``false``: nothing can be read). */
  againstPrevious: boolean;
  /** All input tokens of the request (tools, system, messages). */
  inputTokens: number;
  /** Tokens predicted to be read from the cache. */
  readTokens: number;
  /**
   * Tokens predicted to be written to the cache (Anthropic markers; 0 for providers that
   * do not bill writes).
   */
  writeTokens: number;
  /**
   * Of ``writeTokens``, those written by 1-hour markers (billed at the 1-hour rate, 2x
   * input; the rest at the 5-minute rate, 1.25x): Anthropic reports them as
   * ``usage.cache_creation.ephemeral_1h_input_tokens``.
   * @default 0
   */
  oneHourWriteTokens?: number;
  /** Tokens neither read nor written: billed at the plain input price. */
  uncachedTokens: number;
  /**
   * What first differs from the previous request (``tool <name>``, ``system section <id>``,
   * ``message <index>``, ``the model``): where its cache stops serving this one; ``null`` when
   * everything the previous request sent is repeated.
   */
  firstChange?: string | null;
  /** Version of the cache rules the prediction used. */
  rulesVersion: string;
  /** ``null`` when the price table does not list the model. */
  cost?: CacheCost | null;
}

/** A place where the prefix before it is expected to be cached. */
export interface CacheBreakpoint {
  location: "tools" | "system" | "message";
  /** For ``message``: index in ``messages`` whose last block carries the marker. */
  messageIndex?: number | null;
  /**
   * How long the provider is asked to keep the prefix: an Anthropic marker's TTL (``5m``,
   * ``1h``: the lowering writes ``cache_control`` with it); for OpenAI the
   * ``prompt_cache_retention`` the body carries (``in_memory``, ``24h``) when one was asked
   * and the model accepts it; ``null``: the provider's own lifetime (OpenAI without a
   * retention, Gemini's implicit cache: no marker is written).
   */
  ttl?: "5m" | "1h" | "in_memory" | "24h" | null;
  /** Tokens from the start of the request up to and including this point. */
  prefixTokens: number;
  reason: string;
}

/**
 * Predicted cost of a request's input from the shipped price table
 * (``sidecar/context/data/prices.json``; the output is not known before the call).
 */
export interface CacheCost {
  /** Uncached input tokens at the model's input price. */
  input: number;
  /** Tokens written to the cache at the 5-minute or 1-hour write price. */
  cacheWrite: number;
  /** Tokens read from the cache at the read price. */
  cacheRead: number;
  total: number;
  currency: "USD";
  /** Date of the price table the figures come from. */
  pricesAsOf: string;
}

/**
 * How long the provider is asked to keep what a request caches (``docs/guide/cache.md``).
 *
 * Anthropic: the TTL of each cache marker, by the part of the prompt it ends.  The stable
 * prefix (the end of the tool catalog, of the system prompt) is written once and read by
 * every turn; the masked history changes only when the masked boundary moves; the tail (the
 * transcript before the new turn, the new turn, an extra marker at the previous request's
 * last entry) is written every turn.  A 1-hour marker is written at twice the input price
 * (5 minutes: 1.25x), read at the same 0.1x.  The API requires a longer TTL before a shorter
 * one in the prompt: a setting whose TTLs grow toward the tail (``prefixTtl: "5m"``,
 * ``tailTtl: "1h"``) is refused; a marker placed out of that order (the extra marker at the
 * previous request's entry, before a 1-hour history marker) is sent, and priced, at the
 * shorter TTL before it.
 *
 * OpenAI: ``retention`` is sent as ``prompt_cache_retention`` when the model accepts that
 * value (the model catalog's ``cache.ttl``); otherwise it is left out and the assembly says
 * so in its diagnostics.  Prices do not change with it.  Gemini's implicit cache has no
 * lifetime to ask for: nothing is sent, and asking is noted in the diagnostics.
 */
export interface CacheSettings {
  /** Every Anthropic marker's TTL unless one below says otherwise (default ``5m``). */
  ttl?: "5m" | "1h" | null;
  /**
   * Markers at the end of the tool catalog and of the system prompt (default: the
   * profile's ``cacheTtl``, else ``ttl``).
   */
  prefixTtl?: "5m" | "1h" | null;
  /** The marker at the end of the masked history (default ``ttl``). */
  historyTtl?: "5m" | "1h" | null;
  /**
   * Markers on the moving tail: the transcript before the new turn, the new turn, the
   * previous request's last entry (default ``ttl``).
   */
  tailTtl?: "5m" | "1h" | null;
  /** OpenAI's ``prompt_cache_retention`` (default: not sent, the provider's default). */
  retention?: "in_memory" | "24h" | null;
  /**
   * Choose the stable prefix's and the masked history's TTL from the session's own pauses
   * (Anthropic): ``1h`` when, over its recent model calls, a 5-minute entry would have expired
   * often enough to pay for the dearer 1-hour writes, else ``prefixTtl`` / ``historyTtl`` as
   * set; the tail keeps ``tailTtl`` (``docs/guide/context-policy.md``).  On by default: a
   * host that wants fixed TTLs sets it ``false``.
   * @default true
   */
  fromPauses?: boolean;
  /**
   * Advise compaction when the cache is cold anyway (the time since the session's last
   * model call is past the stable prefix's TTL, so the next request writes it again) and the
   * transcript is past this share of the available input (default 0.3; ``null``: only at the
   * usual threshold).
   * @default 0.3
   */
  compactWhenCold?: number | null;
}

export interface Checkpoint {
  /** ``ckpt_`` + 26 characters, time-ordered. */
  checkpointId: string;
  sessionId: string;
  /** The history seq it stands before: the session's head was ``seq - 1`` when it was taken. */
  seq: number;
  /** Seq of the user message of the turn it belongs to (``null``: taken outside a turn). */
  turnSeq?: number | null;
  createdAt: string;
  reason: "turn" | "edit" | "command" | "restore";
  runId?: string | null;
  callId?: string | null;
  /** The tool whose call it stands before (``edit`` and ``command`` checkpoints). */
  tool?: string | null;
  /** Files captured. */
  files: number;
  /**
   * Files over ``checkpoints.maxFileBytes``: recorded by path and size, their content not
   * kept (a restore leaves them alone).
   */
  notCaptured: number;
  /** Files that differ between the checkpoint and the workspace now. */
  changedFiles: number;
}

export interface CheckpointDiffParams {
  sessionId: string;
  checkpointId: string;
  /**
   * Bound on the unified diffs together; past it ``diff`` is ``null`` and ``truncated``.
   * @default 262144
   */
  maxBytes?: number;
}

export interface CheckpointDiffResult {
  checkpointId: string;
  /** Restoring the checkpoint applies the reverse of these changes. */
  files: protocol__checkpoints__FileChange[];
  /** Some diffs were left out (``maxBytes``). */
  truncated: boolean;
}

export interface CheckpointListParams {
  sessionId: string;
  /** @default 100 */
  limit?: number;
}

export interface CheckpointListResult {
  /** Newest first. */
  checkpoints: Checkpoint[];
  /** How many the session holds (retention keeps the last ``checkpoints.keep``). */
  total: number;
}

export interface CheckpointRestoreParams {
  sessionId: string;
  checkpointId: string;
  /** Put the workspace's files back as the checkpoint holds them. */
  files: boolean;
  /** Fork the session before the checkpoint's turn (nothing is deleted). */
  conversation: boolean;
  /**
   * Overwrite files changed outside the agent since (conflicts).
   * @default false
   */
  force?: boolean;
}

export interface CheckpointRestoreResult {
  /** ``conflicts``: nothing was written, no checkpoint taken, no fork made. */
  status: "restored" | "conflicts";
  restored?: RestoredFile[];
  conflicts?: RestoreConflict[];
  notRestored?: UnrestoredFile[];
  /** The ``restore`` checkpoint taken first: restoring it undoes this restore. */
  undoCheckpointId?: string | null;
  /** The new session when ``conversation`` was asked for. */
  forkedSessionId?: string | null;
}

export interface CheckpointStats {
  /** Checkpoints every session holds together. */
  count: number;
  /** Distinct trees and blobs they refer to. */
  objects: number;
  /** Bytes those objects take in the store (compressed, on disk). */
  bytes: number;
  /**
   * Per workspace root this process has captured, its file watcher: ``on``, ``off: <why>``
   * (the watch limit was reached: every capture walks every file) or ``none`` (not Linux, or
   * a remote file system).
   */
  watchers?: { [key: string]: string };
}

/** When the input was frozen, to the minute: what ``{{date}}`` and ``{{time}}`` show. */
export interface Clock {
  date: string;
  time: string;
}

export interface CompactionAdvice {
  advised: boolean;
  /** Tokens of the whole candidate transcript (after the latest compaction). */
  transcriptTokens: number;
  /** 92% of the available input. */
  thresholdTokens: number;
  /** A suggested ``keepFromSeq``: the start of the newest ~20k tokens, on a user turn. */
  keepFromSeq?: number | null;
  /**
   * Why it is advised (``None`` when it is not): the transcript is past the threshold, or
   * the cache is cold anyway and the transcript past ``cache.compactWhenCold``'s share — a
   * compaction that costs no re-write, taken once, never a failure when it cannot do more.
   */
  reason?: "threshold" | "coldCache" | null;
}

export interface CompactionEntry {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "compaction";
  summary: string;
  throughSeq: number;
  keepFromSeq?: number | null;
  seq: number;
  /**
   * Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its
   * entries with their ids, so an id names the same content in every branch.
   */
  id: string;
  time: string;
  /**
   * xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came,
   * ``meta`` left out); keys the token-count cache.
   */
  hash: string;
  /** Cached token counts per tokenizer id, present when asked for (``withTokens``). */
  tokens?: { [key: string]: number } | null;
}

/**
 * Everything up to ``throughSeq`` is represented by ``summary``, except the kept tail
 * ``keepFromSeq..throughSeq``.  Nothing is deleted.
 */
export interface CompactionInput {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "compaction";
  summary: string;
  throughSeq: number;
  keepFromSeq?: number | null;
}

export type ContentPart = TextPart | ImagePart | ToolCallPart | ToolResultPart | ReasoningPart;

/** The values of ContentPart's `type` tag. */
export type ContentPartKind = ContentPart["type"];

export interface ContextAssembleParams {
  sessionId: string;
  /** The turn being asked now (not yet in history). */
  userTurn: ContentPart[];
  /**
   * The turn in progress after its user message, when a host that runs its own loop
   * assembles a later round of it (not yet in history): the model's tool calls and their
   * results, in order.  Like the user turn, never evicted nor masked; the request ends on
   * its last message (the results the model answers next).  Every result answers a call
   * before it in the turn, and every call is answered before the next assistant message and
   * by the end.
   */
  turn?: TurnMessage[];
  /**
   * The provider's count of the session's previous request assembled here (a host that
   * runs its own loop reports it with its next assembly): the budget is calibrated per model
   * family from it, so what is assembled fits the window as the provider counts it.
   */
  previousUsage?: ReportedUsage | null;
  profile?: PromptProfile;
  tools?: ToolDefinition[];
  sources?: HostSource[];
  cwd?: string | null;
  mentionedPaths?: string[];
  /** Also return the provider request body. */
  lowerTo?: "anthropic-messages" | "openai-chat" | "openai-responses" | "gemini" | "system-as-user" | null;
  /**
   * Instruction path -> hash the provider has already cached: an unchanged file is sent as
   * a one-line "unchanged, text omitted" note (HistoryReuse).
   */
  reuseInstructions?: { [key: string]: string };
  /** The day shown in the environment block; default: today (UTC). */
  date?: string | null;
  /**
   * When this request is sent (ISO 8601 with an offset; default: now): how long the
   * session's cache has been idle, for ``profile.cache.compactWhenCold``.  A host replaying
   * or importing a session passes the recorded time.
   */
  at?: string | null;
}

export interface ContextAssembleResult {
  system: Section[];
  messages: PromptMessage[];
  tools: ToolDefinition[];
  ledger: LedgerItem[];
  dashboard: Dashboard;
  cacheBreakpoints: CacheBreakpoint[];
  tokenizer: string;
  modelLimits: ModelLimits;
  compaction: CompactionAdvice;
  instructionsDiff: InstructionsDiff;
  diagnostics: Diagnostic[];
  /** The session head this prompt was assembled from. */
  throughSeq: number;
  /**
   * Predicted cache read / write / uncached tokens and cost against the session's previous
   * request.  Always in ``context/assemble`` answers; not kept in a stored snapshot (it says
   * how this request relates to another, not what the model sees).
   */
  cache?: CacheAccounting | null;
  /** The provider request body, when ``lowerTo`` was given. */
  body?: { [key: string]: unknown } | null;
}

/** One captured item: a locator, a short preview, and the full content as a blob. */
export interface ContextItem {
  kind: "file" | "url" | "snippet" | "command" | "image" | "other";
  /** Locator: workspace-relative path, URL, label, shell command or file name. */
  path: string;
  /** At most 500 characters, never splitting one. */
  preview?: string | null;
  /** Git object id of the full content (for a file tracked by git: its git blob id). */
  blob?: string | null;
}

/**
 * An attachment as the host sends it.  Files are read from the workspace (confined to
 * its roots) unless ``content`` is given; URLs are never fetched: the host supplies the
 * content.
 */
export interface ContextItemInput {
  kind: "file" | "url" | "snippet" | "command" | "image" | "other";
  path: string;
  /** Text content (url, snippet, command output, other; optional for files). */
  content?: string | null;
  /** Binary content (images). */
  dataBase64?: string | null;
  mediaType?: string | null;
}

export interface ContextSourcesParams {
  sessionId: string;
  /** Absolute directory inside a workspace root; default: the session's primary root. */
  cwd?: string | null;
  /** Workspace-relative paths the turn mentions; nested instruction files apply to them. */
  mentionedPaths?: string[];
}

export interface ContextSourcesResult {
  projectRoot: string;
  instructions: InstructionFile[];
  skills: SkillInfo[];
  diagnostics: Diagnostic[];
}

/**
 * What the provider counts per token the sidecar counts, for one model family: the input
 * budget is the window's room divided by ``factor``, so what is assembled fits the window
 * as the provider counts it (``docs/guide/context-policy.md``).
 */
export interface CountCalibration {
  /** The model catalog's family, else the model id (the key the ratios are kept under). */
  family?: string | null;
  factor: number;
  /**
   * Provider usages it was calibrated from (0: the margin for the family until then).
   * @default 0
   */
  samples?: number;
}

export interface Dashboard {
  window: number;
  reservedOutput: number;
  availableInput: number;
  used: number;
  free: number;
  /**
   * Tokens per category: system, tools, instructions, skills, pinned, host, summary,
   * transcript, userTurn.  They add up to ``used``.
   */
  categories: { [key: string]: number };
  /** One line, e.g. ``context 12 visible · 1 pinned · 40 archived · 18.2k/150.0k tokens``. */
  summary: string;
  historyWindow?: WindowState | null;
  /** ``null`` when masking is off. */
  masking?: MaskingState | null;
  /** How the budget's counts were scaled to the provider's. */
  calibration?: CountCalibration | null;
}

export interface DeleteResult {
  id: string;
  deleted: boolean;
}

/** A problem found while reading a source; the source is skipped, never fatal. */
export interface Diagnostic {
  severity: "warning" | "error";
  /** Dotted, e.g. ``instructions.oversized``, ``skills.invalid_frontmatter``. */
  code: string;
  path: string;
  message: string;
}

/** Params naming one stored profile or preset. */
export interface DocumentRef {
  id: string;
}

export interface DropEntry {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "drop";
  target: ItemRef;
  reason?: string | null;
  seq: number;
  /**
   * Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its
   * entries with their ids, so an id names the same content in every branch.
   */
  id: string;
  time: string;
  /**
   * xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came,
   * ``meta`` left out); keys the token-count cache.
   */
  hash: string;
  /** Cached token counts per tokenizer id, present when asked for (``withTokens``). */
  tokens?: { [key: string]: number } | null;
}

/** Keep an item out of the prompt (it stays in history and can be recovered). */
export interface DropInput {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "drop";
  target: ItemRef;
  reason?: string | null;
}

/** Params of methods that take none (``{}`` or omitted). */
export type EmptyParams = Record<string, never>;

export type Entry =
  | MessageEntry
  | CompactionEntry
  | PinEntry
  | UnpinEntry
  | DropEntry
  | RecoverEntry
  | SkillActivatedEntry
  | VariablesEntry
  | NoteEntry;

/** The values of Entry's `kind` tag. */
export type EntryKind = Entry["kind"];

export type EntryInput =
  | MessageInput
  | CompactionInput
  | PinInput
  | UnpinInput
  | DropInput
  | RecoverInput
  | SkillActivatedInput
  | VariablesInput
  | NoteInput;

/** The values of EntryInput's `kind` tag. */
export type EntryInputKind = EntryInput["kind"];

/** The fields the store assigns to an appended entry. */
export interface EntryRef {
  seq: number;
  /**
   * Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its
   * entries with their ids, so an id names the same content in every branch.
   */
  id: string;
  time: string;
  /**
   * xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came,
   * ``meta`` left out); keys the token-count cache.
   */
  hash: string;
}

/** The ``data`` member of every error response the sidecar sends. */
export interface ErrorData {
  /** Dotted machine-readable code, e.g. ``session.not_found``. */
  code: string;
  /**
   * True when the same request may succeed if sent again later, unchanged.
   * @default false
   */
  retryable?: boolean;
  /** A hint for retryable errors such as ``server.overloaded`` or ``store.locked``. */
  retryAfterMs?: number | null;
  /** For ``params.invalid``: every problem found, not just the first. */
  errors?: ParamError[] | null;
  /** Code-specific facts (the session id that was not found, the expected head seq, ...). */
  details?: { [key: string]: unknown } | null;
}

export interface ForkOrigin {
  sessionId: string;
  atSeq: number;
}

export interface FrozenInput {
  sessionId: string;
  /** History up to this seq belongs to the turn; later appends do not. */
  throughSeq: number;
  clock: Clock;
  userTurn: ContentPart[];
  attachments?: ContextItem[];
  components?: PromptComponent[];
  activatedEntries?: HostSource[];
  macroContext?: MacroContextInput;
  variables?: Variables;
  modelConnection?: ModelConnection | null;
  tools?: ToolDefinition[];
  skills?: SkillInfo[];
  activatedSkills?: SkillSnapshot[];
  instructions?: InstructionSnapshot[];
  pinnedFiles?: ContextItem[];
  /** Prompt fragments replaced by workspace files (``.context-sidecar/fragments/<id>.md``). */
  fragmentOverrides?: { [key: string]: string };
  cwd?: string | null;
  mentionedPaths?: string[];
}

/**
 * Where the transcript starts once it no longer fits.
 *
 * The window start moves forward by a quantum, not one group at a time, and then holds
 * still until the transcript overflows again: the cached prompt prefix is re-written once
 * per quantum instead of on every turn.  It never moves back before where the session's
 * window last started (kept in the store, per model), and always falls on a user turn.
 */
export interface HistoryWindow {
  /** Most transcript messages kept, counted over whole groups (default: no cap). */
  maxMessages?: number | null;
  /** Most transcript tokens kept (default: the working budget, ``workingTokens``). */
  maxTokens?: number | null;
  /**
   * The working budget: most transcript tokens kept whatever the model's window, unless
   * ``maxTokens`` says less (``null``: whatever the budget allows).  Every request reads its
   * whole transcript from the cache, so a transcript held near a 200k (or 1M) window pays
   * for all of it on every request; what the model works with is its newest turns, and the
   * user's own messages (``keepUserMessages``).  ``docs/guide/context-policy.md`` gives what
   * it costs and shows at 40k, 64k and 100k.
   * @default 64000
   */
  workingTokens?: number | null;
  /**
   * How far the window start moves when the transcript overflows, as a share of what
   * overflowed: of the room the transcript has in the budget, of ``maxTokens``, or of
   * ``maxMessages``.  Default: a quarter of the budget's room (large: a quarter is many
   * turns), half of an explicit ``maxTokens`` / ``maxMessages`` (small: a quarter of 50
   * messages would move the window, and re-write the cached prompt, every third turn).
   */
  quantum?: number | null;
  /**
   * Show the user's own messages that the window start or a compaction left out, verbatim,
   * at the start of the transcript (what the user asked survives what the window hides; the
   * text changes only when the start moves).  They take at most ``userMessagesShare`` of the
   * input budget, kept for them; the oldest beyond it are left out.  Inside a host's explicit
   * cap they are part of it, never on top: ``maxTokens`` keeps that share of its tokens for
   * them, ``maxMessages`` one of its messages, holding at most that share of its count of
   * them; the window has the rest.  Default: on.
   */
  keepUserMessages?: boolean | null;
  /**
   * The share of the input budget kept for those messages (out of what the working budget
   * leaves free when there is one: a window smaller than it keeps none); with an explicit
   * ``maxTokens`` / ``maxMessages``, the share of that cap.
   * @default 0.2
   */
  userMessagesShare?: number;
}

/** A section supplied by the host (RAG results, editor state, ...). */
export interface HostSource {
  id: string;
  /** @default "" */
  title?: string;
  text: string;
  /**
   * Higher is selected first among host sources.
   * @default 0
   */
  priority?: number;
}

export interface HostSourceRef {
  sessionId: string;
  id: string;
}

/** An image held in the blob store (see ``blob/read``). */
export interface ImagePart {
  type: "image";
  /** Git object id of the image bytes in the blob store. */
  blob: string;
  /** MIME type, e.g. ``image/png``. */
  mediaType: string;
  alt?: string | null;
}

export interface InputFreezeParams {
  sessionId: string;
  userTurn: ContentPart[];
  attachments?: ContextItemInput[];
  components?: PromptComponent[];
  activatedEntries?: HostSource[];
  macroContext?: MacroContextInput;
  variables?: Variables;
  modelConnection?: ModelConnection | null;
  tools?: ToolDefinition[];
  cwd?: string | null;
  mentionedPaths?: string[];
  /** Default: now (UTC), to the minute. */
  clock?: Clock | null;
}

export interface InputFreezeResult {
  /**
   * Git blob id of the input's stored JSON (compact, keys in their order; ``git cat-file -p``
   * shows it).
   */
  inputId: string;
  input: FrozenInput;
  diagnostics: Diagnostic[];
}

export interface InputGetParams {
  inputId: string;
}

/** One project-instruction file (AGENTS.md and friends) found for a workspace. */
export interface InstructionFile {
  /** Workspace-relative path, ``/``-separated. */
  path: string;
  /** Directory (workspace-relative, ``.`` for the root) the file applies to. */
  scope: string;
  /** xxh3-128 of the full file, even when the text is cut at the size cap. */
  hash: string;
  bytes: number;
  truncated: boolean;
  /** The root file always applies; a nested one when a mentioned or pinned path is in scope. */
  applies: boolean;
  reason: string;
}

export interface InstructionSnapshot {
  path: string;
  scope: string;
  hash: string;
  /** Blob id of the text as cut for the prompt. */
  blob: string;
  truncated: boolean;
  depth: number;
}

/** How the instruction files changed since this session's previous assembly. */
export interface InstructionsDiff {
  added?: string[];
  removed?: string[];
  changed?: string[];
  unreadable?: string[];
  oversized?: string[];
}

/**
 * What a pin / unpin / drop / recover acts on.
 *
 * ``file``, ``instruction`` and ``skill`` are named by ``locator`` (a workspace-relative path
 * or a skill name); ``range`` covers transcript entries ``fromSeq..throughSeq``; ``item`` names
 * a ledger item by its stable id (``ctx_<kind>_<16hex>``).
 */
export interface ItemRef {
  kind: "file" | "instruction" | "skill" | "range" | "item";
  locator?: string | null;
  fromSeq?: number | null;
  throughSeq?: number | null;
  itemId?: string | null;
}

/**
 * ``keepEverything`` on a session's own ``model.completed``: what the call would have
 * cost under keep-everything-then-compact (Claude Code's way: the whole transcript until the
 * window less the output reserve is reached, then a priced summary call and a 2,000-token
 * summary plus the newest ~20,000 tokens; its marker layout), beside the call as sent, both
 * priced by the reference cache simulator with entries expiring their TTL from the real
 * times of the calls, output included.  A model, not a bill (``docs/guide/cache.md``).
 * Absent for a sub-agent's call, for a model the price table does not list, and for bodies
 * other than Anthropic Messages and OpenAI Chat Completions.
 */
export interface KeepEverythingCall {
  /**
   * USD this call would have cost under keep-everything (with the summary call a
   * compaction made before it).
   */
  cost: number;
  /** The prompt keep-everything would have sent (cl100k on each block's JSON). */
  tokens: number;
  /**
   * Keep-everything compacted before this call.
   * @default false
   */
  compacted?: boolean;
  /**
   * USD this call cost as sent, priced the same way (not ``predictedCache``, which knows no
   * time).
   */
  ownCost: number;
  /** The prompt sent, counted the same way. */
  ownTokens: number;
  /** When the call was priced, seconds since the epoch (the simulator's clock). */
  at: number;
  /** The session's calls so far, this one included. */
  session: KeepEverythingTotals;
}

/**
 * A session's model calls so far (as far as this process saw them), summed: what they
 * cost as sent and under keep-everything-then-compact, priced alike.
 */
export interface KeepEverythingTotals {
  calls: number;
  /** USD under keep-everything-then-compact, summary calls included. */
  cost: number;
  /** USD as sent, priced by the same simulator with the same times. */
  ownCost: number;
  /**
   * Summary calls keep-everything would have made.
   * @default 0
   */
  compactions?: number;
}

export interface LedgerChange {
  itemId: string;
  kind: string;
  locator?: string | null;
  /** Visibility in the older snapshot (``null``: not a candidate then). */
  before?: string | null;
  after?: string | null;
}

export interface LedgerItem {
  /** Stable: ``ctx_<kind>_<16 hex>``, the same for the same item across turns. */
  itemId: string;
  kind: "harness" | "instruction" | "skill" | "pin" | "host" | "summary" | "transcript" | "userTurn" | "tool";
  visibility: "visible" | "pinned" | "candidate" | "archived" | "dropped" | "blocked" | "summaryOnly" | "masked";
  reason: string;
  tokens: number;
  locator?: string | null;
  fromSeq?: number | null;
  throughSeq?: number | null;
}

export interface Limits {
  /** Largest JSON-RPC body accepted; larger ones are answered with ``request.too_large``. */
  maxMessageBytes: number;
  /**
   * Deepest nesting of arrays and objects accepted in a message (``request.too_deep``).
   * @default 64
   */
  maxJsonDepth?: number;
  maxAppendEntries: number;
  maxReadLimit: number;
  maxListLimit: number;
  maxCountBytes: number;
}

export interface MacroContextInput {
  /** @default "User" */
  user?: string;
  /** @default "Assistant" */
  char?: string;
  /** Named raw templates (character description, scenario, ...), stored unevaluated. */
  templates?: { [key: string]: string };
  /** Chat facts (e.g. ``lastMessage``); read-only text. */
  facts?: { [key: string]: string };
}

/**
 * Observation masking: old tool results shown as short placeholders.
 *
 * A tool result older than the newest ``protectTokens`` of tool output is shown as a
 * placeholder (tool name and arguments, its size, a preview, the ledger id that brings it
 * back with ``session/recover``) inside its call/result group.  The masked boundary moves
 * in batches of ``batchTokens`` of tool output, so the prompt prefix stays byte-identical
 * between moves.  A pinned or recovered result is never masked.
 */
export interface MaskingPolicy {
  /** @default "auto" */
  mode?: "auto" | "off";
  /**
   * Newest tool output kept whole (default: a twelfth of the room tool output has — the
   * available input, or ``historyWindow.maxTokens`` when smaller —, at most 40,000 tokens).
   */
  protectTokens?: number | null;
  /**
   * Tool output masked per move of the boundary (default: five twelfths of that room, at
   * most 160,000 tokens).
   */
  batchTokens?: number | null;
  /**
   * Characters of the original result shown in its placeholder.
   * @default 300
   */
  previewChars?: number;
  /**
   * The results of the newest ``keepTurns`` user turns in history are never masked,
   * whatever ``protectTokens`` says (the turn in progress, ``turn``, never is).
   * @default 0
   */
  keepTurns?: number;
  /**
   * Tool rounds a batch holds at least, by the session's own output per round: while the
   * default batch (five twelfths of the working budget) holds fewer, the working budget
   * doubles (within the input budget) and the batch is five eighths of it, ``protectTokens``
   * staying at a twelfth of the budget as set — a session whose commands return logs of
   * 10k tokens moves its boundary, a cache re-write, every few rounds otherwise.  The
   * output per round is measured every 8th round, so the budget changes rarely.  Only with
   * the working budget (no ``maxTokens`` / ``maxMessages``) and no ``batchTokens``;
   * ``null``: the budget as set.
   * @default 4
   */
  batchRounds?: number | null;
  /**
   * The tool output of the turn in progress (``turn``, a run's rounds) counts on the
   * tool-output axis, as if already in history: the boundary moves on the request that
   * brings new output, which writes to the cache anyway, not on the next one, which would
   * write that output a second time.  It is never masked itself.
   * @default true
   */
  countTurn?: boolean;
  /**
   * A move masks everything older than the newest ``protectTokens`` at the point the
   * output crossed the batch line, not only what ends before that line: the result that
   * straddles the line (a command's log of 10k tokens is most of a batch) is masked with
   * the move instead of being re-written by it and masked by the next.
   * @default true
   */
  toProtect?: boolean;
}

/** Observation masking now (``sidecar/context/masking.py``). */
export interface MaskingState {
  /** History entries whose tool results are shown as placeholders. */
  maskedResults: number;
  /** What those entries would take shown whole. */
  maskedTokens: number;
  protectTokens: number;
  batchTokens: number;
  /** Tool output in the whole history, with the turn in progress' (``masking.countTurn``). */
  toolTokens: number;
  /** Tokens of new tool output before the masked boundary moves next (a cache re-write). */
  nextMoveIn: number;
}

export interface MessageEntry {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "message";
  role: "user" | "assistant" | "system";
  content: ContentPart[];
  /** Optional author name (multi-agent hosts). */
  name?: string | null;
  seq: number;
  /**
   * Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its
   * entries with their ids, so an id names the same content in every branch.
   */
  id: string;
  time: string;
  /**
   * xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came,
   * ``meta`` left out); keys the token-count cache.
   */
  hash: string;
  /** Cached token counts per tokenizer id, present when asked for (``withTokens``). */
  tokens?: { [key: string]: number } | null;
}

/** A user, assistant or system message. */
export interface MessageInput {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "message";
  role: "user" | "assistant" | "system";
  content: ContentPart[];
  /** Optional author name (multi-agent hosts). */
  name?: string | null;
}

/**
 * Which model to call, by reference.  ``connectionRef`` names where the credential
 * lives (``env:NAME`` or ``secret:NAME``); the credential itself is never accepted here.
 */
export interface ModelConnection {
  connectionRef?: string | null;
  /**
   * ``openai`` is Chat Completions (and compatible servers), but a model OpenAI serves only
   * through the Responses API (``*-codex``, ``*-pro``, deep research) goes there;
   * ``openai-responses`` is the Responses API for every model.
   * @default "anthropic"
   */
  provider?: "anthropic" | "openai" | "openai-responses" | "gemini" | "scripted" | "other";
  /** @default "claude-sonnet-4-5" */
  modelId?: string;
  /** For OpenAI-compatible servers (Ollama, llama.cpp, vLLM) or a proxy. */
  baseUrl?: string | null;
  /** Generation parameters (temperature, top_p, ...); credential-like keys are refused. */
  parameters?: { [key: string]: unknown };
}

/** The window and output reservation an assembly used, and where they came from. */
export interface ModelLimits {
  model: string;
  window: number;
  /** Output tokens reserved (the budget keeps them free), not the model's hard maximum. */
  maxOutput: number;
  /**
   * ``profile``: the profile's window/maxOutput; ``live``: the window (and output limit)
   * the provider's models endpoint reported to this process (``note`` names the request; the
   * output reservation is still the catalog's, capped by that limit); ``table``: the model's
   * catalog row (``sidecar/context/data/models.json``); ``family``: a model the catalog does
   * not list, given the figures of its vendor's family; ``fallback``: nothing matched
   * (32,768 / 4,096).
   */
  source: "profile" | "live" | "table" | "family" | "fallback";
  /** The catalog family whose figures were used (absent for the fallback). */
  family?: string | null;
  /**
   * The model's maximum output: the models endpoint's when it reported one, else the
   * family's documented figure, when the catalog knows it.
   */
  outputLimit?: number | null;
  /** The family's smallest cacheable prompt prefix, when the catalog knows it. */
  minCacheTokens?: number | null;
  /**
   * The catalog row's caveat (a figure taken from the nearest documented family); with
   * ``live``, which request reported the figures.
   */
  note?: string | null;
  /**
   * Set when the window is not the profile's, the models endpoint's, nor the model's own
   * row's: which figures were used instead and how to override them.
   */
  warning?: string | null;
}

export interface NoteEntry {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "note";
  text: string;
  seq: number;
  /**
   * Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its
   * entries with their ids, so an id names the same content in every branch.
   */
  id: string;
  time: string;
  /**
   * xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came,
   * ``meta`` left out); keys the token-count cache.
   */
  hash: string;
  /** Cached token counts per tokenizer id, present when asked for (``withTokens``). */
  tokens?: { [key: string]: number } | null;
}

/** A host note kept in history; never shown to the model. */
export interface NoteInput {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "note";
  text: string;
}

/** One reason a params object was rejected. */
export interface ParamError {
  /** Dotted path of the offending field, in wire (camelCase) names, e.g. ``entries.0.role``. */
  loc: string;
  msg: string;
  /** pydantic's error type, e.g. ``missing``, ``extra_forbidden``, ``int_type``. */
  type: string;
}

export interface PinEntry {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "pin";
  target: ItemRef;
  reason?: string | null;
  seq: number;
  /**
   * Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its
   * entries with their ids, so an id names the same content in every branch.
   */
  id: string;
  time: string;
  /**
   * xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came,
   * ``meta`` left out); keys the token-count cache.
   */
  hash: string;
  /** Cached token counts per tokenizer id, present when asked for (``withTokens``). */
  tokens?: { [key: string]: number } | null;
}

/** Keep an item in the prompt whatever the budget pressure. */
export interface PinInput {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "pin";
  target: ItemRef;
  reason?: string | null;
}

/** One step of the model's todo list (``update_plan``). */
export interface PlanEntry {
  content: string;
  status: "pending" | "in_progress" | "completed";
  /** @default "medium" */
  priority?: "high" | "medium" | "low";
}

/**
 * Payload of ``plan.updated``: the model called ``update_plan`` with a well-formed list
 * (after ``tool.callRequested``, before ``tool.resultStored`` of the same call).  The list
 * is the whole plan: it replaces the one before.  A malformed call has no such event (its
 * result tells the model what is wrong).
 */
export interface PlanUpdated {
  callId: string;
  entries: PlanEntry[];
}

export interface Preset {
  /** @default "" */
  name?: string;
  components?: PromptComponent[];
  /** Generation parameters (macros allowed in string values). */
  parameters?: { [key: string]: unknown };
  maxContext?: number | null;
  maxOutput?: number | null;
  presetId: string;
}

export interface PresetBinding {
  /**
   * ``current``: the components frozen with the input; ``ref``: the stored preset.
   * @default "current"
   */
  mode?: "current" | "ref";
  presetId?: string | null;
}

export interface PresetInput {
  /** @default "" */
  name?: string;
  components?: PromptComponent[];
  /** Generation parameters (macros allowed in string values). */
  parameters?: { [key: string]: unknown };
  maxContext?: number | null;
  maxOutput?: number | null;
}

export interface PresetList {
  presets: Preset[];
}

export interface PresetUpdateParams {
  id: string;
  preset: PresetInput;
}

export interface Profile {
  /** @default "" */
  name?: string;
  /** Overrides the connection fields of presets and inputs. */
  modelBinding?: ModelConnection;
  /** History window, fragments, cache TTL, ...; ``provider``/``model`` come from the binding. */
  assembly?: PromptProfile;
  preset?: PresetBinding;
  /**
   * The profile's instructions: a system section right after the fragments (macros allowed).
   * @default ""
   */
  agentSystemPrompt?: string;
  /**
   * Runs with this profile offer the built-in workspace tools (a run's own
   * ``builtinTools`` overrides the mode and the bound; the tool lists narrow each other).
   */
  builtinTools?: BuiltinTools | null;
  profileId: string;
}

export interface ProfileInput {
  /** @default "" */
  name?: string;
  /** Overrides the connection fields of presets and inputs. */
  modelBinding?: ModelConnection;
  /** History window, fragments, cache TTL, ...; ``provider``/``model`` come from the binding. */
  assembly?: PromptProfile;
  preset?: PresetBinding;
  /**
   * The profile's instructions: a system section right after the fragments (macros allowed).
   * @default ""
   */
  agentSystemPrompt?: string;
  /**
   * Runs with this profile offer the built-in workspace tools (a run's own
   * ``builtinTools`` overrides the mode and the bound; the tool lists narrow each other).
   */
  builtinTools?: BuiltinTools | null;
}

export interface ProfileList {
  profiles: Profile[];
}

export interface ProfileUpdateParams {
  id: string;
  profile: ProfileInput;
}

/** A preset's prompt component (SillyTavern PromptManager style). */
export interface PromptComponent {
  identifier: string;
  /** @default "system" */
  role?: "system" | "user" | "assistant";
  /** Raw template: macros are evaluated at assembly, on a working copy. */
  content: string;
  /**
   * ``relative``: a system section in preset order; ``inChat``: injected into the
   * transcript ``depth`` messages from the end, moved back to the start of a tool call and its
   * results when it would fall between them.
   * @default "relative"
   */
  position?: "relative" | "inChat";
  /** @default 4 */
  depth?: number;
  /** @default true */
  enabled?: boolean;
}

export interface PromptMessage {
  role: "user" | "assistant";
  content: ContentPart[];
  tokens: number;
  provenance: Provenance[];
}

/** How to assemble: the model and its limits, the history window, fragment overrides. */
export interface PromptProfile {
  /** @default "anthropic" */
  provider?: "anthropic" | "openai" | "gemini" | "other";
  /** @default "claude-sonnet-4-5" */
  model?: string;
  /** Context window override; default from the shipped model table. */
  window?: number | null;
  /** Output tokens reserved; default from the model table. */
  maxOutput?: number | null;
  historyWindow?: HistoryWindow;
  /** Replace a prompt fragment's text by id, or disable it with ``null``. */
  fragments?: { [key: string]: string | null };
  /** @default "off" */
  searchMode?: string;
  /**
   * TTL for Anthropic cache markers on the stable prefix (tools, system); kept for older
   * clients: ``cache.prefixTtl`` says the same and wins.
   */
  cacheTtl?: "5m" | "1h" | null;
  /** Cache lifetimes per marker (Anthropic) and OpenAI's retention. */
  cache?: CacheSettings;
  /**
   * Share of the window the skills catalog may use.
   * @default 0.02
   */
  skillsCatalogShare?: number;
  /**
   * Observation masking of old tool results; ``"off"`` disables it, ``"auto"`` is the
   * default policy.
   */
  masking?: MaskingPolicy | "auto" | "off";
}

/** An assembled prompt, immutable and content-addressed. */
export interface PromptSnapshot {
  system: Section[];
  messages: PromptMessage[];
  tools: ToolDefinition[];
  ledger: LedgerItem[];
  dashboard: Dashboard;
  cacheBreakpoints: CacheBreakpoint[];
  tokenizer: string;
  modelLimits: ModelLimits;
  compaction: CompactionAdvice;
  instructionsDiff: InstructionsDiff;
  diagnostics: Diagnostic[];
  /** The session head this prompt was assembled from. */
  throughSeq: number;
  /**
   * Predicted cache read / write / uncached tokens and cost against the session's previous
   * request.  Always in ``context/assemble`` answers; not kept in a stored snapshot (it says
   * how this request relates to another, not what the model sees).
   */
  cache?: CacheAccounting | null;
  /**
   * Git blob id of the snapshot's stored JSON (compact, keys in the order sent; without this
   * field).
   */
  snapshotId: string;
  inputId: string;
  sessionId: string;
  profileId?: string | null;
  /** xxh3-128 of the effective profile's canonical JSON. */
  profileHash: string;
  /** Generation parameters after macro evaluation (merged into lowered bodies). */
  parameters?: { [key: string]: unknown };
  unknownMacros?: string[];
  /** The attachments and pinned files the prompt carries (their blobs hold the content). */
  items?: ContextItem[];
  /**
   * The checkpoint of the workspace this snapshot's turn saw (``checkpoint/restore`` puts
   * those files back); ``null`` when none was taken (no roots, checkpoints off, or assembled
   * outside a run).
   */
  checkpointId?: string | null;
}

/** Where a section or message came from. */
export interface Provenance {
  kind: "fragment" | "environment" | "instruction" | "skillCatalog" | "skill" | "pin" | "host" | "summary" | "transcript" | "interruption" | "userTurn";
  id: string;
  path?: string | null;
  fromSeq?: number | null;
  throughSeq?: number | null;
}

/**
 * Model reasoning ("thinking"), with the provider's opaque data kept verbatim so that
 * it can be sent back, unchanged, in every later request (see *Providers* in the guide).
 *
 * - Anthropic ``thinking``: ``text`` and ``signature``; ``redacted_thinking``: ``redacted``
 *   true, ``data`` the encrypted block, ``text`` empty.
 * - OpenAI Responses reasoning item: ``id`` (``rs_...``), ``data`` its
 *   ``encrypted_content``, ``summary`` its summary texts in order and ``text`` them joined
 *   with a blank line.
 * - Unsigned reasoning (Chat Completions servers, Gemini thought summaries, the scripted
 *   provider) has ``text`` only and is shown, never sent back.
 */
export interface ReasoningPart {
  type: "reasoning";
  text: string;
  /** Anthropic's signature of a thinking block. */
  signature?: string | null;
  /**
   * Whose opaque data this is; a lowering sends the part back only to that provider's API
   * (``null``: written before this field existed, treated as Anthropic when signed).
   */
  provider?: "anthropic" | "openai-responses" | "gemini" | null;
  /** The provider's id of the reasoning item (OpenAI Responses ``rs_...``). */
  id?: string | null;
  /** Encrypted reasoning: OpenAI's ``encrypted_content``, Anthropic's redacted block. */
  data?: string | null;
  /** OpenAI Responses: the summary parts as sent (``text`` is them joined). */
  summary?: string[] | null;
  /**
   * Anthropic ``redacted_thinking``: ``data`` holds the block, nothing is readable.
   * @default false
   */
  redacted?: boolean;
}

export interface RecoverEntry {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "recover";
  target: ItemRef;
  reason?: string | null;
  seq: number;
  /**
   * Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its
   * entries with their ids, so an id names the same content in every branch.
   */
  id: string;
  time: string;
  /**
   * xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came,
   * ``meta`` left out); keys the token-count cache.
   */
  hash: string;
  /** Cached token counts per tokenizer id, present when asked for (``withTokens``). */
  tokens?: { [key: string]: number } | null;
}

export interface RecoverInput {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "recover";
  target: ItemRef;
  reason?: string | null;
}

export interface RegisterSourceParams {
  sessionId: string;
  source: HostSource;
}

/**
 * What the provider counted for the session's previous assembled request: the budget's
 * calibration (``docs/guide/context-policy.md``).
 */
export interface ReportedUsage {
  /**
   * The whole prompt as the provider counted it, cached or not (Anthropic:
   * ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``; OpenAI:
   * ``prompt_tokens`` / ``input_tokens``; Gemini: ``promptTokenCount``).
   */
  promptTokens: number;
}

/**
 * The requests this process has answered, by method, counted by how long each took inside
 * it: from the parsed request to its answer handed to the transport.  The pipe, the loop
 * turn that writes the answer and the client are not in it: beside the latency a client
 * measures, it says which side the time was spent on.  Counts only grow: the figures of a
 * period are the difference of two answers.
 */
export interface RequestLatencies {
  /** Upper bounds of the buckets, in milliseconds, increasing (each 1.25x the previous). */
  boundsMs: number[];
  /**
   * Per method, ``len(boundsMs) + 1`` counts: requests that took at most ``boundsMs[i]``
   * (and more than the bound before it); the last, those over the last bound.
   */
  counts: { [key: string]: number[] };
}

export interface RestoreConflict {
  path: string;
  /** E.g. "changed outside the agent since 2026-12-06T14:00:00.000Z". */
  reason: string;
}

export interface RestoredFile {
  path: string;
  action: "written" | "deleted" | "created";
}

export interface Run {
  runId: string;
  sessionId: string;
  inputId: string;
  status: "created" | "assembling" | "callingModel" | "dispatchingTool" | "compacting" | "completed" | "cancelled" | "failed";
  /** Model calls made so far. */
  rounds: number;
  /** Seq of the run's newest journal event. */
  headSeq: number;
  createdAt: string;
  updatedAt: string;
  failure?: RunFailure | null;
  /** The run this one resumed. */
  resumeOf?: string | null;
  /**
   * What the run was started with.  Absent from records written before the settings were
   * kept: ``run/resume`` then uses safe defaults (approval before every tool of the input)
   * and says so (``settingsDefaulted`` in the new run's ``run.created``).
   */
  settings?: RunStartSettings | null;
  /** Totals: inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens. */
  usage?: { [key: string]: unknown };
}

/** Params of the ``run/event`` notification and one line of the run's journal. */
export interface RunEvent {
  runId: string;
  sessionId: string;
  seq: number;
  time: string;
  /**
   * ``run.created``, ``run.statusChanged``, ``context.assembled``,
   * ``model.requestCreated``, ``model.delta``, ``model.completed``, ``tool.callRequested``,
   * ``tool.approval``, ``plan.updated``, ``tool.resultStored``, ``history.appended``,
   * ``compaction.started``, ``compaction.completed``, ``compaction.failed``,
   * ``run.completed``.
   */
  type: string;
  payload: { [key: string]: unknown };
}

export interface RunFailure {
  /**
   * Dotted: ``model.request_failed``, ``agent.max_tool_rounds_exceeded``,
   * ``agent.tool_loop_detected``, ``agent.interrupted``, ``context.budget_exceeded``, …
   */
  code: string;
  message: string;
  /**
   * The same request may succeed if tried again later (rate limit, overload, crash).
   * @default false
   */
  retryable?: boolean;
  /**
   * Worth offering the user a "retry" button (``run/resume``).
   * @default false
   */
  userRetryable?: boolean;
  details?: { [key: string]: unknown } | null;
}

export interface RunGetParams {
  runId: string;
}

/**
 * Server -> client notification: the client read too slowly, so this run's events (live,
 * or a ``run/subscribe`` replay past the 4 MiB backlog bound) stopped being sent after
 * ``lastSentSeq``; ``run/subscribe {afterSeq: lastSentSeq}`` catches up (after
 * ``retryAfterMs``).  Nothing is lost: the journal has every event.
 */
export interface RunLagged {
  runId: string;
  sessionId: string;
  lastSentSeq: number;
  /** ``server.overloaded``. */
  code: string;
  retryAfterMs: number;
}

export interface RunListParams {
  sessionId?: string | null;
  /** @default 50 */
  limit?: number;
}

export interface RunListResult {
  /** Newest first. */
  runs: Run[];
}

export interface RunResumeParams {
  runId: string;
  /** Model calls the resumed run may make; default: the run's own ``maxRounds``. */
  additionalRounds?: number | null;
  /** Extra instruction for the continued run (added as a user note). */
  revisionGuidance?: string | null;
  /** For the ``scripted`` provider: the answers to play (see *Scripted runs*). */
  script?: { [key: string]: unknown } | null;
}

export interface RunStartParams {
  sessionId: string;
  /** The turn to run; appended to history when the run starts. */
  userTurn?: ContentPart[] | null;
  /** Or: an input frozen beforehand with ``input/freeze`` (its user turn is the turn). */
  inputId?: string | null;
  profileId?: string | null;
  profile?: ProfileInput | null;
  /** Tools the host executes (``tool/execute``); ignored when ``inputId`` carries tools. */
  tools?: ToolDefinition[];
  /** Tool names that need ``approval/request`` before each call. */
  approvalRequired?: string[];
  /** @default 10 */
  maxRounds?: number;
  /** @default 60000 */
  toolTimeoutMs?: number;
  /** For the ``scripted`` provider: the answers to play (see *Scripted runs*). */
  script?: { [key: string]: unknown } | null;
  /**
   * Offer the built-in ``agent_delegate`` / ``agent_handoff`` tools (sub-agents).
   * @default false
   */
  delegation?: boolean;
  /**
   * ``auto``: when an assembly advises it, the model first writes a checkpoint summary
   * (stored as a compaction entry), then the same turn continues.
   * @default "auto"
   */
  compaction?: "auto" | "off";
  /**
   * Offer the sidecar's own workspace tools (see *Built-in tools*): they run in the
   * sidecar, confined to the session's ``workspaceRoots``; writes and commands are approved
   * as ``mode`` says (``approval/request`` when it asks).
   */
  builtinTools?: BuiltinTools | null;
  /**
   * Stream this run's events to this client from seq 1.
   * @default true
   */
  subscribe?: boolean;
}

export interface RunStartResult {
  runId: string;
  sessionId: string;
  inputId: string;
}

/**
 * What a run was started with, kept in its record: ``run/resume`` continues with exactly
 * these (a resumed run keeps them too).
 */
export interface RunStartSettings {
  /** The stored profile named by ``run/start``. */
  profileId?: string | null;
  /**
   * The profile as it was when the run started (inline, or the stored one's content): a
   * resumed run keeps its model binding, window and instructions even if the stored profile
   * changed or was deleted since.
   */
  profile?: ProfileInput | null;
  approvalRequired?: string[];
  /** @default 10 */
  maxRounds?: number;
  /** @default 60000 */
  toolTimeoutMs?: number;
  /** @default false */
  delegation?: boolean;
  /** @default "auto" */
  compaction?: "auto" | "off";
  /** The built-in tools as the run offered them (the profile's narrowing applied). */
  builtinTools?: BuiltinTools | null;
  /**
   * For the ``scripted`` provider: the script still to play, a stored object (``git
   * cat-file -p`` shows it).  A resumed run without a ``script`` of its own plays the rounds
   * the run it resumes had not reached.
   */
  scriptBlob?: string | null;
}

export interface RunSubscribeParams {
  runId: string;
  /**
   * Replay journal events after this seq, then continue live.
   * @default 0
   */
  afterSeq?: number;
}

export interface RunSubscribeResult {
  runId: string;
  /** Events sent from the journal (before this answer). */
  replayed: number;
  headSeq: number;
  status: "created" | "assembling" | "callingModel" | "dispatchingTool" | "compacting" | "completed" | "cancelled" | "failed";
  /**
   * False when the run had already ended, or when the replay paused at the backlog bound (a
   * ``run/lagged`` came before this answer): nothing more comes until the next
   * ``run/subscribe``.
   */
  live: boolean;
}

export interface RunUnsubscribeParams {
  runId: string;
}

export interface Section {
  id: string;
  category: "system" | "tools" | "instructions" | "skills" | "pinned" | "host" | "summary" | "transcript" | "userTurn";
  title: string;
  text: string;
  tokens: number;
  hash: string;
  provenance: Provenance;
}

/** Sent under ``capabilities.experimental.contextSidecar`` in the ``initialize`` answer. */
export interface ServerCapabilities {
  protocolVersion: number;
  serverVersion: string;
  /** xxh3-128 of the generated JSON Schema: equal hashes mean identical wire types. */
  schemaHash: string;
  /**
   * Every method a client can call (its requests and notifications to the server); what
   * the server sends the client (``run/event``, ``tool/execute``, ...) is not listed.
   */
  methods: string[];
  limits: Limits;
  tokenizers: TokenizerInfo[];
  defaultTokenizer: string;
  storePath: string;
}

/** Answer of ``server/info``: the capability block plus live facts. */
export interface ServerInfo {
  protocolVersion: number;
  serverVersion: string;
  /** xxh3-128 of the generated JSON Schema: equal hashes mean identical wire types. */
  schemaHash: string;
  /**
   * Every method a client can call (its requests and notifications to the server); what
   * the server sends the client (``run/event``, ``tool/execute``, ...) is not listed.
   */
  methods: string[];
  limits: Limits;
  tokenizers: TokenizerInfo[];
  defaultTokenizer: string;
  storePath: string;
  pid: number;
  startedAt: string;
  /**
   * Whether this process may write the store at all (false only when it was opened
   * read-only).  Any number of sidecars write one store; a session another one holds answers
   * its writes with ``session.held`` (see ``Session.heldBy``).
   */
  storeWritable: boolean;
  /**
   * Bytes sent to this client and not yet read by it (bounded: see ``run/lagged``).
   * @default 0
   */
  outboundBacklogBytes?: number;
  /**
   * How long the requests answered so far took inside the sidecar (the few plain reads
   * answered while the server loads, right after ``initialize``, are not counted).
   */
  latencies: RequestLatencies;
}

export interface ServerPingResult {
  time: string;
}

/** Sleep, then answer: lets a host test its timeouts and ``$/cancelRequest`` handling. */
export interface ServerSleepParams {
  ms: number;
}

export interface ServerSleepResult {
  sleptMs: number;
}

export interface Session {
  /** ``ses_`` + 26 characters, time-ordered (newer sessions sort later). */
  sessionId: string;
  title: string;
  /** Absolute paths the session may read from; the first is the primary root. */
  workspaceRoots: string[];
  profileId?: string | null;
  createdAt: string;
  /** Time of the last append or rename. */
  updatedAt: string;
  /** Seq of the newest entry; 0 for an empty session. */
  headSeq: number;
  forkedFrom?: ForkOrigin | null;
  meta?: { [key: string]: unknown } | null;
  /**
   * The process that holds the session for writing (this one, or another sidecar on the
   * same store), absent when none does: another process's writes answer ``session.held``
   * until it releases the session (``session/release``) or ends.
   */
  heldBy?: SessionHolder | null;
}

export interface SessionAppendParams {
  sessionId: string;
  entries: EntryInput[];
  /**
   * Optimistic concurrency: when given and the head differs, nothing is written and the
   * answer is ``store.conflict`` with the actual head in ``data.details.headSeq``.
   */
  expectedHeadSeq?: number | null;
}

export interface SessionAppendResult {
  headSeq: number;
  /** One per appended entry, in order; durable (fsynced) before this answer is sent. */
  appended: EntryRef[];
}

export interface SessionCompactParams {
  sessionId: string;
  summary: string;
  throughSeq: number;
  keepFromSeq?: number | null;
}

/** Params of ``session/pin``, ``session/unpin``, ``session/drop``, ``session/recover``. */
export interface SessionControlParams {
  sessionId: string;
  target: ItemRef;
  reason?: string | null;
}

export interface SessionCreateParams {
  /** @default "" */
  title?: string;
  /** Absolute paths; relative paths are rejected. */
  workspaceRoots?: string[];
  profileId?: string | null;
  meta?: { [key: string]: unknown } | null;
}

export interface SessionDeleteResult {
  sessionId: string;
  /** Always true; the session's files are moved to the store's ``trash/``, not erased. */
  deleted: boolean;
}

export interface SessionForkParams {
  sessionId: string;
  /** Last entry copied into the fork; default: the source's head. */
  atSeq?: number | null;
  title?: string | null;
}

/** The process writing a session: sessions are written by one process at a time. */
export interface SessionHolder {
  pid: number;
  /** ``serve``, ``acp``, or the tool that opened the store. */
  face: string;
  /** When that process took the session (ISO 8601). */
  since: string;
}

export interface SessionListParams {
  /** ``nextCursor`` of the previous page; omit for the first page. */
  cursor?: string | null;
  /** @default 50 */
  limit?: number;
}

export interface SessionListResult {
  /** Newest first (by creation); stable under concurrent creation. */
  sessions: Session[];
  /** Present when more sessions follow. */
  nextCursor?: string | null;
}

/**
 * Read a page of history in ascending seq order.
 *
 * With ``afterSeq`` (or neither bound) the page starts right after ``afterSeq`` (default 0)
 * and goes forward.  With only ``beforeSeq`` the page is the ``limit`` entries immediately
 * before it (scrolling back from the newest: ``beforeSeq = headSeq + 1``).  With both, the
 * page starts after ``afterSeq`` and stops before ``beforeSeq``.
 */
export interface SessionReadParams {
  sessionId: string;
  afterSeq?: number | null;
  beforeSeq?: number | null;
  /** @default 200 */
  limit?: number;
  /**
   * Include cached token counts (computed once per entry and tokenizer, then persisted).
   * @default false
   */
  withTokens?: boolean;
  /** Tokenizer id for ``withTokens``; default: the server's default tokenizer. */
  tokenizer?: string | null;
}

export interface SessionReadResult {
  entries: Entry[];
  headSeq: number;
  /**
   * True when more entries exist in the direction read (forward, or backward for a
   * ``beforeSeq``-only read) within the requested bounds.
   */
  hasMore: boolean;
}

/** Params of methods that act on one whole session (``session/get``, ``session/delete``). */
export interface SessionRef {
  sessionId: string;
}

export interface SessionReleaseResult {
  sessionId: string;
  /**
   * True when this process held the session and has given it back; false when it did not
   * hold it.
   */
  released: boolean;
}

export interface SessionRenameParams {
  sessionId: string;
  title: string;
}

export interface SkillActivatedEntry {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "skillActivated";
  name: string;
  path?: string | null;
  /**
   * Blob id of the activated text (what ``skills/activate`` stored).  Named ``blob``, not
   * ``hash``: every stored entry's ``hash`` is the store's content hash of the entry.
   */
  blob?: string | null;
  seq: number;
  /**
   * Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its
   * entries with their ids, so an id names the same content in every branch.
   */
  id: string;
  time: string;
  /**
   * xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came,
   * ``meta`` left out); keys the token-count cache.
   */
  hash: string;
  /** Cached token counts per tokenizer id, present when asked for (``withTokens``). */
  tokens?: { [key: string]: number } | null;
}

/** A skill's body was loaded into context. */
export interface SkillActivatedInput {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "skillActivated";
  name: string;
  path?: string | null;
  /**
   * Blob id of the activated text (what ``skills/activate`` stored).  Named ``blob``, not
   * ``hash``: every stored entry's ``hash`` is the store's content hash of the entry.
   */
  blob?: string | null;
}

/** A skill's metadata (its ``SKILL.md`` frontmatter), as in the Agent Skills spec. */
export interface SkillInfo {
  name: string;
  description: string;
  /** Absolute path of the skill directory. */
  path: string;
  /** The skills root it was found under (e.g. ``<workspace>/.agents/skills``). */
  root: string;
  license?: string | null;
  compatibility?: string | null;
  metadata?: { [key: string]: string } | null;
  allowedTools?: string[] | null;
}

export interface SkillReference {
  /** Relative to the skill directory. */
  path: string;
  bytes: number;
  truncated: boolean;
}

export interface SkillSnapshot {
  name: string;
  /** Blob id of the activated text (body + references). */
  blob: string;
}

export interface SkillsActivateParams {
  sessionId: string;
  name: string;
}

export interface SkillsActivateResult {
  skill: SkillInfo;
  /** ``SKILL.md`` without its frontmatter, then each reference file, within the limits. */
  body: string;
  references: SkillReference[];
  /** Blob id of the activated text (the ``hash`` recorded in the ``skillActivated`` entry). */
  blob: string;
  entry: EntryRef;
  diagnostics: Diagnostic[];
}

export interface SkillsListParams {
  sessionId: string;
}

export interface SkillsListResult {
  skills: SkillInfo[];
  diagnostics: Diagnostic[];
}

export interface SnapshotAssembleParams {
  sessionId: string;
  inputId: string;
  /** Stored profile to assemble with; default: the default profile. */
  profileId?: string | null;
  /** An inline profile instead of a stored one. */
  profile?: ProfileInput | null;
}

export interface SnapshotAssembleResult {
  snapshotId: string;
  inputId: string;
  dashboard: Dashboard;
  compaction: CompactionAdvice;
  /** Against the session's previous snapshot (all ``added`` for the first one). */
  diff: SnapshotDiff;
  unknownMacros: string[];
  /**
   * Predicted cache read / write / uncached tokens and cost of this prompt against the
   * session's previous snapshot.
   */
  cache: CacheAccounting;
}

export interface SnapshotDiff {
  fromSnapshot: string | null;
  toSnapshot: string;
  sectionsAdded: string[];
  sectionsRemoved: string[];
  sectionsChanged: string[];
  ledgerChanges: LedgerChange[];
  messagesBefore: number;
  messagesAfter: number;
  /** Leading request units (each tool, system section, message) identical in both. */
  prefixUnits: number;
  /** Tokens of those units: what a prompt cache can serve (predicted cache hit). */
  prefixTokens: number;
  totalTokensBefore: number;
  totalTokensAfter: number;
}

export interface SnapshotDiffParams {
  to: string;
  /** Default: the snapshot assembled before ``to`` in the same session. */
  from?: string | null;
}

export interface SnapshotGetParams {
  snapshotId: string;
}

export interface SnapshotLowerParams {
  snapshotId: string;
  target: "anthropic-messages" | "openai-chat" | "openai-responses" | "gemini" | "system-as-user";
}

export interface SnapshotLowerResult {
  snapshotId: string;
  target: "anthropic-messages" | "openai-chat" | "openai-responses" | "gemini" | "system-as-user";
  body: { [key: string]: unknown };
}

export interface SourceRegistration {
  sessionId: string;
  /**
   * Ids of the host sources registered for the session after this call (kept in memory
   * for the sidecar's lifetime, not in history).
   */
  ids: string[];
}

export interface StoreGcParams {
  /**
   * Snapshots kept per session besides those a run or a pin refers to.
   * @default 20
   */
  keepRecent?: number;
  /**
   * Blobs younger than this are kept (an input being frozen right now is not yet referenced).
   * @default 3600
   */
  graceSeconds?: number;
  /** @default false */
  dryRun?: boolean;
}

export interface StoreGcResult {
  kept: number;
  collected: number;
  collectedBytes: number;
  dryRun: boolean;
  snapshotsDropped: number;
  /**
   * Workspace checkpoints past their session's retention (the newest ``keep``, none older
   * than ``maxAgeDays``) dropped by this collection (a dry run: that would be).
   */
  checkpointsDropped: number;
}

/** Answer of ``store/stats``: what the store holds. */
export interface StoreStatsResult {
  sessions: number;
  /** Objects in the object database. */
  blobs: number;
  /** Bytes they take on disk. */
  blobBytes: number;
  checkpoints: CheckpointStats;
}

/** Plain text. */
export interface TextPart {
  type: "text";
  text: string;
}

export interface TokenizerInfo {
  /** Stable id used in caches and answers, e.g. ``cl100k_base``, ``o200k_base``, ``estimate``. */
  id: string;
  /** False for the byte-length estimate used only when no real encoding loads. */
  exact: boolean;
  /** @default true */
  available?: boolean;
  /** @default "" */
  description?: string;
}

export interface TokensCountParams {
  texts: string[];
  /** Tokenizer id; default: the server's default (``initialize`` lists them). */
  tokenizer?: string | null;
}

export interface TokensCountResult {
  /** The tokenizer that produced these counts. */
  tokenizer: TokenizerInfo;
  /** One per input text, in order. */
  counts: number[];
  total: number;
}

/**
 * Payload of ``tool.approval``: how the approval mode decided a built-in call (after
 * ``tool.callRequested``, before ``tool.resultStored``).
 */
export interface ToolApproval {
  callId: string;
  name: string;
  effect: "read" | "edit" | "execute";
  mode: "ask" | "accept_edits" | "auto" | "plan" | "read_only" | "allow_all";
  /**
   * ``allow``: run without asking; ``ask``: ``approval/request`` was sent; ``refuse``: the
   * mode forbids it (not run, the model is told); ``sandbox``: run without asking in the
   * sandbox (``auto``).
   */
  verdict: "allow" | "ask" | "refuse" | "sandbox";
  /** Whether it ran (for ``ask``: what the host answered). */
  approved: boolean;
  reason?: string | null;
  /**
   * An ``ask`` to run a command outside the sandbox (``auto``; see ``approval/request``);
   * a ``blocked`` one follows the ``sandbox`` event of the same call.
   */
  escalation?: "requested" | "blocked" | null;
}

/** The model asked for a tool to run. */
export interface ToolCallPart {
  type: "toolCall";
  callId: string;
  name: string;
  arguments: { [key: string]: unknown };
  /**
   * Opaque data the provider attached to the call, kept verbatim and sent back with it
   * (Gemini's ``thoughtSignature``: Gemini 3 refuses a call of the current turn without
   * it); absent for providers that sign nothing.
   */
  signature?: string | null;
}

export interface ToolDefinition {
  /**
   * Letters, digits, ``_`` and ``-``, at most 64: what every provider accepts (Anthropic and
   * OpenAI reject dots), so a name valid here is valid everywhere it is lowered.
   */
  name: string;
  /** @default "" */
  description?: string;
  /** JSON Schema of the arguments; must be an object schema. */
  parameters?: { [key: string]: unknown };
}

/** Server -> client request: run a tool for a run. */
export interface ToolExecuteParams {
  runId: string;
  callId: string;
  name: string;
  arguments: { [key: string]: unknown };
}

export interface ToolExecuteResult {
  content: (TextPart | ImagePart)[];
  /** @default false */
  isError?: boolean;
}

export interface ToolLocation {
  path: string;
  /** 1-based. */
  line?: number | null;
}

/** The settled result of a tool call, matched to it by ``callId``. */
export interface ToolResultPart {
  type: "toolResult";
  callId: string;
  content: (TextPart | ImagePart)[];
  /** @default false */
  isError?: boolean;
}

/**
 * Payload of ``tool.resultStored`` (every tool call; ``content`` and the fields after it
 * only for a built-in one, whose result no host has seen).
 */
export interface ToolResultStored {
  callId: string;
  isError: boolean;
  /** The history entry holding the result. */
  seq: number;
  /** What the model reads (already bounded). */
  content?: { [key: string]: unknown }[] | null;
  /**
   * The result was cut to its bound; its text says how to read on.
   * @default false
   */
  truncated?: boolean;
  locations?: ToolLocation[];
  /** A write or an edit that was made: the file before and after. */
  change?: protocol__tools__FileChange | null;
  /** A command's exit code (absent when it timed out or was cancelled). */
  exitCode?: number | null;
}

/**
 * One message of the turn in progress after its user message: the model's answer with
 * its tool calls, or the results of those calls (``role: "user"``, ``toolResult`` parts).
 */
export interface TurnMessage {
  role: "user" | "assistant";
  content: ContentPart[];
}

export interface UnpinEntry {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "unpin";
  target: ItemRef;
  reason?: string | null;
  seq: number;
  /**
   * Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its
   * entries with their ids, so an id names the same content in every branch.
   */
  id: string;
  time: string;
  /**
   * xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came,
   * ``meta`` left out); keys the token-count cache.
   */
  hash: string;
  /** Cached token counts per tokenizer id, present when asked for (``withTokens``). */
  tokens?: { [key: string]: number } | null;
}

export interface UnpinInput {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "unpin";
  target: ItemRef;
  reason?: string | null;
}

export interface UnrestoredFile {
  path: string;
  reason: string;
}

export interface Variables {
  local?: { [key: string]: unknown };
  global?: { [key: string]: unknown };
}

export interface VariablesEntry {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "variables";
  /** @default "local" */
  scope?: "local" | "global";
  values: { [key: string]: unknown };
  seq: number;
  /**
   * Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its
   * entries with their ids, so an id names the same content in every branch.
   */
  id: string;
  time: string;
  /**
   * xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came,
   * ``meta`` left out); keys the token-count cache.
   */
  hash: string;
  /** Cached token counts per tokenizer id, present when asked for (``withTokens``). */
  tokens?: { [key: string]: number } | null;
}

/** A committed change of session variables: keys set to values (``null`` unsets). */
export interface VariablesInput {
  /** Host data kept with the entry and returned verbatim; never shown to the model. */
  meta?: { [key: string]: unknown } | null;
  kind: "variables";
  /** @default "local" */
  scope?: "local" | "global";
  values: { [key: string]: unknown };
}

/** Where the history window starts and when it moves next (``sidecar/context/window.py``). */
export interface WindowState {
  /** The first seq shown when a cap cut the transcript; ``null``: nothing was cut. */
  startSeq?: number | null;
  /** The cap with the least room left: the one that moves the start next. */
  boundBy: "budget" | "maxTokens" | "maxMessages";
  unit: "tokens" | "messages";
  /** That cap's limit (the budget's room for the transcript, or the profile's cap). */
  limit: number;
  /** How far the start moves when it moves, in ``unit``. */
  quantum: number;
  /** Growth, in ``unit``, the transcript takes from this start before the start moves. */
  roomLeft: number;
}

export interface protocol__checkpoints__FileChange {
  /** Relative to its root, ``/`` separators. */
  path: string;
  /** The session root it lies under. */
  root: string;
  /** From the checkpoint to now: ``added`` exists now and not in the checkpoint. */
  change: "added" | "modified" | "deleted";
  /** Git blob id in the checkpoint (``null``: absent, or not captured). */
  before?: string | null;
  /** Git blob id of the file now (``null``: absent). */
  after?: string | null;
  beforeMode?: "100644" | "100755" | "120000" | null;
  afterMode?: "100644" | "100755" | "120000" | null;
  /** @default false */
  binary?: boolean;
  /** Unified diff, checkpoint -> now (text files, bounded). */
  diff?: string | null;
  /**
   * The checkpoint recorded the file without its content (over the size bound).
   * @default false
   */
  notCaptured?: boolean;
}

/**
 * A write or an edit of a built-in tool: the file before and after (texts over 256 KiB
 * are left out, ``omitted`` says so).
 */
export interface protocol__tools__FileChange {
  /** As the model named it (relative to the first workspace root when inside it). */
  path: string;
  /** Absent for a new file. */
  oldText?: string | null;
  newText?: string | null;
  /** @default false */
  created?: boolean;
  /** @default false */
  omitted?: boolean;
}

/** Requests the client sends, by method name. */
export interface ClientRequests {
  /** Create an empty session. */
  "session/create": { params: SessionCreateParams; result: Session };
  /** List sessions, newest first, by cursor. */
  "session/list": { params: SessionListParams; result: SessionListResult };
  /** Get one session's metadata. */
  "session/get": { params: SessionRef; result: Session };
  /** Append entries durably; optional optimistic check of the head seq. */
  "session/append": { params: SessionAppendParams; result: SessionAppendResult };
  /** Read a page of history by seq. */
  "session/read": { params: SessionReadParams; result: SessionReadResult };
  /** Copy a session's history up to a seq into a new session. */
  "session/fork": { params: SessionForkParams; result: Session };
  /** Retitle a session. */
  "session/rename": { params: SessionRenameParams; result: Session };
  /**
   * Move a session to the store's trash; `session.busy` (retryable) while a run is active on it.
   */
  "session/delete": { params: SessionRef; result: SessionDeleteResult };
  /**
   * Give the session back so that another sidecar on the store can write it (this one takes it again on its next write); `session.busy` (retryable) while a run is active on it.
   */
  "session/release": { params: SessionRef; result: SessionReleaseResult };
  /** Pin an item into the prompt. */
  "session/pin": { params: SessionControlParams; result: SessionAppendResult };
  /** Undo a pin. */
  "session/unpin": { params: SessionControlParams; result: SessionAppendResult };
  /** Keep an item out of the prompt. */
  "session/drop": { params: SessionControlParams; result: SessionAppendResult };
  /** Undo a drop. */
  "session/recover": { params: SessionControlParams; result: SessionAppendResult };
  /** Record a compaction: a summary standing for history up to a seq (nothing is deleted). */
  "session/compact": { params: SessionCompactParams; result: SessionAppendResult };
  /** Instruction files and skills found for a session, with diagnostics. */
  "context/sources": { params: ContextSourcesParams; result: ContextSourcesResult };
  /** What exactly the model would see for this turn, and why; optionally lowered. */
  "context/assemble": { params: ContextAssembleParams; result: ContextAssembleResult };
  /** Register a host source (RAG results, editor state) for a session's assemblies. */
  "context/registerSource": { params: RegisterSourceParams; result: SourceRegistration };
  /** Remove a registered host source. */
  "context/unregisterSource": { params: HostSourceRef; result: SourceRegistration };
  /** Skills available to a session. */
  "skills/list": { params: SkillsListParams; result: SkillsListResult };
  /** Load a skill's body and references; records a skillActivated entry. */
  "skills/activate": { params: SkillsActivateParams; result: SkillsActivateResult };
  /** Capture everything a turn depends on, once; content-addressed (same inputs, same id). */
  "input/freeze": { params: InputFreezeParams; result: InputFreezeResult };
  /** Read a frozen input back. */
  "input/get": { params: InputGetParams; result: FrozenInput };
  /** Assemble a frozen input with a profile into a stored, content-addressed snapshot. */
  "snapshot/assemble": { params: SnapshotAssembleParams; result: SnapshotAssembleResult };
  /** Read a snapshot. */
  "snapshot/get": { params: SnapshotGetParams; result: PromptSnapshot };
  /** A snapshot as a provider body. */
  "snapshot/lower": { params: SnapshotLowerParams; result: SnapshotLowerResult };
  /** What changed between two snapshots, and the identical prefix (predicted cache hit). */
  "snapshot/diff": { params: SnapshotDiffParams; result: SnapshotDiff };
  /** Read a range of a blob. */
  "blob/read": { params: BlobReadParams; result: BlobReadResult };
  /** Store a profile. */
  "profile/create": { params: ProfileInput; result: Profile };
  /** Read a profile. */
  "profile/get": { params: DocumentRef; result: Profile };
  /** List profiles. */
  "profile/list": { params: EmptyParams; result: ProfileList };
  /** Replace a profile. */
  "profile/update": { params: ProfileUpdateParams; result: Profile };
  /** Delete a profile. */
  "profile/delete": { params: DocumentRef; result: DeleteResult };
  /** Store a preset. */
  "preset/create": { params: PresetInput; result: Preset };
  /** Read a preset. */
  "preset/get": { params: DocumentRef; result: Preset };
  /** List presets. */
  "preset/list": { params: EmptyParams; result: PresetList };
  /** Replace a preset. */
  "preset/update": { params: PresetUpdateParams; result: Preset };
  /** Delete a preset. */
  "preset/delete": { params: DocumentRef; result: DeleteResult };
  /** Collect blobs no session, kept snapshot or input refers to (explicit, never automatic). */
  "store/gc": { params: StoreGcParams; result: StoreGcResult };
  /** What the store holds: sessions, objects and their bytes, checkpoints. */
  "store/stats": { params: EmptyParams; result: StoreStatsResult };
  /** A session's checkpoints of its workspace, newest first, with how many files changed since. */
  "checkpoint/list": { params: CheckpointListParams; result: CheckpointListResult };
  /** Per file, what changed from a checkpoint to the workspace now (bounded unified diffs). */
  "checkpoint/diff": { params: CheckpointDiffParams; result: CheckpointDiffResult };
  /**
   * Put the files back as a checkpoint holds them (checkpointed first, so it can be undone) and/or fork the conversation before its turn; files changed outside the agent are conflicts unless `force`.
   */
  "checkpoint/restore": { params: CheckpointRestoreParams; result: CheckpointRestoreResult };
  /** Start a run: the model/tool loop for a turn. */
  "run/start": { params: RunStartParams; result: RunStartResult };
  /** A run's state. */
  "run/get": { params: RunGetParams; result: Run };
  /** Runs, newest first. */
  "run/list": { params: RunListParams; result: RunListResult };
  /** Replay a run's events after afterSeq, then continue live (no gap, no duplicate). */
  "run/subscribe": { params: RunSubscribeParams; result: RunSubscribeResult };
  /** Stop receiving a run's live events. */
  "run/unsubscribe": { params: RunUnsubscribeParams; result: Run };
  /** Cancel a run; answers once it ended. */
  "run/cancel": { params: RunGetParams; result: Run };
  /** Continue a stopped run (a new run on the same input; settled tool calls are not redone). */
  "run/resume": { params: RunResumeParams; result: RunStartResult };
  /** Count tokens of texts. */
  "tokens/count": { params: TokensCountParams; result: TokensCountResult };
  /** Capabilities, limits and live server facts. */
  "server/info": { params: EmptyParams; result: ServerInfo };
  /** Trivial round trip. */
  "server/ping": { params: EmptyParams; result: ServerPingResult };
  /** Answer after a delay (cancellable); for testing client timeouts and cancellation. */
  "server/sleep": { params: ServerSleepParams; result: ServerSleepResult };
}

/** Notifications the client sends, by method name. */
export type ClientNotifications = Record<never, never>;

/** Requests the server sends, by method name. */
export interface ServerRequests {
  /** The host runs a tool for a run and answers with its result. */
  "tool/execute": { params: ToolExecuteParams; result: ToolExecuteResult };
  /** The host assembles a sub-agent's prompt with its own assembler (hosts that declared it). */
  "assembly/request": { params: AssemblyRequestParams; result: AssemblyRequestResult };
  /** The host approves or denies a tool call the profile marks as needing approval. */
  "approval/request": { params: ApprovalRequestParams; result: ApprovalRequestResult };
}

/** Notifications the server sends, by method name. */
export interface ServerNotifications {
  /** A run event, journaled before it is sent. */
  "run/event": { params: RunEvent };
  /** The client read too slowly: live events paused; catch up with run/subscribe. */
  "run/lagged": { params: RunLagged };
}

export type ClientRequestMethod = keyof ClientRequests;
export type ClientNotificationMethod = keyof ClientNotifications;
export type ServerRequestMethod = keyof ServerRequests;
export type ServerNotificationMethod = keyof ServerNotifications;

/** Every method, in registry order. */
export const METHODS = [
  { name: "session/create", kind: "request", direction: "clientToServer" },
  { name: "session/list", kind: "request", direction: "clientToServer" },
  { name: "session/get", kind: "request", direction: "clientToServer" },
  { name: "session/append", kind: "request", direction: "clientToServer" },
  { name: "session/read", kind: "request", direction: "clientToServer" },
  { name: "session/fork", kind: "request", direction: "clientToServer" },
  { name: "session/rename", kind: "request", direction: "clientToServer" },
  { name: "session/delete", kind: "request", direction: "clientToServer" },
  { name: "session/release", kind: "request", direction: "clientToServer" },
  { name: "session/pin", kind: "request", direction: "clientToServer" },
  { name: "session/unpin", kind: "request", direction: "clientToServer" },
  { name: "session/drop", kind: "request", direction: "clientToServer" },
  { name: "session/recover", kind: "request", direction: "clientToServer" },
  { name: "session/compact", kind: "request", direction: "clientToServer" },
  { name: "context/sources", kind: "request", direction: "clientToServer" },
  { name: "context/assemble", kind: "request", direction: "clientToServer" },
  { name: "context/registerSource", kind: "request", direction: "clientToServer" },
  { name: "context/unregisterSource", kind: "request", direction: "clientToServer" },
  { name: "skills/list", kind: "request", direction: "clientToServer" },
  { name: "skills/activate", kind: "request", direction: "clientToServer" },
  { name: "input/freeze", kind: "request", direction: "clientToServer" },
  { name: "input/get", kind: "request", direction: "clientToServer" },
  { name: "snapshot/assemble", kind: "request", direction: "clientToServer" },
  { name: "snapshot/get", kind: "request", direction: "clientToServer" },
  { name: "snapshot/lower", kind: "request", direction: "clientToServer" },
  { name: "snapshot/diff", kind: "request", direction: "clientToServer" },
  { name: "blob/read", kind: "request", direction: "clientToServer" },
  { name: "profile/create", kind: "request", direction: "clientToServer" },
  { name: "profile/get", kind: "request", direction: "clientToServer" },
  { name: "profile/list", kind: "request", direction: "clientToServer" },
  { name: "profile/update", kind: "request", direction: "clientToServer" },
  { name: "profile/delete", kind: "request", direction: "clientToServer" },
  { name: "preset/create", kind: "request", direction: "clientToServer" },
  { name: "preset/get", kind: "request", direction: "clientToServer" },
  { name: "preset/list", kind: "request", direction: "clientToServer" },
  { name: "preset/update", kind: "request", direction: "clientToServer" },
  { name: "preset/delete", kind: "request", direction: "clientToServer" },
  { name: "store/gc", kind: "request", direction: "clientToServer" },
  { name: "store/stats", kind: "request", direction: "clientToServer" },
  { name: "checkpoint/list", kind: "request", direction: "clientToServer" },
  { name: "checkpoint/diff", kind: "request", direction: "clientToServer" },
  { name: "checkpoint/restore", kind: "request", direction: "clientToServer" },
  { name: "run/start", kind: "request", direction: "clientToServer" },
  { name: "run/get", kind: "request", direction: "clientToServer" },
  { name: "run/list", kind: "request", direction: "clientToServer" },
  { name: "run/subscribe", kind: "request", direction: "clientToServer" },
  { name: "run/unsubscribe", kind: "request", direction: "clientToServer" },
  { name: "run/cancel", kind: "request", direction: "clientToServer" },
  { name: "run/resume", kind: "request", direction: "clientToServer" },
  { name: "run/event", kind: "notification", direction: "serverToClient" },
  { name: "run/lagged", kind: "notification", direction: "serverToClient" },
  { name: "tool/execute", kind: "request", direction: "serverToClient" },
  { name: "assembly/request", kind: "request", direction: "serverToClient" },
  { name: "approval/request", kind: "request", direction: "serverToClient" },
  { name: "tokens/count", kind: "request", direction: "clientToServer" },
  { name: "server/info", kind: "request", direction: "clientToServer" },
  { name: "server/ping", kind: "request", direction: "clientToServer" },
  { name: "server/sleep", kind: "request", direction: "clientToServer" },
] as const;

export type MethodName = (typeof METHODS)[number]["name"];
