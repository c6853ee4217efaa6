// The chat's slash commands, as the ACP face has them, composed from `serve`'s own methods:
// /context (the dashboard of the session as it assembles now), /compact (a checkpoint summary
// written by the model, stored with session/compact), /pin PATH (session/pin of a file),
// /snapshot (input/freeze + snapshot/assemble, and what changed). Each answers with markdown;
// the answer is not history (the model never sees it), what it changes is.
import * as path from "node:path";

import { cacheLines, formatTokens, maskingLine, windowLine } from "../format";
import { recoverableItems, type PromptProfile, type RunEvent, type SidecarHost } from "../host";

/** What a command needs besides the sidecar. */
export interface SlashContext {
  host: SidecarHost;
  sessionId: string;
  /** The workspace root files are pinned from. */
  root: string | undefined;
  /** The assembly profile of the settings (`{}`: the sidecar's defaults). */
  assembly: PromptProfile;
  /** run/start fields naming the model (profileId, profile): what /compact's summary call uses. */
  model: Record<string, unknown>;
  /** A script for the summary call (the scripted model in tests). */
  script?: Record<string, unknown>;
}

const SUMMARY_PROMPT =
  "Write a checkpoint summary of the conversation so far, to stand in for its older part. " +
  "Use these headings: Goal; Constraints & Preferences; Progress; Key Decisions; " +
  "Next Steps; Critical Context; Relevant Files. Be specific and brief; keep facts, " +
  "names, paths and numbers exactly.";

/** `/name argument` of a prompt, or undefined when it is not a command. */
export function parseSlash(text: string): { name: string; argument: string } | undefined {
  const m = /^\/(context|compact|pin|snapshot)\b\s*(.*)$/s.exec(text.trim());
  return m ? { name: m[1]!, argument: m[2]!.trim() } : undefined;
}

export async function runSlash(name: string, argument: string, ctx: SlashContext): Promise<string> {
  switch (name) {
    case "context":
      return contextCommand(ctx);
    case "compact":
      return compactCommand(ctx);
    case "pin":
      return pinCommand(argument, ctx);
    case "snapshot":
      return snapshotCommand(ctx);
    default:
      return `Unknown command \`/${name}\`.`;
  }
}

const placeholder = (name: string) => [{ type: "text" as const, text: `(/${name}: what the next turn would see)` }];

async function contextCommand(ctx: SlashContext): Promise<string> {
  const result = await ctx.host.request("context/assemble", {
    sessionId: ctx.sessionId,
    userTurn: placeholder("context"),
    ...(Object.keys(ctx.assembly).length > 0 ? { profile: ctx.assembly } : {}),
    ...(ctx.root !== undefined ? { cwd: ctx.root } : {}),
  });
  const d = result.dashboard;
  const categories = Object.entries(d.categories)
    .filter(([, tokens]) => tokens > 0)
    .map(([category, tokens]) => `| ${category} | ${tokens.toLocaleString("en-US")} |`);
  const left = result.ledger.filter((item) => item.visibility !== "visible");
  const recoverable = new Set(recoverableItems(result.ledger).map((i) => i.itemId));
  return [
    `**Context** ${formatTokens(d.used)} / ${formatTokens(d.availableInput)} tokens — ${d.summary}`,
    "",
    "| category | tokens |",
    "|---|---|",
    ...categories,
    "",
    ...cacheLines(result.cache).map((line) => `- ${line}`),
    `- ${windowLine(d.historyWindow)}`,
    `- ${maskingLine(d.masking)}`,
    ...(left.length > 0
      ? ["", "Left out or masked:", ...left.slice(0, 30).map((i) => `- \`${i.itemId}\` ${i.visibility} ${i.kind} ${i.locator ?? ""} — ${i.reason}${recoverable.has(i.itemId) ? " (recoverable)" : ""}`)]
      : []),
  ].join("\n");
}

/** The summary is written by a run in a throw-away fork (its turn and answer stay out of the
 *  session), then stored in the session with session/compact through the head. */
