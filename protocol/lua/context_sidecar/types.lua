---@meta
-- context-sidecar protocol: LuaCATS type annotations (lua-language-server).
-- Generated from the protocol schema. Do not edit: regenerate with
-- `python -m protocol.export`.

---@class context_sidecar.ApprovalRequestParams
---@field runId string
---@field callId string
---@field name string
---@field arguments table<string, any>
---@field builtin? boolean # A built-in tool: the sidecar runs it once approved.
---@field effect? "read"|"edit"|"execute"|"mcp" # What a built-in call does, as the approval mode counts it.
---@field mode? "ask"|"accept_edits"|"auto"|"plan"|"read_only"|"allow_all" # The approval mode that asked.
---@field change? context_sidecar.protocol__tools__FileChange # A built-in write or edit: what it would do (the diff to show).
---@field command? string # A built-in ``run_command``: the command and ``cwd`` it would run in.
---@field cwd? string
---@field escalation? "requested"|"blocked" # ``auto`` mode: why a command is asked about — the model asked to run it outside the sandbox (``requested``), or it failed in the sandbox in a way that shows the sandbox blocked it (``blocked``).  Approved, it runs outside the sandbox.
---@field justification? string # With ``escalation``: the model's reason (``requested``) or what the sandbox blocked.

---@class context_sidecar.ApprovalRequestResult
---@field approved boolean
---@field reason? string

--- Server -> client request, sent only to hosts that declared
--- ``capabilities.experimental.contextSidecar.assembly = true``: build a sub-agent's prompt
--- with the host's own assembler.
---@class context_sidecar.AssemblyRequestParams
---@field runId string
---@field callId string
---@field scope "delegate"|"handoff"
---@field inputId string
---@field fingerprint string # sha256 of the preset components, the input id and the task.
---@field turn table<string, any>[] # The sub-agent's turn so far (``{role, content}``), its task first.

---@class context_sidecar.AssemblyRequestResult
---@field messages table<string, any>[] # ``{role: user | assistant, content: [parts]}``, the last one the sub-agent answers.
---@field system? string

---@class context_sidecar.BlobReadParams
---@field blob string
---@field offset? integer
---@field length? integer
---@field encoding? "utf-8"|"base64" # ``utf-8`` when the range is text (a range cut inside a character is widened to whole characters); ``base64`` for anything.

---@class context_sidecar.BlobReadResult
---@field blob string
---@field size integer
---@field offset integer
---@field length integer
---@field data string
---@field encoding "utf-8"|"base64"
---@field eof boolean

--- Payload of ``tool.callRequested`` (every tool call; the ``builtin`` fields only for a
--- built-in one).
---@class context_sidecar.BuiltinCallRequested
---@field callId string
---@field name string
---@field arguments table<string, any>
---@field builtin? boolean # Run by the sidecar (no ``tool/execute`` follows).
---@field effect? "read"|"edit"|"execute"
---@field title? string # What a front end shows for it: "Read calc/add.py", "Run `pytest -q`".

--- Which built-in tools a run offers, who approves them, and how large a result may be.
---@class context_sidecar.BuiltinTools
---@field tools? ("list_dir"|"glob"|"grep"|"read_file"|"write_file"|"edit_file"|"run_command"|"recall"|"update_plan")[] # The tools to offer (always in the catalog's order); absent: all of them.  A profile's list narrows a run's: a run gets only the tools both name.  ``[]`` turns them off (a run whose host runs tools of these names itself, as the ACP face does).
---@field mode? "ask"|"accept_edits"|"auto"|"plan"|"read_only"|"allow_all" # Absent: the session's mode (the one an ACP client set), else ``ask``.
---@field maxResultTokens? integer # Bound of one tool result, in tokens (default 10,000: about 30,000 characters).
---@field env? string[] # Environment variables ``run_command`` passes on besides its allowlist (``PATH``, ``HOME``, the locale, the toolchains' variables): exact names, taken even when a name reads like a secret; a value that looks like one is still left out.  A run's names and its profile's are both passed.

--- Predicted prompt-cache use of this request against the session's previous one, under the
--- provider's rules (``sidecar/context/data/cache_rules.json``: breakpoints and their 20-block
--- look-back, at most 4 markers, minimum cacheable tokens per model; OpenAI's automatic prefix
--- caching in 128-token steps; Gemini's implicit caching).  Assumes the previous request was
--- sent within the cache lifetime.  ``readTokens + writeTokens + uncachedTokens =
--- inputTokens``.
---@class context_sidecar.CacheAccounting
---@field provider "anthropic"|"openai"|"gemini"|"other"
---@field model string
---@field againstPrevious boolean # Whether the session's previous request was known (``false``: nothing can be read).
---@field inputTokens integer # All input tokens of the request (tools, system, messages).
---@field readTokens integer # Tokens predicted to be read from the cache.
---@field writeTokens integer # Tokens predicted to be written to the cache (Anthropic markers; 0 for providers that do not bill writes).
---@field oneHourWriteTokens? integer # Of ``writeTokens``, those written by 1-hour markers (billed at the 1-hour rate, 2x input; the rest at the 5-minute rate, 1.25x): Anthropic reports them as ``usage.cache_creation.ephemeral_1h_input_tokens``.
---@field uncachedTokens integer # Tokens neither read nor written: billed at the plain input price.
---@field firstChange? string # What first differs from the previous request (``tool <name>``, ``system section <id>``, ``message <index>``, ``the model``): where its cache stops serving this one; ``null`` when everything the previous request sent is repeated.
---@field rulesVersion string # Version of the cache rules the prediction used.
---@field cost? context_sidecar.CacheCost # ``null`` when the price table does not list the model.

--- A place where the prefix before it is expected to be cached.
---@class context_sidecar.CacheBreakpoint
---@field location "tools"|"system"|"message"
---@field messageIndex? integer # For ``message``: index in ``messages`` whose last block carries the marker.
---@field ttl? "5m"|"1h"|"in_memory"|"24h" # How long the provider is asked to keep the prefix: an Anthropic marker's TTL (``5m``, ``1h``: the lowering writes ``cache_control`` with it); for OpenAI the ``prompt_cache_retention`` the body carries (``in_memory``, ``24h``) when one was asked and the model accepts it; ``null``: the provider's own lifetime (OpenAI without a retention, Gemini's implicit cache: no marker is written).
---@field prefixTokens integer # Tokens from the start of the request up to and including this point.
---@field reason string

--- Predicted cost of a request's input from the shipped price table
--- (``sidecar/context/data/prices.json``; the output is not known before the call).
---@class context_sidecar.CacheCost
---@field input number # Uncached input tokens at the model's input price.
---@field cacheWrite number # Tokens written to the cache at the 5-minute or 1-hour write price.
---@field cacheRead number # Tokens read from the cache at the read price.
---@field total number
---@field currency "USD"
---@field pricesAsOf string # Date of the price table the figures come from.

--- How long the provider is asked to keep what a request caches (``docs/guide/cache.md``).
---
--- Anthropic: the TTL of each cache marker, by the part of the prompt it ends.  The stable
--- prefix (the end of the tool catalog, of the system prompt) is written once and read by
--- every turn; the masked history changes only when the masked boundary moves; the tail (the
--- transcript before the new turn, the new turn, an extra marker at the previous request's
--- last entry) is written every turn.  A 1-hour marker is written at twice the input price
--- (5 minutes: 1.25x), read at the same 0.1x.  The API requires a longer TTL before a shorter
--- one in the prompt: a setting whose TTLs grow toward the tail (``prefixTtl: "5m"``,
--- ``tailTtl: "1h"``) is refused; a marker placed out of that order (the extra marker at the
--- previous request's entry, before a 1-hour history marker) is sent, and priced, at the
--- shorter TTL before it.
---
--- OpenAI: ``retention`` is sent as ``prompt_cache_retention`` when the model accepts that
--- value (the model catalog's ``cache.ttl``); otherwise it is left out and the assembly says
--- so in its diagnostics.  Prices do not change with it.  Gemini's implicit cache has no
--- lifetime to ask for: nothing is sent, and asking is noted in the diagnostics.
---@class context_sidecar.CacheSettings
---@field ttl? "5m"|"1h" # Every Anthropic marker's TTL unless one below says otherwise (default ``5m``).
---@field prefixTtl? "5m"|"1h" # Markers at the end of the tool catalog and of the system prompt (default: the profile's ``cacheTtl``, else ``ttl``).
---@field historyTtl? "5m"|"1h" # The marker at the end of the masked history (default ``ttl``).
---@field tailTtl? "5m"|"1h" # Markers on the moving tail: the transcript before the new turn, the new turn, the previous request's last entry (default ``ttl``).
---@field retention? "in_memory"|"24h" # OpenAI's ``prompt_cache_retention`` (default: not sent, the provider's default).
---@field fromPauses? boolean # Choose the stable prefix's and the masked history's TTL from the session's own pauses (Anthropic): ``1h`` when, over its recent model calls, a 5-minute entry would have expired often enough to pay for the dearer 1-hour writes, else ``prefixTtl`` / ``historyTtl`` as set; the tail keeps ``tailTtl`` (``docs/guide/context-policy.md``).  On by default: a host that wants fixed TTLs sets it ``false``.
---@field compactWhenCold? number # Advise compaction when the cache is cold anyway (the time since the session's last model call is past the stable prefix's TTL, so the next request writes it again) and the transcript is past this share of the available input (default 0.3; ``null``: only at the usual threshold).

---@class context_sidecar.Checkpoint
---@field checkpointId string # ``ckpt_`` + 26 characters, time-ordered.
---@field sessionId string
---@field seq integer # The history seq it stands before: the session's head was ``seq - 1`` when it was taken.
---@field turnSeq? integer # Seq of the user message of the turn it belongs to (``null``: taken outside a turn).
---@field createdAt string
---@field reason "turn"|"edit"|"command"|"restore"
---@field runId? string
---@field callId? string
---@field tool? string # The tool whose call it stands before (``edit`` and ``command`` checkpoints).
---@field files integer # Files captured.
---@field notCaptured integer # Files over ``checkpoints.maxFileBytes``: recorded by path and size, their content not kept (a restore leaves them alone).
---@field changedFiles integer # Files that differ between the checkpoint and the workspace now.

---@class context_sidecar.CheckpointDiffParams
---@field sessionId string
---@field checkpointId string
---@field maxBytes? integer # Bound on the unified diffs together; past it ``diff`` is ``null`` and ``truncated``.

---@class context_sidecar.CheckpointDiffResult
---@field checkpointId string
---@field files context_sidecar.protocol__checkpoints__FileChange[] # Restoring the checkpoint applies the reverse of these changes.
---@field truncated boolean # Some diffs were left out (``maxBytes``).

---@class context_sidecar.CheckpointListParams
---@field sessionId string
---@field limit? integer

---@class context_sidecar.CheckpointListResult
---@field checkpoints context_sidecar.Checkpoint[] # Newest first.
---@field total integer # How many the session holds (retention keeps the last ``checkpoints.keep``).

---@class context_sidecar.CheckpointRestoreParams
---@field sessionId string
---@field checkpointId string
---@field files boolean # Put the workspace's files back as the checkpoint holds them.
---@field conversation boolean # Fork the session before the checkpoint's turn (nothing is deleted).
---@field force? boolean # Overwrite files changed outside the agent since (conflicts).

---@class context_sidecar.CheckpointRestoreResult
---@field status "restored"|"conflicts" # ``conflicts``: nothing was written, no checkpoint taken, no fork made.
---@field restored? context_sidecar.RestoredFile[]
---@field conflicts? context_sidecar.RestoreConflict[]
---@field notRestored? context_sidecar.UnrestoredFile[]
---@field undoCheckpointId? string # The ``restore`` checkpoint taken first: restoring it undoes this restore.
---@field forkedSessionId? string # The new session when ``conversation`` was asked for.

---@class context_sidecar.CheckpointStats
---@field count integer # Checkpoints every session holds together.
---@field objects integer # Distinct trees and blobs they refer to.
---@field bytes integer # Bytes those objects take in the store (compressed, on disk).
---@field watchers? table<string, string> # Per workspace root this process has captured, its file watcher: ``on``, ``off: <why>`` (the watch limit was reached: every capture walks every file) or ``none`` (not Linux, or a remote file system).

--- When the input was frozen, to the minute: what ``{{date}}`` and ``{{time}}`` show.
---@class context_sidecar.Clock
---@field date string
---@field time string

---@class context_sidecar.CompactionAdvice
---@field advised boolean
---@field transcriptTokens integer # Tokens of the whole candidate transcript (after the latest compaction).
---@field thresholdTokens integer # 92% of the available input.
---@field keepFromSeq? integer # A suggested ``keepFromSeq``: the start of the newest ~20k tokens, on a user turn.
---@field reason? "threshold"|"coldCache" # Why it is advised (``None`` when it is not): the transcript is past the threshold, or the cache is cold anyway and the transcript past ``cache.compactWhenCold``'s share — a compaction that costs no re-write, taken once, never a failure when it cannot do more.

---@class context_sidecar.CompactionEntry
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "compaction"
---@field summary string
---@field throughSeq integer
---@field keepFromSeq? integer
---@field seq integer
---@field id string # Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its entries with their ids, so an id names the same content in every branch.
---@field time string
---@field hash string # xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came, ``meta`` left out); keys the token-count cache.
---@field tokens? table<string, integer> # Cached token counts per tokenizer id, present when asked for (``withTokens``).

--- Everything up to ``throughSeq`` is represented by ``summary``, except the kept tail
--- ``keepFromSeq..throughSeq``.  Nothing is deleted.
---@class context_sidecar.CompactionInput
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "compaction"
---@field summary string
---@field throughSeq integer
---@field keepFromSeq? integer

---@alias context_sidecar.ContentPart context_sidecar.TextPart|context_sidecar.ImagePart|context_sidecar.ToolCallPart|context_sidecar.ToolResultPart|context_sidecar.ReasoningPart

--- The values of context_sidecar.ContentPart's `type` tag.
---@alias context_sidecar.ContentPartKind "text"|"image"|"toolCall"|"toolResult"|"reasoning"

---@class context_sidecar.ContextAssembleParams
---@field sessionId string
---@field userTurn context_sidecar.ContentPart[] # The turn being asked now (not yet in history).
---@field turn? context_sidecar.TurnMessage[] # The turn in progress after its user message, when a host that runs its own loop assembles a later round of it (not yet in history): the model's tool calls and their results, in order.  Like the user turn, never evicted nor masked; the request ends on its last message (the results the model answers next).  Every result answers a call before it in the turn, and every call is answered before the next assistant message and by the end.
---@field previousUsage? context_sidecar.ReportedUsage # The provider's count of the session's previous request assembled here (a host that runs its own loop reports it with its next assembly): the budget is calibrated per model family from it, so what is assembled fits the window as the provider counts it.
---@field profile? context_sidecar.PromptProfile
---@field tools? context_sidecar.ToolDefinition[]
---@field sources? context_sidecar.HostSource[]
---@field cwd? string
---@field mentionedPaths? string[]
---@field lowerTo? "anthropic-messages"|"openai-chat"|"openai-responses"|"gemini"|"system-as-user" # Also return the provider request body.
---@field reuseInstructions? table<string, string> # Instruction path -> hash the provider has already cached: an unchanged file is sent as a one-line "unchanged, text omitted" note (HistoryReuse).
---@field date? string # The day shown in the environment block; default: today (UTC).
---@field at? string # When this request is sent (ISO 8601 with an offset; default: now): how long the session's cache has been idle, for ``profile.cache.compactWhenCold``.  A host replaying or importing a session passes the recorded time.

---@class context_sidecar.ContextAssembleResult
---@field system context_sidecar.Section[]
---@field messages context_sidecar.PromptMessage[]
---@field tools context_sidecar.ToolDefinition[]
---@field ledger context_sidecar.LedgerItem[]
---@field dashboard context_sidecar.Dashboard
---@field cacheBreakpoints context_sidecar.CacheBreakpoint[]
---@field tokenizer string
---@field modelLimits context_sidecar.ModelLimits
---@field compaction context_sidecar.CompactionAdvice
---@field instructionsDiff context_sidecar.InstructionsDiff
---@field diagnostics context_sidecar.Diagnostic[]
---@field throughSeq integer # The session head this prompt was assembled from.
---@field cache? context_sidecar.CacheAccounting # Predicted cache read / write / uncached tokens and cost against the session's previous request.  Always in ``context/assemble`` answers; not kept in a stored snapshot (it says how this request relates to another, not what the model sees).
---@field body? table<string, any> # The provider request body, when ``lowerTo`` was given.

--- One captured item: a locator, a short preview, and the full content as a blob.
---@class context_sidecar.ContextItem
---@field kind "file"|"url"|"snippet"|"command"|"image"|"other"
---@field path string # Locator: workspace-relative path, URL, label, shell command or file name.
---@field preview? string # At most 500 characters, never splitting one.
---@field blob? string # Git object id of the full content (for a file tracked by git: its git blob id).

--- An attachment as the host sends it.  Files are read from the workspace (confined to
--- its roots) unless ``content`` is given; URLs are never fetched: the host supplies the
--- content.
---@class context_sidecar.ContextItemInput
---@field kind "file"|"url"|"snippet"|"command"|"image"|"other"
---@field path string
---@field content? string # Text content (url, snippet, command output, other; optional for files).
---@field dataBase64? string # Binary content (images).
---@field mediaType? string

---@class context_sidecar.ContextSourcesParams
---@field sessionId string
---@field cwd? string # Absolute directory inside a workspace root; default: the session's primary root.
---@field mentionedPaths? string[] # Workspace-relative paths the turn mentions; nested instruction files apply to them.

---@class context_sidecar.ContextSourcesResult
---@field projectRoot string
---@field instructions context_sidecar.InstructionFile[]
---@field skills context_sidecar.SkillInfo[]
---@field diagnostics context_sidecar.Diagnostic[]

--- What the provider counts per token the sidecar counts, for one model family: the input
--- budget is the window's room divided by ``factor``, so what is assembled fits the window
--- as the provider counts it (``docs/guide/context-policy.md``).
---@class context_sidecar.CountCalibration
---@field family? string # The model catalog's family, else the model id (the key the ratios are kept under).
---@field factor number
---@field samples? integer # Provider usages it was calibrated from (0: the margin for the family until then).

---@class context_sidecar.Dashboard
---@field window integer
---@field reservedOutput integer
---@field availableInput integer
---@field used integer
---@field free integer
---@field categories table<string, integer> # Tokens per category: system, tools, instructions, skills, pinned, host, summary, transcript, userTurn.  They add up to ``used``.
---@field summary string # One line, e.g. ``context 12 visible · 1 pinned · 40 archived · 18.2k/150.0k tokens``.
---@field historyWindow? context_sidecar.WindowState
---@field masking? context_sidecar.MaskingState # ``null`` when masking is off.
---@field calibration? context_sidecar.CountCalibration # How the budget's counts were scaled to the provider's.

---@class context_sidecar.DeleteResult
---@field id string
---@field deleted boolean

--- A problem found while reading a source; the source is skipped, never fatal.
---@class context_sidecar.Diagnostic
---@field severity "warning"|"error"
---@field code string # Dotted, e.g. ``instructions.oversized``, ``skills.invalid_frontmatter``.
---@field path string
---@field message string

--- Params naming one stored profile or preset.
---@class context_sidecar.DocumentRef
---@field id string

---@class context_sidecar.DropEntry
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "drop"
---@field target context_sidecar.ItemRef
---@field reason? string
---@field seq integer
---@field id string # Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its entries with their ids, so an id names the same content in every branch.
---@field time string
---@field hash string # xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came, ``meta`` left out); keys the token-count cache.
---@field tokens? table<string, integer> # Cached token counts per tokenizer id, present when asked for (``withTokens``).

--- Keep an item out of the prompt (it stays in history and can be recovered).
---@class context_sidecar.DropInput
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "drop"
---@field target context_sidecar.ItemRef
---@field reason? string

--- Params of methods that take none (``{}`` or omitted).
---@class context_sidecar.EmptyParams

---@alias context_sidecar.Entry context_sidecar.MessageEntry|context_sidecar.CompactionEntry|context_sidecar.PinEntry|context_sidecar.UnpinEntry|context_sidecar.DropEntry|context_sidecar.RecoverEntry|context_sidecar.SkillActivatedEntry|context_sidecar.VariablesEntry|context_sidecar.NoteEntry

--- The values of context_sidecar.Entry's `kind` tag.
---@alias context_sidecar.EntryKind "message"|"compaction"|"pin"|"unpin"|"drop"|"recover"|"skillActivated"|"variables"|"note"

---@alias context_sidecar.EntryInput context_sidecar.MessageInput|context_sidecar.CompactionInput|context_sidecar.PinInput|context_sidecar.UnpinInput|context_sidecar.DropInput|context_sidecar.RecoverInput|context_sidecar.SkillActivatedInput|context_sidecar.VariablesInput|context_sidecar.NoteInput

--- The values of context_sidecar.EntryInput's `kind` tag.
---@alias context_sidecar.EntryInputKind "message"|"compaction"|"pin"|"unpin"|"drop"|"recover"|"skillActivated"|"variables"|"note"

--- The fields the store assigns to an appended entry.
---@class context_sidecar.EntryRef
---@field seq integer
---@field id string # Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its entries with their ids, so an id names the same content in every branch.
---@field time string
---@field hash string # xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came, ``meta`` left out); keys the token-count cache.

--- The ``data`` member of every error response the sidecar sends.
---@class context_sidecar.ErrorData
---@field code string # Dotted machine-readable code, e.g. ``session.not_found``.
---@field retryable? boolean # True when the same request may succeed if sent again later, unchanged.
---@field retryAfterMs? integer # A hint for retryable errors such as ``server.overloaded`` or ``store.locked``.
---@field errors? context_sidecar.ParamError[] # For ``params.invalid``: every problem found, not just the first.
---@field details? table<string, any> # Code-specific facts (the session id that was not found, the expected head seq, ...).

---@class context_sidecar.ForkOrigin
---@field sessionId string
---@field atSeq integer

---@class context_sidecar.FrozenInput
---@field sessionId string
---@field throughSeq integer # History up to this seq belongs to the turn; later appends do not.
---@field clock context_sidecar.Clock
---@field userTurn context_sidecar.ContentPart[]
---@field attachments? context_sidecar.ContextItem[]
---@field components? context_sidecar.PromptComponent[]
---@field activatedEntries? context_sidecar.HostSource[]
---@field macroContext? context_sidecar.MacroContextInput
---@field variables? context_sidecar.Variables
---@field modelConnection? context_sidecar.ModelConnection
---@field tools? context_sidecar.ToolDefinition[]
---@field skills? context_sidecar.SkillInfo[]
---@field activatedSkills? context_sidecar.SkillSnapshot[]
---@field instructions? context_sidecar.InstructionSnapshot[]
---@field pinnedFiles? context_sidecar.ContextItem[]
---@field fragmentOverrides? table<string, string> # Prompt fragments replaced by workspace files (``.context-sidecar/fragments/<id>.md``).
---@field cwd? string
---@field mentionedPaths? string[]

--- Where the transcript starts once it no longer fits.
---
--- The window start moves forward by a quantum, not one group at a time, and then holds
--- still until the transcript overflows again: the cached prompt prefix is re-written once
--- per quantum instead of on every turn.  It never moves back before where the session's
--- window last started (kept in the store, per model), and always falls on a user turn.
---@class context_sidecar.HistoryWindow
---@field maxMessages? integer # Most transcript messages kept, counted over whole groups (default: no cap).
---@field maxTokens? integer # Most transcript tokens kept (default: the working budget, ``workingTokens``).
---@field workingTokens? integer # The working budget: most transcript tokens kept whatever the model's window, unless ``maxTokens`` says less (``null``: whatever the budget allows).  Every request reads its whole transcript from the cache, so a transcript held near a 200k (or 1M) window pays for all of it on every request; what the model works with is its newest turns, and the user's own messages (``keepUserMessages``).  ``docs/guide/context-policy.md`` gives what it costs and shows at 40k, 64k and 100k.
---@field quantum? number # How far the window start moves when the transcript overflows, as a share of what overflowed: of the room the transcript has in the budget, of ``maxTokens``, or of ``maxMessages``.  Default: a quarter of the budget's room (large: a quarter is many turns), half of an explicit ``maxTokens`` / ``maxMessages`` (small: a quarter of 50 messages would move the window, and re-write the cached prompt, every third turn).
---@field keepUserMessages? boolean # Show the user's own messages that the window start or a compaction left out, verbatim, at the start of the transcript (what the user asked survives what the window hides; the text changes only when the start moves).  They take at most ``userMessagesShare`` of the input budget, kept for them; the oldest beyond it are left out.  Inside a host's explicit cap they are part of it, never on top: ``maxTokens`` keeps that share of its tokens for them, ``maxMessages`` one of its messages, holding at most that share of its count of them; the window has the rest.  Default: on.
---@field userMessagesShare? number # The share of the input budget kept for those messages (out of what the working budget leaves free when there is one: a window smaller than it keeps none); with an explicit ``maxTokens`` / ``maxMessages``, the share of that cap.

--- A section supplied by the host (RAG results, editor state, ...).
---@class context_sidecar.HostSource
---@field id string
---@field title? string
---@field text string
---@field priority? integer # Higher is selected first among host sources.

---@class context_sidecar.HostSourceRef
---@field sessionId string
---@field id string

--- An image held in the blob store (see ``blob/read``).
---@class context_sidecar.ImagePart
---@field type "image"
---@field blob string # Git object id of the image bytes in the blob store.
---@field mediaType string # MIME type, e.g. ``image/png``.
---@field alt? string

---@class context_sidecar.InputFreezeParams
---@field sessionId string
---@field userTurn context_sidecar.ContentPart[]
---@field attachments? context_sidecar.ContextItemInput[]
---@field components? context_sidecar.PromptComponent[]
---@field activatedEntries? context_sidecar.HostSource[]
---@field macroContext? context_sidecar.MacroContextInput
---@field variables? context_sidecar.Variables
---@field modelConnection? context_sidecar.ModelConnection
---@field tools? context_sidecar.ToolDefinition[]
---@field cwd? string
---@field mentionedPaths? string[]
---@field clock? context_sidecar.Clock # Default: now (UTC), to the minute.

---@class context_sidecar.InputFreezeResult
---@field inputId string # Git blob id of the input's stored JSON (compact, keys in their order; ``git cat-file -p`` shows it).
---@field input context_sidecar.FrozenInput
---@field diagnostics context_sidecar.Diagnostic[]

---@class context_sidecar.InputGetParams
---@field inputId string

--- One project-instruction file (AGENTS.md and friends) found for a workspace.
---@class context_sidecar.InstructionFile
---@field path string # Workspace-relative path, ``/``-separated.
---@field scope string # Directory (workspace-relative, ``.`` for the root) the file applies to.
---@field hash string # xxh3-128 of the full file, even when the text is cut at the size cap.
---@field bytes integer
---@field truncated boolean
---@field applies boolean # The root file always applies; a nested one when a mentioned or pinned path is in scope.
---@field reason string

---@class context_sidecar.InstructionSnapshot
---@field path string
---@field scope string
---@field hash string
---@field blob string # Blob id of the text as cut for the prompt.
---@field truncated boolean
---@field depth integer

--- How the instruction files changed since this session's previous assembly.
---@class context_sidecar.InstructionsDiff
---@field added? string[]
---@field removed? string[]
---@field changed? string[]
---@field unreadable? string[]
---@field oversized? string[]

--- What a pin / unpin / drop / recover acts on.
---
--- ``file``, ``instruction`` and ``skill`` are named by ``locator`` (a workspace-relative path
--- or a skill name); ``range`` covers transcript entries ``fromSeq..throughSeq``; ``item`` names
--- a ledger item by its stable id (``ctx_<kind>_<16hex>``).
---@class context_sidecar.ItemRef
---@field kind "file"|"instruction"|"skill"|"range"|"item"
---@field locator? string
---@field fromSeq? integer
---@field throughSeq? integer
---@field itemId? string

--- ``keepEverything`` on a session's own ``model.completed``: what the call would have
--- cost under keep-everything-then-compact (Claude Code's way: the whole transcript until the
--- window less the output reserve is reached, then a priced summary call and a 2,000-token
--- summary plus the newest ~20,000 tokens; its marker layout), beside the call as sent, both
--- priced by the reference cache simulator with entries expiring their TTL from the real
--- times of the calls, output included.  A model, not a bill (``docs/guide/cache.md``).
--- Absent for a sub-agent's call, for a model the price table does not list, and for bodies
--- other than Anthropic Messages and OpenAI Chat Completions.
---@class context_sidecar.KeepEverythingCall
---@field cost number # USD this call would have cost under keep-everything (with the summary call a compaction made before it).
---@field tokens integer # The prompt keep-everything would have sent (cl100k on each block's JSON).
---@field compacted? boolean # Keep-everything compacted before this call.
---@field ownCost number # USD this call cost as sent, priced the same way (not ``predictedCache``, which knows no time).
---@field ownTokens integer # The prompt sent, counted the same way.
---@field at number # When the call was priced, seconds since the epoch (the simulator's clock).
---@field session context_sidecar.KeepEverythingTotals # The session's calls so far, this one included.

--- A session's model calls so far (as far as this process saw them), summed: what they
--- cost as sent and under keep-everything-then-compact, priced alike.
---@class context_sidecar.KeepEverythingTotals
---@field calls integer
---@field cost number # USD under keep-everything-then-compact, summary calls included.
---@field ownCost number # USD as sent, priced by the same simulator with the same times.
---@field compactions? integer # Summary calls keep-everything would have made.

---@class context_sidecar.LedgerChange
---@field itemId string
---@field kind string
---@field locator? string
---@field before? string # Visibility in the older snapshot (``null``: not a candidate then).
---@field after? string

---@class context_sidecar.LedgerItem
---@field itemId string # Stable: ``ctx_<kind>_<16 hex>``, the same for the same item across turns.
---@field kind "harness"|"instruction"|"skill"|"pin"|"host"|"summary"|"transcript"|"userTurn"|"tool"
---@field visibility "visible"|"pinned"|"candidate"|"archived"|"dropped"|"blocked"|"summaryOnly"|"masked"
---@field reason string
---@field tokens integer
---@field locator? string
---@field fromSeq? integer
---@field throughSeq? integer

---@class context_sidecar.Limits
---@field maxMessageBytes integer # Largest JSON-RPC body accepted; larger ones are answered with ``request.too_large``.
---@field maxJsonDepth? integer # Deepest nesting of arrays and objects accepted in a message (``request.too_deep``).
---@field maxAppendEntries integer
---@field maxReadLimit integer
---@field maxListLimit integer
---@field maxCountBytes integer

---@class context_sidecar.MacroContextInput
---@field user? string
---@field char? string
---@field templates? table<string, string> # Named raw templates (character description, scenario, ...), stored unevaluated.
---@field facts? table<string, string> # Chat facts (e.g. ``lastMessage``); read-only text.

--- Observation masking: old tool results shown as short placeholders.
---
--- A tool result older than the newest ``protectTokens`` of tool output is shown as a
--- placeholder (tool name and arguments, its size, a preview, the ledger id that brings it
--- back with ``session/recover``) inside its call/result group.  The masked boundary moves
--- in batches of ``batchTokens`` of tool output, so the prompt prefix stays byte-identical
--- between moves.  A pinned or recovered result is never masked.
---@class context_sidecar.MaskingPolicy
---@field mode? "auto"|"off"
---@field protectTokens? integer # Newest tool output kept whole (default: a twelfth of the room tool output has — the available input, or ``historyWindow.maxTokens`` when smaller —, at most 40,000 tokens).
---@field batchTokens? integer # Tool output masked per move of the boundary (default: five twelfths of that room, at most 160,000 tokens).
---@field previewChars? integer # Characters of the original result shown in its placeholder.
---@field keepTurns? integer # The results of the newest ``keepTurns`` user turns in history are never masked, whatever ``protectTokens`` says (the turn in progress, ``turn``, never is).
---@field batchRounds? integer # Tool rounds a batch holds at least, by the session's own output per round: while the default batch (five twelfths of the working budget) holds fewer, the working budget doubles (within the input budget) and the batch is five eighths of it, ``protectTokens`` staying at a twelfth of the budget as set — a session whose commands return logs of 10k tokens moves its boundary, a cache re-write, every few rounds otherwise.  The output per round is measured every 8th round, so the budget changes rarely.  Only with the working budget (no ``maxTokens`` / ``maxMessages``) and no ``batchTokens``; ``null``: the budget as set.
---@field countTurn? boolean # The tool output of the turn in progress (``turn``, a run's rounds) counts on the tool-output axis, as if already in history: the boundary moves on the request that brings new output, which writes to the cache anyway, not on the next one, which would write that output a second time.  It is never masked itself.
---@field toProtect? boolean # A move masks everything older than the newest ``protectTokens`` at the point the output crossed the batch line, not only what ends before that line: the result that straddles the line (a command's log of 10k tokens is most of a batch) is masked with the move instead of being re-written by it and masked by the next.

--- Observation masking now (``sidecar/context/masking.py``).
---@class context_sidecar.MaskingState
---@field maskedResults integer # History entries whose tool results are shown as placeholders.
---@field maskedTokens integer # What those entries would take shown whole.
---@field protectTokens integer
---@field batchTokens integer
---@field toolTokens integer # Tool output in the whole history, with the turn in progress' (``masking.countTurn``).
---@field nextMoveIn integer # Tokens of new tool output before the masked boundary moves next (a cache re-write).

---@class context_sidecar.MessageEntry
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "message"
---@field role "user"|"assistant"|"system"
---@field content context_sidecar.ContentPart[]
---@field name? string # Optional author name (multi-agent hosts).
---@field seq integer
---@field id string # Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its entries with their ids, so an id names the same content in every branch.
---@field time string
---@field hash string # xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came, ``meta`` left out); keys the token-count cache.
---@field tokens? table<string, integer> # Cached token counts per tokenizer id, present when asked for (``withTokens``).

--- A user, assistant or system message.
---@class context_sidecar.MessageInput
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "message"
---@field role "user"|"assistant"|"system"
---@field content context_sidecar.ContentPart[]
---@field name? string # Optional author name (multi-agent hosts).

--- Which model to call, by reference.  ``connectionRef`` names where the credential
--- lives (``env:NAME`` or ``secret:NAME``); the credential itself is never accepted here.
---@class context_sidecar.ModelConnection
---@field connectionRef? string
---@field provider? "anthropic"|"openai"|"openai-responses"|"gemini"|"scripted"|"other" # ``openai`` is Chat Completions (and compatible servers), but a model OpenAI serves only through the Responses API (``*-codex``, ``*-pro``, deep research) goes there; ``openai-responses`` is the Responses API for every model.
---@field modelId? string
---@field baseUrl? string # For OpenAI-compatible servers (Ollama, llama.cpp, vLLM) or a proxy.
---@field parameters? table<string, any> # Generation parameters (temperature, top_p, ...); credential-like keys are refused.

--- The window and output reservation an assembly used, and where they came from.
---@class context_sidecar.ModelLimits
---@field model string
---@field window integer
---@field maxOutput integer # Output tokens reserved (the budget keeps them free), not the model's hard maximum.
---@field source "profile"|"live"|"table"|"family"|"fallback" # ``profile``: the profile's window/maxOutput; ``live``: the window (and output limit) the provider's models endpoint reported to this process (``note`` names the request; the output reservation is still the catalog's, capped by that limit); ``table``: the model's catalog row (``sidecar/context/data/models.json``); ``family``: a model the catalog does not list, given the figures of its vendor's family; ``fallback``: nothing matched (32,768 / 4,096).
---@field family? string # The catalog family whose figures were used (absent for the fallback).
---@field outputLimit? integer # The model's maximum output: the models endpoint's when it reported one, else the family's documented figure, when the catalog knows it.
---@field minCacheTokens? integer # The family's smallest cacheable prompt prefix, when the catalog knows it.
---@field note? string # The catalog row's caveat (a figure taken from the nearest documented family); with ``live``, which request reported the figures.
---@field warning? string # Set when the window is not the profile's, the models endpoint's, nor the model's own row's: which figures were used instead and how to override them.

---@class context_sidecar.NoteEntry
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "note"
---@field text string
---@field seq integer
---@field id string # Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its entries with their ids, so an id names the same content in every branch.
---@field time string
---@field hash string # xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came, ``meta`` left out); keys the token-count cache.
---@field tokens? table<string, integer> # Cached token counts per tokenizer id, present when asked for (``withTokens``).

--- A host note kept in history; never shown to the model.
---@class context_sidecar.NoteInput
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "note"
---@field text string

--- One reason a params object was rejected.
---@class context_sidecar.ParamError
---@field loc string # Dotted path of the offending field, in wire (camelCase) names, e.g. ``entries.0.role``.
---@field msg string
---@field type string # pydantic's error type, e.g. ``missing``, ``extra_forbidden``, ``int_type``.

---@class context_sidecar.PinEntry
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "pin"
---@field target context_sidecar.ItemRef
---@field reason? string
---@field seq integer
---@field id string # Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its entries with their ids, so an id names the same content in every branch.
---@field time string
---@field hash string # xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came, ``meta`` left out); keys the token-count cache.
---@field tokens? table<string, integer> # Cached token counts per tokenizer id, present when asked for (``withTokens``).

--- Keep an item in the prompt whatever the budget pressure.
---@class context_sidecar.PinInput
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "pin"
---@field target context_sidecar.ItemRef
---@field reason? string

--- One step of the model's todo list (``update_plan``).
---@class context_sidecar.PlanEntry
---@field content string
---@field status "pending"|"in_progress"|"completed"
---@field priority? "high"|"medium"|"low"

--- Payload of ``plan.updated``: the model called ``update_plan`` with a well-formed list
--- (after ``tool.callRequested``, before ``tool.resultStored`` of the same call).  The list
--- is the whole plan: it replaces the one before.  A malformed call has no such event (its
--- result tells the model what is wrong).
---@class context_sidecar.PlanUpdated
---@field callId string
---@field entries context_sidecar.PlanEntry[]

---@class context_sidecar.Preset
---@field name? string
---@field components? context_sidecar.PromptComponent[]
---@field parameters? table<string, any> # Generation parameters (macros allowed in string values).
---@field maxContext? integer
---@field maxOutput? integer
---@field presetId string

---@class context_sidecar.PresetBinding
---@field mode? "current"|"ref" # ``current``: the components frozen with the input; ``ref``: the stored preset.
---@field presetId? string

---@class context_sidecar.PresetInput
---@field name? string
---@field components? context_sidecar.PromptComponent[]
---@field parameters? table<string, any> # Generation parameters (macros allowed in string values).
---@field maxContext? integer
---@field maxOutput? integer

---@class context_sidecar.PresetList
---@field presets context_sidecar.Preset[]

---@class context_sidecar.PresetUpdateParams
---@field id string
---@field preset context_sidecar.PresetInput

---@class context_sidecar.Profile
---@field name? string
---@field modelBinding? context_sidecar.ModelConnection # Overrides the connection fields of presets and inputs.
---@field assembly? context_sidecar.PromptProfile # History window, fragments, cache TTL, ...; ``provider``/``model`` come from the binding.
---@field preset? context_sidecar.PresetBinding
---@field agentSystemPrompt? string # The profile's instructions: a system section right after the fragments (macros allowed).
---@field builtinTools? context_sidecar.BuiltinTools # Runs with this profile offer the built-in workspace tools (a run's own ``builtinTools`` overrides the mode and the bound; the tool lists narrow each other).
---@field profileId string

---@class context_sidecar.ProfileInput
---@field name? string
---@field modelBinding? context_sidecar.ModelConnection # Overrides the connection fields of presets and inputs.
---@field assembly? context_sidecar.PromptProfile # History window, fragments, cache TTL, ...; ``provider``/``model`` come from the binding.
---@field preset? context_sidecar.PresetBinding
---@field agentSystemPrompt? string # The profile's instructions: a system section right after the fragments (macros allowed).
---@field builtinTools? context_sidecar.BuiltinTools # Runs with this profile offer the built-in workspace tools (a run's own ``builtinTools`` overrides the mode and the bound; the tool lists narrow each other).

---@class context_sidecar.ProfileList
---@field profiles context_sidecar.Profile[]

---@class context_sidecar.ProfileUpdateParams
---@field id string
---@field profile context_sidecar.ProfileInput

--- A preset's prompt component (SillyTavern PromptManager style).
---@class context_sidecar.PromptComponent
---@field identifier string
---@field role? "system"|"user"|"assistant"
---@field content string # Raw template: macros are evaluated at assembly, on a working copy.
---@field position? "relative"|"inChat" # ``relative``: a system section in preset order; ``inChat``: injected into the transcript ``depth`` messages from the end, moved back to the start of a tool call and its results when it would fall between them.
---@field depth? integer
---@field enabled? boolean

---@class context_sidecar.PromptMessage
---@field role "user"|"assistant"
---@field content context_sidecar.ContentPart[]
---@field tokens integer
---@field provenance context_sidecar.Provenance[]

--- How to assemble: the model and its limits, the history window, fragment overrides.
---@class context_sidecar.PromptProfile
---@field provider? "anthropic"|"openai"|"gemini"|"other"
---@field model? string
---@field window? integer # Context window override; default from the shipped model table.
---@field maxOutput? integer # Output tokens reserved; default from the model table.
---@field historyWindow? context_sidecar.HistoryWindow
---@field fragments? table<string, string|nil> # Replace a prompt fragment's text by id, or disable it with ``null``.
---@field searchMode? string
---@field cacheTtl? "5m"|"1h" # TTL for Anthropic cache markers on the stable prefix (tools, system); kept for older clients: ``cache.prefixTtl`` says the same and wins.
---@field cache? context_sidecar.CacheSettings # Cache lifetimes per marker (Anthropic) and OpenAI's retention.
---@field skillsCatalogShare? number # Share of the window the skills catalog may use.
---@field masking? context_sidecar.MaskingPolicy|"auto"|"off" # Observation masking of old tool results; ``"off"`` disables it, ``"auto"`` is the default policy.

--- An assembled prompt, immutable and content-addressed.
---@class context_sidecar.PromptSnapshot
---@field system context_sidecar.Section[]
---@field messages context_sidecar.PromptMessage[]
---@field tools context_sidecar.ToolDefinition[]
---@field ledger context_sidecar.LedgerItem[]
---@field dashboard context_sidecar.Dashboard
---@field cacheBreakpoints context_sidecar.CacheBreakpoint[]
---@field tokenizer string
---@field modelLimits context_sidecar.ModelLimits
---@field compaction context_sidecar.CompactionAdvice
---@field instructionsDiff context_sidecar.InstructionsDiff
---@field diagnostics context_sidecar.Diagnostic[]
---@field throughSeq integer # The session head this prompt was assembled from.
---@field cache? context_sidecar.CacheAccounting # Predicted cache read / write / uncached tokens and cost against the session's previous request.  Always in ``context/assemble`` answers; not kept in a stored snapshot (it says how this request relates to another, not what the model sees).
---@field snapshotId string # Git blob id of the snapshot's stored JSON (compact, keys in the order sent; without this field).
---@field inputId string
---@field sessionId string
---@field profileId? string
---@field profileHash string # xxh3-128 of the effective profile's canonical JSON.
---@field parameters? table<string, any> # Generation parameters after macro evaluation (merged into lowered bodies).
---@field unknownMacros? string[]
---@field items? context_sidecar.ContextItem[] # The attachments and pinned files the prompt carries (their blobs hold the content).
---@field checkpointId? string # The checkpoint of the workspace this snapshot's turn saw (``checkpoint/restore`` puts those files back); ``null`` when none was taken (no roots, checkpoints off, or assembled outside a run).

--- Where a section or message came from.
---@class context_sidecar.Provenance
---@field kind "fragment"|"environment"|"instruction"|"skillCatalog"|"skill"|"pin"|"host"|"summary"|"transcript"|"interruption"|"userTurn"
---@field id string
---@field path? string
---@field fromSeq? integer
---@field throughSeq? integer

--- Model reasoning ("thinking"), with the provider's opaque data kept verbatim so that
--- it can be sent back, unchanged, in every later request (see *Providers* in the guide).
---
--- - Anthropic ``thinking``: ``text`` and ``signature``; ``redacted_thinking``: ``redacted``
---   true, ``data`` the encrypted block, ``text`` empty.
--- - OpenAI Responses reasoning item: ``id`` (``rs_...``), ``data`` its
---   ``encrypted_content``, ``summary`` its summary texts in order and ``text`` them joined
---   with a blank line.
--- - Unsigned reasoning (Chat Completions servers, Gemini thought summaries, the scripted
---   provider) has ``text`` only and is shown, never sent back.
---@class context_sidecar.ReasoningPart
---@field type "reasoning"
---@field text string
---@field signature? string # Anthropic's signature of a thinking block.
---@field provider? "anthropic"|"openai-responses"|"gemini" # Whose opaque data this is; a lowering sends the part back only to that provider's API (``null``: written before this field existed, treated as Anthropic when signed).
---@field id? string # The provider's id of the reasoning item (OpenAI Responses ``rs_...``).
---@field data? string # Encrypted reasoning: OpenAI's ``encrypted_content``, Anthropic's redacted block.
---@field summary? string[] # OpenAI Responses: the summary parts as sent (``text`` is them joined).
---@field redacted? boolean # Anthropic ``redacted_thinking``: ``data`` holds the block, nothing is readable.

---@class context_sidecar.RecoverEntry
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "recover"
---@field target context_sidecar.ItemRef
---@field reason? string
---@field seq integer
---@field id string # Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its entries with their ids, so an id names the same content in every branch.
---@field time string
---@field hash string # xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came, ``meta`` left out); keys the token-count cache.
---@field tokens? table<string, integer> # Cached token counts per tokenizer id, present when asked for (``withTokens``).

---@class context_sidecar.RecoverInput
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "recover"
---@field target context_sidecar.ItemRef
---@field reason? string

---@class context_sidecar.RegisterSourceParams
---@field sessionId string
---@field source context_sidecar.HostSource

--- What the provider counted for the session's previous assembled request: the budget's
--- calibration (``docs/guide/context-policy.md``).
---@class context_sidecar.ReportedUsage
---@field promptTokens integer # The whole prompt as the provider counted it, cached or not (Anthropic: ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``; OpenAI: ``prompt_tokens`` / ``input_tokens``; Gemini: ``promptTokenCount``).

--- The requests this process has answered, by method, counted by how long each took inside
--- it: from the parsed request to its answer handed to the transport.  The pipe, the loop
--- turn that writes the answer and the client are not in it: beside the latency a client
--- measures, it says which side the time was spent on.  Counts only grow: the figures of a
--- period are the difference of two answers.
---@class context_sidecar.RequestLatencies
---@field boundsMs number[] # Upper bounds of the buckets, in milliseconds, increasing (each 1.25x the previous).
---@field counts table<string, integer[]> # Per method, ``len(boundsMs) + 1`` counts: requests that took at most ``boundsMs[i]`` (and more than the bound before it); the last, those over the last bound.

---@class context_sidecar.RestoreConflict
---@field path string
---@field reason string # E.g. "changed outside the agent since 2026-12-06T14:00:00.000Z".

---@class context_sidecar.RestoredFile
---@field path string
---@field action "written"|"deleted"|"created"

---@class context_sidecar.Run
---@field runId string
---@field sessionId string
---@field inputId string
---@field status "created"|"assembling"|"callingModel"|"dispatchingTool"|"compacting"|"completed"|"cancelled"|"failed"
---@field rounds integer # Model calls made so far.
---@field headSeq integer # Seq of the run's newest journal event.
---@field createdAt string
---@field updatedAt string
---@field failure? context_sidecar.RunFailure
---@field resumeOf? string # The run this one resumed.
---@field settings? context_sidecar.RunStartSettings # What the run was started with.  Absent from records written before the settings were kept: ``run/resume`` then uses safe defaults (approval before every tool of the input) and says so (``settingsDefaulted`` in the new run's ``run.created``).
---@field usage? table<string, any> # Totals: inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens.

--- Params of the ``run/event`` notification and one line of the run's journal.
---@class context_sidecar.RunEvent
---@field runId string
---@field sessionId string
---@field seq integer
---@field time string
---@field type string # ``run.created``, ``run.statusChanged``, ``context.assembled``, ``model.requestCreated``, ``model.delta``, ``model.completed``, ``tool.callRequested``, ``tool.approval``, ``plan.updated``, ``tool.resultStored``, ``history.appended``, ``compaction.started``, ``compaction.completed``, ``compaction.failed``, ``run.completed``.
---@field payload table<string, any>

---@class context_sidecar.RunFailure
---@field code string # Dotted: ``model.request_failed``, ``agent.max_tool_rounds_exceeded``, ``agent.tool_loop_detected``, ``agent.interrupted``, ``context.budget_exceeded``, …
---@field message string
---@field retryable? boolean # The same request may succeed if tried again later (rate limit, overload, crash).
---@field userRetryable? boolean # Worth offering the user a "retry" button (``run/resume``).
---@field details? table<string, any>

---@class context_sidecar.RunGetParams
---@field runId string

--- Server -> client notification: the client read too slowly, so this run's events (live,
--- or a ``run/subscribe`` replay past the 4 MiB backlog bound) stopped being sent after
--- ``lastSentSeq``; ``run/subscribe {afterSeq: lastSentSeq}`` catches up (after
--- ``retryAfterMs``).  Nothing is lost: the journal has every event.
---@class context_sidecar.RunLagged
---@field runId string
---@field sessionId string
---@field lastSentSeq integer
---@field code string # ``server.overloaded``.
---@field retryAfterMs integer

---@class context_sidecar.RunListParams
---@field sessionId? string
---@field limit? integer

---@class context_sidecar.RunListResult
---@field runs context_sidecar.Run[] # Newest first.

---@class context_sidecar.RunResumeParams
---@field runId string
---@field additionalRounds? integer # Model calls the resumed run may make; default: the run's own ``maxRounds``.
---@field revisionGuidance? string # Extra instruction for the continued run (added as a user note).
---@field script? table<string, any> # For the ``scripted`` provider: the answers to play (see *Scripted runs*).

---@class context_sidecar.RunStartParams
---@field sessionId string
---@field userTurn? context_sidecar.ContentPart[] # The turn to run; appended to history when the run starts.
---@field inputId? string # Or: an input frozen beforehand with ``input/freeze`` (its user turn is the turn).
---@field profileId? string
---@field profile? context_sidecar.ProfileInput
---@field tools? context_sidecar.ToolDefinition[] # Tools the host executes (``tool/execute``); ignored when ``inputId`` carries tools.
---@field approvalRequired? string[] # Tool names that need ``approval/request`` before each call.
---@field maxRounds? integer
---@field toolTimeoutMs? integer
---@field script? table<string, any> # For the ``scripted`` provider: the answers to play (see *Scripted runs*).
---@field delegation? boolean # Offer the built-in ``agent_delegate`` / ``agent_handoff`` tools (sub-agents).
---@field compaction? "auto"|"off" # ``auto``: when an assembly advises it, the model first writes a checkpoint summary (stored as a compaction entry), then the same turn continues.
---@field builtinTools? context_sidecar.BuiltinTools # Offer the sidecar's own workspace tools (see *Built-in tools*): they run in the sidecar, confined to the session's ``workspaceRoots``; writes and commands are approved as ``mode`` says (``approval/request`` when it asks).
---@field subscribe? boolean # Stream this run's events to this client from seq 1.

---@class context_sidecar.RunStartResult
---@field runId string
---@field sessionId string
---@field inputId string

--- What a run was started with, kept in its record: ``run/resume`` continues with exactly
--- these (a resumed run keeps them too).
---@class context_sidecar.RunStartSettings
---@field profileId? string # The stored profile named by ``run/start``.
---@field profile? context_sidecar.ProfileInput # The profile as it was when the run started (inline, or the stored one's content): a resumed run keeps its model binding, window and instructions even if the stored profile changed or was deleted since.
---@field approvalRequired? string[]
---@field maxRounds? integer
---@field toolTimeoutMs? integer
---@field delegation? boolean
---@field compaction? "auto"|"off"
---@field builtinTools? context_sidecar.BuiltinTools # The built-in tools as the run offered them (the profile's narrowing applied).
---@field scriptBlob? string # For the ``scripted`` provider: the script still to play, a stored object (``git cat-file -p`` shows it).  A resumed run without a ``script`` of its own plays the rounds the run it resumes had not reached.

---@class context_sidecar.RunSubscribeParams
---@field runId string
---@field afterSeq? integer # Replay journal events after this seq, then continue live.

---@class context_sidecar.RunSubscribeResult
---@field runId string
---@field replayed integer # Events sent from the journal (before this answer).
---@field headSeq integer
---@field status "created"|"assembling"|"callingModel"|"dispatchingTool"|"compacting"|"completed"|"cancelled"|"failed"
---@field live boolean # False when the run had already ended, or when the replay paused at the backlog bound (a ``run/lagged`` came before this answer): nothing more comes until the next ``run/subscribe``.

---@class context_sidecar.RunUnsubscribeParams
---@field runId string

---@class context_sidecar.Section
---@field id string
---@field category "system"|"tools"|"instructions"|"skills"|"pinned"|"host"|"summary"|"transcript"|"userTurn"
---@field title string
---@field text string
---@field tokens integer
---@field hash string
---@field provenance context_sidecar.Provenance

--- Sent under ``capabilities.experimental.contextSidecar`` in the ``initialize`` answer.
---@class context_sidecar.ServerCapabilities
---@field protocolVersion integer
---@field serverVersion string
---@field schemaHash string # xxh3-128 of the generated JSON Schema: equal hashes mean identical wire types.
---@field methods string[] # Every method a client can call (its requests and notifications to the server); what the server sends the client (``run/event``, ``tool/execute``, ...) is not listed.
---@field limits context_sidecar.Limits
---@field tokenizers context_sidecar.TokenizerInfo[]
---@field defaultTokenizer string
---@field storePath string

--- Answer of ``server/info``: the capability block plus live facts.
---@class context_sidecar.ServerInfo
---@field protocolVersion integer
---@field serverVersion string
---@field schemaHash string # xxh3-128 of the generated JSON Schema: equal hashes mean identical wire types.
---@field methods string[] # Every method a client can call (its requests and notifications to the server); what the server sends the client (``run/event``, ``tool/execute``, ...) is not listed.
---@field limits context_sidecar.Limits
---@field tokenizers context_sidecar.TokenizerInfo[]
---@field defaultTokenizer string
---@field storePath string
---@field pid integer
---@field startedAt string
---@field storeWritable boolean # Whether this process may write the store at all (false only when it was opened read-only).  Any number of sidecars write one store; a session another one holds answers its writes with ``session.held`` (see ``Session.heldBy``).
---@field outboundBacklogBytes? integer # Bytes sent to this client and not yet read by it (bounded: see ``run/lagged``).
---@field latencies context_sidecar.RequestLatencies # How long the requests answered so far took inside the sidecar (the few plain reads answered while the server loads, right after ``initialize``, are not counted).

---@class context_sidecar.ServerPingResult
---@field time string

--- Sleep, then answer: lets a host test its timeouts and ``$/cancelRequest`` handling.
---@class context_sidecar.ServerSleepParams
---@field ms integer

---@class context_sidecar.ServerSleepResult
---@field sleptMs integer

---@class context_sidecar.Session
---@field sessionId string # ``ses_`` + 26 characters, time-ordered (newer sessions sort later).
---@field title string
---@field workspaceRoots string[] # Absolute paths the session may read from; the first is the primary root.
---@field profileId? string
---@field createdAt string
---@field updatedAt string # Time of the last append or rename.
---@field headSeq integer # Seq of the newest entry; 0 for an empty session.
---@field forkedFrom? context_sidecar.ForkOrigin
---@field meta? table<string, any>
---@field heldBy? context_sidecar.SessionHolder # The process that holds the session for writing (this one, or another sidecar on the same store), absent when none does: another process's writes answer ``session.held`` until it releases the session (``session/release``) or ends.

---@class context_sidecar.SessionAppendParams
---@field sessionId string
---@field entries context_sidecar.EntryInput[]
---@field expectedHeadSeq? integer # Optimistic concurrency: when given and the head differs, nothing is written and the answer is ``store.conflict`` with the actual head in ``data.details.headSeq``.

---@class context_sidecar.SessionAppendResult
---@field headSeq integer
---@field appended context_sidecar.EntryRef[] # One per appended entry, in order; durable (fsynced) before this answer is sent.

---@class context_sidecar.SessionCompactParams
---@field sessionId string
---@field summary string
---@field throughSeq integer
---@field keepFromSeq? integer

--- Params of ``session/pin``, ``session/unpin``, ``session/drop``, ``session/recover``.
---@class context_sidecar.SessionControlParams
---@field sessionId string
---@field target context_sidecar.ItemRef
---@field reason? string

---@class context_sidecar.SessionCreateParams
---@field title? string
---@field workspaceRoots? string[] # Absolute paths; relative paths are rejected.
---@field profileId? string
---@field meta? table<string, any>

---@class context_sidecar.SessionDeleteResult
---@field sessionId string
---@field deleted boolean # Always true; the session's files are moved to the store's ``trash/``, not erased.

---@class context_sidecar.SessionForkParams
---@field sessionId string
---@field atSeq? integer # Last entry copied into the fork; default: the source's head.
---@field title? string

--- The process writing a session: sessions are written by one process at a time.
---@class context_sidecar.SessionHolder
---@field pid integer
---@field face string # ``serve``, ``acp``, or the tool that opened the store.
---@field since string # When that process took the session (ISO 8601).

---@class context_sidecar.SessionListParams
---@field cursor? string # ``nextCursor`` of the previous page; omit for the first page.
---@field limit? integer

---@class context_sidecar.SessionListResult
---@field sessions context_sidecar.Session[] # Newest first (by creation); stable under concurrent creation.
---@field nextCursor? string # Present when more sessions follow.

--- Read a page of history in ascending seq order.
---
--- With ``afterSeq`` (or neither bound) the page starts right after ``afterSeq`` (default 0)
--- and goes forward.  With only ``beforeSeq`` the page is the ``limit`` entries immediately
--- before it (scrolling back from the newest: ``beforeSeq = headSeq + 1``).  With both, the
--- page starts after ``afterSeq`` and stops before ``beforeSeq``.
---@class context_sidecar.SessionReadParams
---@field sessionId string
---@field afterSeq? integer
---@field beforeSeq? integer
---@field limit? integer
---@field withTokens? boolean # Include cached token counts (computed once per entry and tokenizer, then persisted).
---@field tokenizer? string # Tokenizer id for ``withTokens``; default: the server's default tokenizer.

---@class context_sidecar.SessionReadResult
---@field entries context_sidecar.Entry[]
---@field headSeq integer
---@field hasMore boolean # True when more entries exist in the direction read (forward, or backward for a ``beforeSeq``-only read) within the requested bounds.

--- Params of methods that act on one whole session (``session/get``, ``session/delete``).
---@class context_sidecar.SessionRef
---@field sessionId string

---@class context_sidecar.SessionReleaseResult
---@field sessionId string
---@field released boolean # True when this process held the session and has given it back; false when it did not hold it.

---@class context_sidecar.SessionRenameParams
---@field sessionId string
---@field title string

---@class context_sidecar.SkillActivatedEntry
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "skillActivated"
---@field name string
---@field path? string
---@field blob? string # Blob id of the activated text (what ``skills/activate`` stored).  Named ``blob``, not ``hash``: every stored entry's ``hash`` is the store's content hash of the entry.
---@field seq integer
---@field id string # Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its entries with their ids, so an id names the same content in every branch.
---@field time string
---@field hash string # xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came, ``meta`` left out); keys the token-count cache.
---@field tokens? table<string, integer> # Cached token counts per tokenizer id, present when asked for (``withTokens``).

--- A skill's body was loaded into context.
---@class context_sidecar.SkillActivatedInput
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "skillActivated"
---@field name string
---@field path? string
---@field blob? string # Blob id of the activated text (what ``skills/activate`` stored).  Named ``blob``, not ``hash``: every stored entry's ``hash`` is the store's content hash of the entry.

--- A skill's metadata (its ``SKILL.md`` frontmatter), as in the Agent Skills spec.
---@class context_sidecar.SkillInfo
---@field name string
---@field description string
---@field path string # Absolute path of the skill directory.
---@field root string # The skills root it was found under (e.g. ``<workspace>/.agents/skills``).
---@field license? string
---@field compatibility? string
---@field metadata? table<string, string>
---@field allowedTools? string[]

---@class context_sidecar.SkillReference
---@field path string # Relative to the skill directory.
---@field bytes integer
---@field truncated boolean

---@class context_sidecar.SkillSnapshot
---@field name string
---@field blob string # Blob id of the activated text (body + references).

---@class context_sidecar.SkillsActivateParams
---@field sessionId string
---@field name string

---@class context_sidecar.SkillsActivateResult
---@field skill context_sidecar.SkillInfo
---@field body string # ``SKILL.md`` without its frontmatter, then each reference file, within the limits.
---@field references context_sidecar.SkillReference[]
---@field blob string # Blob id of the activated text (the ``hash`` recorded in the ``skillActivated`` entry).
---@field entry context_sidecar.EntryRef
---@field diagnostics context_sidecar.Diagnostic[]

---@class context_sidecar.SkillsListParams
---@field sessionId string

---@class context_sidecar.SkillsListResult
---@field skills context_sidecar.SkillInfo[]
---@field diagnostics context_sidecar.Diagnostic[]

---@class context_sidecar.SnapshotAssembleParams
---@field sessionId string
---@field inputId string
---@field profileId? string # Stored profile to assemble with; default: the default profile.
---@field profile? context_sidecar.ProfileInput # An inline profile instead of a stored one.

---@class context_sidecar.SnapshotAssembleResult
---@field snapshotId string
---@field inputId string
---@field dashboard context_sidecar.Dashboard
---@field compaction context_sidecar.CompactionAdvice
---@field diff context_sidecar.SnapshotDiff # Against the session's previous snapshot (all ``added`` for the first one).
---@field unknownMacros string[]
---@field cache context_sidecar.CacheAccounting # Predicted cache read / write / uncached tokens and cost of this prompt against the session's previous snapshot.

---@class context_sidecar.SnapshotDiff
---@field fromSnapshot string|nil
---@field toSnapshot string
---@field sectionsAdded string[]
---@field sectionsRemoved string[]
---@field sectionsChanged string[]
---@field ledgerChanges context_sidecar.LedgerChange[]
---@field messagesBefore integer
---@field messagesAfter integer
---@field prefixUnits integer # Leading request units (each tool, system section, message) identical in both.
---@field prefixTokens integer # Tokens of those units: what a prompt cache can serve (predicted cache hit).
---@field totalTokensBefore integer
---@field totalTokensAfter integer

---@class context_sidecar.SnapshotDiffParams
---@field to string
---@field from? string # Default: the snapshot assembled before ``to`` in the same session.

---@class context_sidecar.SnapshotGetParams
---@field snapshotId string

---@class context_sidecar.SnapshotLowerParams
---@field snapshotId string
---@field target "anthropic-messages"|"openai-chat"|"openai-responses"|"gemini"|"system-as-user"

---@class context_sidecar.SnapshotLowerResult
---@field snapshotId string
---@field target "anthropic-messages"|"openai-chat"|"openai-responses"|"gemini"|"system-as-user"
---@field body table<string, any>

---@class context_sidecar.SourceRegistration
---@field sessionId string
---@field ids string[] # Ids of the host sources registered for the session after this call (kept in memory for the sidecar's lifetime, not in history).

---@class context_sidecar.StoreGcParams
---@field keepRecent? integer # Snapshots kept per session besides those a run or a pin refers to.
---@field graceSeconds? integer # Blobs younger than this are kept (an input being frozen right now is not yet referenced).
---@field dryRun? boolean

---@class context_sidecar.StoreGcResult
---@field kept integer
---@field collected integer
---@field collectedBytes integer
---@field dryRun boolean
---@field snapshotsDropped integer
---@field checkpointsDropped integer # Workspace checkpoints past their session's retention (the newest ``keep``, none older than ``maxAgeDays``) dropped by this collection (a dry run: that would be).

--- Answer of ``store/stats``: what the store holds.
---@class context_sidecar.StoreStatsResult
---@field sessions integer
---@field blobs integer # Objects in the object database.
---@field blobBytes integer # Bytes they take on disk.
---@field checkpoints context_sidecar.CheckpointStats

--- Plain text.
---@class context_sidecar.TextPart
---@field type "text"
---@field text string

---@class context_sidecar.TokenizerInfo
---@field id string # Stable id used in caches and answers, e.g. ``cl100k_base``, ``o200k_base``, ``estimate``.
---@field exact boolean # False for the byte-length estimate used only when no real encoding loads.
---@field available? boolean
---@field description? string

---@class context_sidecar.TokensCountParams
---@field texts string[]
---@field tokenizer? string # Tokenizer id; default: the server's default (``initialize`` lists them).

---@class context_sidecar.TokensCountResult
---@field tokenizer context_sidecar.TokenizerInfo # The tokenizer that produced these counts.
---@field counts integer[] # One per input text, in order.
---@field total integer

--- Payload of ``tool.approval``: how the approval mode decided a built-in call (after
--- ``tool.callRequested``, before ``tool.resultStored``).
---@class context_sidecar.ToolApproval
---@field callId string
---@field name string
---@field effect "read"|"edit"|"execute"
---@field mode "ask"|"accept_edits"|"auto"|"plan"|"read_only"|"allow_all"
---@field verdict "allow"|"ask"|"refuse"|"sandbox" # ``allow``: run without asking; ``ask``: ``approval/request`` was sent; ``refuse``: the mode forbids it (not run, the model is told); ``sandbox``: run without asking in the sandbox (``auto``).
---@field approved boolean # Whether it ran (for ``ask``: what the host answered).
---@field reason? string
---@field escalation? "requested"|"blocked" # An ``ask`` to run a command outside the sandbox (``auto``; see ``approval/request``); a ``blocked`` one follows the ``sandbox`` event of the same call.

--- The model asked for a tool to run.
---@class context_sidecar.ToolCallPart
---@field type "toolCall"
---@field callId string
---@field name string
---@field arguments table<string, any>
---@field signature? string # Opaque data the provider attached to the call, kept verbatim and sent back with it (Gemini's ``thoughtSignature``: Gemini 3 refuses a call of the current turn without it); absent for providers that sign nothing.

---@class context_sidecar.ToolDefinition
---@field name string # Letters, digits, ``_`` and ``-``, at most 64: what every provider accepts (Anthropic and OpenAI reject dots), so a name valid here is valid everywhere it is lowered.
---@field description? string
---@field parameters? table<string, any> # JSON Schema of the arguments; must be an object schema.

--- Server -> client request: run a tool for a run.
---@class context_sidecar.ToolExecuteParams
---@field runId string
---@field callId string
---@field name string
---@field arguments table<string, any>

---@class context_sidecar.ToolExecuteResult
---@field content (context_sidecar.TextPart|context_sidecar.ImagePart)[]
---@field isError? boolean

---@class context_sidecar.ToolLocation
---@field path string
---@field line? integer # 1-based.

--- The settled result of a tool call, matched to it by ``callId``.
---@class context_sidecar.ToolResultPart
---@field type "toolResult"
---@field callId string
---@field content (context_sidecar.TextPart|context_sidecar.ImagePart)[]
---@field isError? boolean

--- Payload of ``tool.resultStored`` (every tool call; ``content`` and the fields after it
--- only for a built-in one, whose result no host has seen).
---@class context_sidecar.ToolResultStored
---@field callId string
---@field isError boolean
---@field seq integer # The history entry holding the result.
---@field content? table<string, any>[] # What the model reads (already bounded).
---@field truncated? boolean # The result was cut to its bound; its text says how to read on.
---@field locations? context_sidecar.ToolLocation[]
---@field change? context_sidecar.protocol__tools__FileChange # A write or an edit that was made: the file before and after.
---@field exitCode? integer # A command's exit code (absent when it timed out or was cancelled).

--- One message of the turn in progress after its user message: the model's answer with
--- its tool calls, or the results of those calls (``role: "user"``, ``toolResult`` parts).
---@class context_sidecar.TurnMessage
---@field role "user"|"assistant"
---@field content context_sidecar.ContentPart[]

---@class context_sidecar.UnpinEntry
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "unpin"
---@field target context_sidecar.ItemRef
---@field reason? string
---@field seq integer
---@field id string # Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its entries with their ids, so an id names the same content in every branch.
---@field time string
---@field hash string # xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came, ``meta`` left out); keys the token-count cache.
---@field tokens? table<string, integer> # Cached token counts per tokenizer id, present when asked for (``withTokens``).

---@class context_sidecar.UnpinInput
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "unpin"
---@field target context_sidecar.ItemRef
---@field reason? string

---@class context_sidecar.UnrestoredFile
---@field path string
---@field reason string

---@class context_sidecar.Variables
---@field ["local"]? table<string, any>
---@field global? table<string, any>

---@class context_sidecar.VariablesEntry
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "variables"
---@field scope? "local"|"global"
---@field values table<string, any>
---@field seq integer
---@field id string # Globally unique, time-ordered entry id (``ent_`` + 26 characters); a fork copies its entries with their ids, so an id names the same content in every branch.
---@field time string
---@field hash string # xxh3-128 (hex) of the entry's compact JSON as stored (keys in the order they came, ``meta`` left out); keys the token-count cache.
---@field tokens? table<string, integer> # Cached token counts per tokenizer id, present when asked for (``withTokens``).

--- A committed change of session variables: keys set to values (``null`` unsets).
---@class context_sidecar.VariablesInput
---@field meta? table<string, any> # Host data kept with the entry and returned verbatim; never shown to the model.
---@field kind "variables"
---@field scope? "local"|"global"
---@field values table<string, any>

--- Where the history window starts and when it moves next (``sidecar/context/window.py``).
---@class context_sidecar.WindowState
---@field startSeq? integer # The first seq shown when a cap cut the transcript; ``null``: nothing was cut.
---@field boundBy "budget"|"maxTokens"|"maxMessages" # The cap with the least room left: the one that moves the start next.
---@field unit "tokens"|"messages"
---@field limit integer # That cap's limit (the budget's room for the transcript, or the profile's cap).
---@field quantum integer # How far the start moves when it moves, in ``unit``.
---@field roomLeft integer # Growth, in ``unit``, the transcript takes from this start before the start moves.

---@class context_sidecar.protocol__checkpoints__FileChange
---@field path string # Relative to its root, ``/`` separators.
---@field root string # The session root it lies under.
---@field change "added"|"modified"|"deleted" # From the checkpoint to now: ``added`` exists now and not in the checkpoint.
---@field before? string # Git blob id in the checkpoint (``null``: absent, or not captured).
---@field after? string # Git blob id of the file now (``null``: absent).
---@field beforeMode? "100644"|"100755"|"120000"
---@field afterMode? "100644"|"100755"|"120000"
---@field binary? boolean
---@field diff? string # Unified diff, checkpoint -> now (text files, bounded).
---@field notCaptured? boolean # The checkpoint recorded the file without its content (over the size bound).

--- A write or an edit of a built-in tool: the file before and after (texts over 256 KiB
--- are left out, ``omitted`` says so).
---@class context_sidecar.protocol__tools__FileChange
---@field path string # As the model named it (relative to the first workspace root when inside it).
---@field oldText? string # Absent for a new file.
---@field newText? string
---@field created? boolean
---@field omitted? boolean

--- Requests the client sends, by method name.
---@class context_sidecar.ClientRequests
---@field ["session/create"] { params: context_sidecar.SessionCreateParams, result: context_sidecar.Session } # Create an empty session.
---@field ["session/list"] { params: context_sidecar.SessionListParams, result: context_sidecar.SessionListResult } # List sessions, newest first, by cursor.
---@field ["session/get"] { params: context_sidecar.SessionRef, result: context_sidecar.Session } # Get one session's metadata.
---@field ["session/append"] { params: context_sidecar.SessionAppendParams, result: context_sidecar.SessionAppendResult } # Append entries durably; optional optimistic check of the head seq.
---@field ["session/read"] { params: context_sidecar.SessionReadParams, result: context_sidecar.SessionReadResult } # Read a page of history by seq.
---@field ["session/fork"] { params: context_sidecar.SessionForkParams, result: context_sidecar.Session } # Copy a session's history up to a seq into a new session.
---@field ["session/rename"] { params: context_sidecar.SessionRenameParams, result: context_sidecar.Session } # Retitle a session.
---@field ["session/delete"] { params: context_sidecar.SessionRef, result: context_sidecar.SessionDeleteResult } # Move a session to the store's trash; `session.busy` (retryable) while a run is active on it.
---@field ["session/release"] { params: context_sidecar.SessionRef, result: context_sidecar.SessionReleaseResult } # Give the session back so that another sidecar on the store can write it (this one takes it again on its next write); `session.busy` (retryable) while a run is active on it.
---@field ["session/pin"] { params: context_sidecar.SessionControlParams, result: context_sidecar.SessionAppendResult } # Pin an item into the prompt.
---@field ["session/unpin"] { params: context_sidecar.SessionControlParams, result: context_sidecar.SessionAppendResult } # Undo a pin.
---@field ["session/drop"] { params: context_sidecar.SessionControlParams, result: context_sidecar.SessionAppendResult } # Keep an item out of the prompt.
---@field ["session/recover"] { params: context_sidecar.SessionControlParams, result: context_sidecar.SessionAppendResult } # Undo a drop.
---@field ["session/compact"] { params: context_sidecar.SessionCompactParams, result: context_sidecar.SessionAppendResult } # Record a compaction: a summary standing for history up to a seq (nothing is deleted).
---@field ["context/sources"] { params: context_sidecar.ContextSourcesParams, result: context_sidecar.ContextSourcesResult } # Instruction files and skills found for a session, with diagnostics.
---@field ["context/assemble"] { params: context_sidecar.ContextAssembleParams, result: context_sidecar.ContextAssembleResult } # What exactly the model would see for this turn, and why; optionally lowered.
---@field ["context/registerSource"] { params: context_sidecar.RegisterSourceParams, result: context_sidecar.SourceRegistration } # Register a host source (RAG results, editor state) for a session's assemblies.
---@field ["context/unregisterSource"] { params: context_sidecar.HostSourceRef, result: context_sidecar.SourceRegistration } # Remove a registered host source.
---@field ["skills/list"] { params: context_sidecar.SkillsListParams, result: context_sidecar.SkillsListResult } # Skills available to a session.
---@field ["skills/activate"] { params: context_sidecar.SkillsActivateParams, result: context_sidecar.SkillsActivateResult } # Load a skill's body and references; records a skillActivated entry.
---@field ["input/freeze"] { params: context_sidecar.InputFreezeParams, result: context_sidecar.InputFreezeResult } # Capture everything a turn depends on, once; content-addressed (same inputs, same id).
---@field ["input/get"] { params: context_sidecar.InputGetParams, result: context_sidecar.FrozenInput } # Read a frozen input back.
---@field ["snapshot/assemble"] { params: context_sidecar.SnapshotAssembleParams, result: context_sidecar.SnapshotAssembleResult } # Assemble a frozen input with a profile into a stored, content-addressed snapshot.
---@field ["snapshot/get"] { params: context_sidecar.SnapshotGetParams, result: context_sidecar.PromptSnapshot } # Read a snapshot.
---@field ["snapshot/lower"] { params: context_sidecar.SnapshotLowerParams, result: context_sidecar.SnapshotLowerResult } # A snapshot as a provider body.
---@field ["snapshot/diff"] { params: context_sidecar.SnapshotDiffParams, result: context_sidecar.SnapshotDiff } # What changed between two snapshots, and the identical prefix (predicted cache hit).
---@field ["blob/read"] { params: context_sidecar.BlobReadParams, result: context_sidecar.BlobReadResult } # Read a range of a blob.
---@field ["profile/create"] { params: context_sidecar.ProfileInput, result: context_sidecar.Profile } # Store a profile.
---@field ["profile/get"] { params: context_sidecar.DocumentRef, result: context_sidecar.Profile } # Read a profile.
---@field ["profile/list"] { params: context_sidecar.EmptyParams, result: context_sidecar.ProfileList } # List profiles.
---@field ["profile/update"] { params: context_sidecar.ProfileUpdateParams, result: context_sidecar.Profile } # Replace a profile.
---@field ["profile/delete"] { params: context_sidecar.DocumentRef, result: context_sidecar.DeleteResult } # Delete a profile.
---@field ["preset/create"] { params: context_sidecar.PresetInput, result: context_sidecar.Preset } # Store a preset.
---@field ["preset/get"] { params: context_sidecar.DocumentRef, result: context_sidecar.Preset } # Read a preset.
---@field ["preset/list"] { params: context_sidecar.EmptyParams, result: context_sidecar.PresetList } # List presets.
---@field ["preset/update"] { params: context_sidecar.PresetUpdateParams, result: context_sidecar.Preset } # Replace a preset.
---@field ["preset/delete"] { params: context_sidecar.DocumentRef, result: context_sidecar.DeleteResult } # Delete a preset.
---@field ["store/gc"] { params: context_sidecar.StoreGcParams, result: context_sidecar.StoreGcResult } # Collect blobs no session, kept snapshot or input refers to (explicit, never automatic).
---@field ["store/stats"] { params: context_sidecar.EmptyParams, result: context_sidecar.StoreStatsResult } # What the store holds: sessions, objects and their bytes, checkpoints.
---@field ["checkpoint/list"] { params: context_sidecar.CheckpointListParams, result: context_sidecar.CheckpointListResult } # A session's checkpoints of its workspace, newest first, with how many files changed since.
---@field ["checkpoint/diff"] { params: context_sidecar.CheckpointDiffParams, result: context_sidecar.CheckpointDiffResult } # Per file, what changed from a checkpoint to the workspace now (bounded unified diffs).
---@field ["checkpoint/restore"] { params: context_sidecar.CheckpointRestoreParams, result: context_sidecar.CheckpointRestoreResult } # Put the files back as a checkpoint holds them (checkpointed first, so it can be undone) and/or fork the conversation before its turn; files changed outside the agent are conflicts unless `force`.
---@field ["run/start"] { params: context_sidecar.RunStartParams, result: context_sidecar.RunStartResult } # Start a run: the model/tool loop for a turn.
---@field ["run/get"] { params: context_sidecar.RunGetParams, result: context_sidecar.Run } # A run's state.
---@field ["run/list"] { params: context_sidecar.RunListParams, result: context_sidecar.RunListResult } # Runs, newest first.
---@field ["run/subscribe"] { params: context_sidecar.RunSubscribeParams, result: context_sidecar.RunSubscribeResult } # Replay a run's events after afterSeq, then continue live (no gap, no duplicate).
---@field ["run/unsubscribe"] { params: context_sidecar.RunUnsubscribeParams, result: context_sidecar.Run } # Stop receiving a run's live events.
---@field ["run/cancel"] { params: context_sidecar.RunGetParams, result: context_sidecar.Run } # Cancel a run; answers once it ended.
---@field ["run/resume"] { params: context_sidecar.RunResumeParams, result: context_sidecar.RunStartResult } # Continue a stopped run (a new run on the same input; settled tool calls are not redone).
---@field ["tokens/count"] { params: context_sidecar.TokensCountParams, result: context_sidecar.TokensCountResult } # Count tokens of texts.
---@field ["server/info"] { params: context_sidecar.EmptyParams, result: context_sidecar.ServerInfo } # Capabilities, limits and live server facts.
---@field ["server/ping"] { params: context_sidecar.EmptyParams, result: context_sidecar.ServerPingResult } # Trivial round trip.
---@field ["server/sleep"] { params: context_sidecar.ServerSleepParams, result: context_sidecar.ServerSleepResult } # Answer after a delay (cancellable); for testing client timeouts and cancellation.

---@alias context_sidecar.ClientRequestMethod "session/create"|"session/list"|"session/get"|"session/append"|"session/read"|"session/fork"|"session/rename"|"session/delete"|"session/release"|"session/pin"|"session/unpin"|"session/drop"|"session/recover"|"session/compact"|"context/sources"|"context/assemble"|"context/registerSource"|"context/unregisterSource"|"skills/list"|"skills/activate"|"input/freeze"|"input/get"|"snapshot/assemble"|"snapshot/get"|"snapshot/lower"|"snapshot/diff"|"blob/read"|"profile/create"|"profile/get"|"profile/list"|"profile/update"|"profile/delete"|"preset/create"|"preset/get"|"preset/list"|"preset/update"|"preset/delete"|"store/gc"|"store/stats"|"checkpoint/list"|"checkpoint/diff"|"checkpoint/restore"|"run/start"|"run/get"|"run/list"|"run/subscribe"|"run/unsubscribe"|"run/cancel"|"run/resume"|"tokens/count"|"server/info"|"server/ping"|"server/sleep"

--- Notifications the client sends, by method name.
---@class context_sidecar.ClientNotifications

---@alias context_sidecar.ClientNotificationMethod nil

--- Requests the server sends, by method name.
---@class context_sidecar.ServerRequests
---@field ["tool/execute"] { params: context_sidecar.ToolExecuteParams, result: context_sidecar.ToolExecuteResult } # The host runs a tool for a run and answers with its result.
---@field ["assembly/request"] { params: context_sidecar.AssemblyRequestParams, result: context_sidecar.AssemblyRequestResult } # The host assembles a sub-agent's prompt with its own assembler (hosts that declared it).
---@field ["approval/request"] { params: context_sidecar.ApprovalRequestParams, result: context_sidecar.ApprovalRequestResult } # The host approves or denies a tool call the profile marks as needing approval.

---@alias context_sidecar.ServerRequestMethod "tool/execute"|"assembly/request"|"approval/request"

--- Notifications the server sends, by method name.
---@class context_sidecar.ServerNotifications
---@field ["run/event"] { params: context_sidecar.RunEvent } # A run event, journaled before it is sent.
---@field ["run/lagged"] { params: context_sidecar.RunLagged } # The client read too slowly: live events paused; catch up with run/subscribe.

---@alias context_sidecar.ServerNotificationMethod "run/event"|"run/lagged"

---@alias context_sidecar.MethodName "session/create"|"session/list"|"session/get"|"session/append"|"session/read"|"session/fork"|"session/rename"|"session/delete"|"session/release"|"session/pin"|"session/unpin"|"session/drop"|"session/recover"|"session/compact"|"context/sources"|"context/assemble"|"context/registerSource"|"context/unregisterSource"|"skills/list"|"skills/activate"|"input/freeze"|"input/get"|"snapshot/assemble"|"snapshot/get"|"snapshot/lower"|"snapshot/diff"|"blob/read"|"profile/create"|"profile/get"|"profile/list"|"profile/update"|"profile/delete"|"preset/create"|"preset/get"|"preset/list"|"preset/update"|"preset/delete"|"store/gc"|"store/stats"|"checkpoint/list"|"checkpoint/diff"|"checkpoint/restore"|"run/start"|"run/get"|"run/list"|"run/subscribe"|"run/unsubscribe"|"run/cancel"|"run/resume"|"run/event"|"run/lagged"|"tool/execute"|"assembly/request"|"approval/request"|"tokens/count"|"server/info"|"server/ping"|"server/sleep"

return {
  PROTOCOL_VERSION = 1,
  SCHEMA_HASH = "8722839f5f71d97c680c2add55162a15",
  METHODS = {
    { name = "session/create", kind = "request", direction = "clientToServer" },
    { name = "session/list", kind = "request", direction = "clientToServer" },
    { name = "session/get", kind = "request", direction = "clientToServer" },
    { name = "session/append", kind = "request", direction = "clientToServer" },
    { name = "session/read", kind = "request", direction = "clientToServer" },
    { name = "session/fork", kind = "request", direction = "clientToServer" },
    { name = "session/rename", kind = "request", direction = "clientToServer" },
    { name = "session/delete", kind = "request", direction = "clientToServer" },
    { name = "session/release", kind = "request", direction = "clientToServer" },
    { name = "session/pin", kind = "request", direction = "clientToServer" },
    { name = "session/unpin", kind = "request", direction = "clientToServer" },
    { name = "session/drop", kind = "request", direction = "clientToServer" },
    { name = "session/recover", kind = "request", direction = "clientToServer" },
    { name = "session/compact", kind = "request", direction = "clientToServer" },
    { name = "context/sources", kind = "request", direction = "clientToServer" },
    { name = "context/assemble", kind = "request", direction = "clientToServer" },
    { name = "context/registerSource", kind = "request", direction = "clientToServer" },
    { name = "context/unregisterSource", kind = "request", direction = "clientToServer" },
    { name = "skills/list", kind = "request", direction = "clientToServer" },
    { name = "skills/activate", kind = "request", direction = "clientToServer" },
    { name = "input/freeze", kind = "request", direction = "clientToServer" },
    { name = "input/get", kind = "request", direction = "clientToServer" },
    { name = "snapshot/assemble", kind = "request", direction = "clientToServer" },
    { name = "snapshot/get", kind = "request", direction = "clientToServer" },
    { name = "snapshot/lower", kind = "request", direction = "clientToServer" },
    { name = "snapshot/diff", kind = "request", direction = "clientToServer" },
    { name = "blob/read", kind = "request", direction = "clientToServer" },
    { name = "profile/create", kind = "request", direction = "clientToServer" },
    { name = "profile/get", kind = "request", direction = "clientToServer" },
    { name = "profile/list", kind = "request", direction = "clientToServer" },
    { name = "profile/update", kind = "request", direction = "clientToServer" },
    { name = "profile/delete", kind = "request", direction = "clientToServer" },
    { name = "preset/create", kind = "request", direction = "clientToServer" },
    { name = "preset/get", kind = "request", direction = "clientToServer" },
    { name = "preset/list", kind = "request", direction = "clientToServer" },
    { name = "preset/update", kind = "request", direction = "clientToServer" },
    { name = "preset/delete", kind = "request", direction = "clientToServer" },
    { name = "store/gc", kind = "request", direction = "clientToServer" },
    { name = "store/stats", kind = "request", direction = "clientToServer" },
    { name = "checkpoint/list", kind = "request", direction = "clientToServer" },
    { name = "checkpoint/diff", kind = "request", direction = "clientToServer" },
    { name = "checkpoint/restore", kind = "request", direction = "clientToServer" },
    { name = "run/start", kind = "request", direction = "clientToServer" },
    { name = "run/get", kind = "request", direction = "clientToServer" },
    { name = "run/list", kind = "request", direction = "clientToServer" },
    { name = "run/subscribe", kind = "request", direction = "clientToServer" },
    { name = "run/unsubscribe", kind = "request", direction = "clientToServer" },
    { name = "run/cancel", kind = "request", direction = "clientToServer" },
    { name = "run/resume", kind = "request", direction = "clientToServer" },
    { name = "run/event", kind = "notification", direction = "serverToClient" },
    { name = "run/lagged", kind = "notification", direction = "serverToClient" },
    { name = "tool/execute", kind = "request", direction = "serverToClient" },
    { name = "assembly/request", kind = "request", direction = "serverToClient" },
    { name = "approval/request", kind = "request", direction = "serverToClient" },
    { name = "tokens/count", kind = "request", direction = "clientToServer" },
    { name = "server/info", kind = "request", direction = "clientToServer" },
    { name = "server/ping", kind = "request", direction = "clientToServer" },
    { name = "server/sleep", kind = "request", direction = "clientToServer" },
  },
}