async function compactCommand(ctx: SlashContext): Promise<string> {
  const { host, sessionId } = ctx;
  const session = await host.request("session/get", { sessionId });
  if (session.headSeq === 0) return "Nothing to compact: the session has no history yet.";
  const assembled = await host.request("context/assemble", {
    sessionId,
    userTurn: placeholder("compact"),
    ...(Object.keys(ctx.assembly).length > 0 ? { profile: ctx.assembly } : {}),
  });
  const through = assembled.throughSeq;
  const keep = assembled.compaction.keepFromSeq;
  const fork = await host.request("session/fork", { sessionId, title: "compact (temporary)" });
  let summary = "";
  try {
    const texts: string[] = [];
    const listener = host.onRunEvent((event: RunEvent) => {
      if (event.sessionId === fork.sessionId && event.type === "model.delta" && typeof event.payload["text"] === "string") texts.push(event.payload["text"]);
    });
    try {
      const { runId } = await host.request("run/start", {
        sessionId: fork.sessionId,
        userTurn: [{ type: "text", text: SUMMARY_PROMPT }],
        tools: [],
        maxRounds: 1,
        compaction: "off",
        ...ctx.model,
        ...(ctx.script ? { script: ctx.script } : {}),
      });
      const done = await host.waitForCompletion(runId, 300_000);
      if (done.payload["status"] !== "completed") throw new Error(`the summary call ${String(done.payload["status"])}`);
    } finally {
      listener.dispose();
    }
    summary = texts.join("").trim();
  } finally {
    await host.request("session/delete", { sessionId: fork.sessionId }).catch(() => undefined);
  }
  if (!summary) return "The model wrote no summary; nothing was compacted.";
  const stored = await host.request("session/compact", {
    sessionId,
    summary,
    throughSeq: through,
    ...(keep != null && keep <= through ? { keepFromSeq: keep } : {}),
  });
  const kept = keep != null && keep <= through ? `, seq ${keep} onwards kept verbatim` : "";
  const seq = stored.appended[0]?.seq;
  return `**Compacted** history through seq ${through}${kept} (entry seq ${seq}): the transcript took ${assembled.compaction.transcriptTokens.toLocaleString("en-US")} tokens.\n\n> ${summary.slice(0, 400)}${summary.length > 400 ? "…" : ""}`;
}

async function pinCommand(argument: string, ctx: SlashContext): Promise<string> {
  if (!argument) return "Usage: `/pin PATH` (a file in the workspace).";
  if (ctx.root === undefined) return "No workspace folder is open to pin files from.";
  const absolute = path.resolve(ctx.root, argument);
  const locator = path.relative(ctx.root, absolute);
  if (locator.startsWith("..") || path.isAbsolute(locator)) return `\`${argument}\` is outside the workspace.`;
  const stored = await ctx.host.request("session/pin", { sessionId: ctx.sessionId, target: { kind: "file", locator } });
  return `**Pinned** \`${locator}\` (entry seq ${stored.appended[0]?.seq}): it is in every prompt from the next turn on.`;
}

async function snapshotCommand(ctx: SlashContext): Promise<string> {
  const frozen = await ctx.host.request("input/freeze", {
    sessionId: ctx.sessionId,
    userTurn: placeholder("snapshot"),
    ...(ctx.root !== undefined ? { cwd: ctx.root } : {}),
  });
  const answer = await ctx.host.request("snapshot/assemble", {
    sessionId: ctx.sessionId,
    inputId: frozen.inputId,
    ...(typeof ctx.model["profileId"] === "string" ? { profileId: ctx.model["profileId"] } : {}),
  });
  const diff = answer.diff;
  const changed = diff.ledgerChanges.length;
  const against = diff.fromSnapshot
    ? `Against \`${diff.fromSnapshot}\`: ${formatTokens(diff.totalTokensBefore)} → ${formatTokens(diff.totalTokensAfter)} tokens, ` +
      `${diff.messagesBefore} → ${diff.messagesAfter} messages, the first ${diff.prefixUnits} units (${formatTokens(diff.prefixTokens)} tokens) unchanged` +
      `${diff.sectionsChanged.length ? `, system sections changed: ${diff.sectionsChanged.join(", ")}` : ""}, ${changed} ledger item${changed === 1 ? "" : "s"} changed visibility.`
    : "The session's first snapshot.";
  return `**Snapshot** \`${answer.snapshotId}\` — ${answer.dashboard.summary}\n\n${against}`;
}
