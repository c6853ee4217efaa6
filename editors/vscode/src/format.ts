// Pure formatting helpers (no `vscode` import, tested in node).
import type { CacheAccounting, Dashboard, KeepEverythingCall, LedgerItem, MaskingState, WindowState } from "./host";

/** 950 -> "950", 12_345 -> "12.3k", 167_000 -> "167k", 1_250_000 -> "1.25M". */
export function formatTokens(n: number): string {
  if (!Number.isFinite(n)) return "?";
  const abs = Math.abs(n);
  if (abs < 1_000) return String(Math.round(n));
  if (abs < 100_000) return `${trim((n / 1_000).toFixed(1))}k`;
  if (abs < 1_000_000) return `${Math.round(n / 1_000)}k`;
  return `${trim((n / 1_000_000).toFixed(2))}M`;
}

function trim(s: string): string {
  return s.includes(".") ? s.replace(/\.?0+$/, "") : s;
}

/** The status bar text after an assembly: `ctx 12.3k/167k`, and with a cache prediction
 *  `ctx 12.3k/167k · 98% cached · $0.0042` (the share of input read from the cache, the turn's cost). */
export function contextUsage(dashboard: Dashboard, cache?: CacheAccounting | null): string {
  const usage = `ctx ${formatTokens(dashboard.used)}/${formatTokens(dashboard.availableInput)}`;
  if (!cache) return usage;
  const cost = cache.cost ? ` · ${formatCost(cache.cost.total)}` : "";
  return `${usage} · ${cachedShare(cache)}% cached${cost}`;
}

/** Percent of the request's input predicted to be read from the cache, rounded down (99.6 -> 99). */
export function cachedShare(cache: CacheAccounting): number {
  return cache.inputTokens > 0 ? Math.floor((cache.readTokens / cache.inputTokens) * 100) : 0;
}

/** US dollars: four decimals under a dollar (`$0.0042`), two above (`$1.25`). */
export function formatCost(usd: number): string {
  return `$${usd.toFixed(usd >= 1 ? 2 : 4)}`;
}

/** The cache prediction in one line, then where it first differs from the previous request. */
export function cacheLines(cache: CacheAccounting | null | undefined): string[] {
  if (!cache) return ["cache: no prediction"];
  const n = (x: number): string => x.toLocaleString("en-US");
  const cost = cache.cost
    ? `${formatCost(cache.cost.total)} (${formatCost(cache.cost.input)} input + ${formatCost(cache.cost.cacheWrite)} write + ${formatCost(cache.cost.cacheRead)} read; prices of ${cache.cost.pricesAsOf})`
    : "cost unknown (model not in the price table)";
  const lines = [
    `cache: read ${n(cache.readTokens)} · write ${n(cache.writeTokens)} · uncached ${n(cache.uncachedTokens)} of ${n(cache.inputTokens)} tokens · ${cost}`,
  ];
  if (!cache.againstPrevious) lines.push("first request of the session: nothing to read yet");
  else lines.push(cache.firstChange ? `first change: ${cache.firstChange}` : "first change: none (the previous request is repeated)");
  return lines;
}

/** What observation masking does now. */
export function maskingLine(masking: MaskingState | null | undefined): string {
  if (!masking) return "masking: off";
  const n = (x: number): string => x.toLocaleString("en-US");
  return (
    `masking: ${n(masking.maskedResults)} tool results masked (${n(masking.maskedTokens)} tokens); newest ` +
    `${n(masking.protectTokens)} kept; next move after ${n(masking.nextMoveIn)} tokens of tool output`
  );
}

/** Where the history window starts and when it moves. */
export function windowLine(window: WindowState | null | undefined): string {
  if (!window) return "window: –";
  const n = (x: number): string => x.toLocaleString("en-US");
  const start = window.startSeq == null ? "whole history" : `starts at seq ${window.startSeq}`;
  return `window: ${start}; moves after ${n(window.roomLeft)} ${window.unit} (by ${n(window.quantum)}, ${window.boundBy})`;
}

/** The status bar tooltip: the summary, the cache prediction, masking, the window. */
export function usageTooltip(dashboard: Dashboard, cache?: CacheAccounting | null): string {
  return [dashboard.summary, ...(cache === undefined ? [] : cacheLines(cache)), maskingLine(dashboard.masking), windowLine(dashboard.historyWindow)].join("\n");
}

/** A quick pick item for a ledger item `session/recover` brings back. */
export function recoverPickItem(item: LedgerItem): { label: string; description: string; detail: string; itemId: string } {
  const where =
    item.locator ??
    (item.fromSeq != null ? `seq ${item.fromSeq}${item.throughSeq != null && item.throughSeq !== item.fromSeq ? `–${item.throughSeq}` : ""}` : item.itemId);
  return {
    label: `${item.visibility === "masked" ? "$(eye-closed)" : "$(circle-slash)"} ${where}`,
    description: `${item.visibility} ${item.kind} · ${formatTokens(item.tokens)} tokens · ${item.itemId}`,
    detail: item.reason,
    itemId: item.itemId,
  };
}

/** A tool call's arguments on one line, cut to `max` characters: `{"path":"Makefile"}`. */
export function describeArguments(args: Record<string, unknown>, max: number): string {
  const text = JSON.stringify(args) ?? "{}";
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

/** What waits on the user: "" when nothing, `approve read_file?`, `approve read_file? (+2)`. */
export function approvalWaiting(pending: readonly { name: string }[]): string {
  const [first] = pending;
  if (first === undefined) return "";
  return `approve ${first.name}?${pending.length > 1 ? ` (+${pending.length - 1})` : ""}`;
}

/** A built-in call's approval decision, for the run output: `edit_file: asked (ask mode), approved`. */
export function approvalLine(p: Record<string, unknown>): string {
  const verdict = p["verdict"] === "allow" ? "allowed" : p["verdict"] === "refuse" ? "refused" : "asked";
  const outcome = p["verdict"] === "ask" ? (p["approved"] === true ? ", approved" : ", not approved") : "";
  const reason = typeof p["reason"] === "string" && p["verdict"] !== "refuse" ? `: ${p["reason"]}` : "";
  return `${String(p["name"])}: ${verdict} (${String(p["mode"])} mode)${outcome}${reason}`;
}

/** A built-in call's result for the run output: its first `maxLines` lines, then how many
 *  more (the model got them all, within the sidecar's bound). */
export function resultLines(p: Record<string, unknown>, maxLines: number): string {
  const parts = Array.isArray(p["content"]) ? (p["content"] as Record<string, unknown>[]) : [];
  const lines = parts.map((part) => (typeof part["text"] === "string" ? part["text"] : "")).join("").split("\n");
  const shown = lines.slice(0, maxLines).map((line) => `  ${line}`);
  if (lines.length > maxLines) shown.push(`  … ${lines.length - maxLines} more lines`);
  const exit = typeof p["exitCode"] === "number" ? ` (exit code ${p["exitCode"]})` : "";
  return (p["isError"] === true ? "  [failed]\n" : "") + shown.join("\n") + exit;
}

/** What a turn (a run) used, summed over its model calls. */
export interface TurnUsage {
  /** All input tokens the provider reported (cache reads included). */
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  /** The cache prediction's input tokens and reads, for providers that report no usage. */
  predictedInputTokens: number;
  predictedReadTokens: number;
  /** The predicted input cost of the turn's requests; `null` when the model is not priced. */
  cost: number | null;
  /** The turn's calls beside keep-everything-then-compact (`keepEverything` on each
   *  `model.completed`), both priced alike; `null` when no call carried it. */
  keepEverything?: KeepEverythingSum | null;
}

/** Calls compared with keep-everything-then-compact, summed: the turn's, and the session's so
 *  far (the last call's `session`). Costs in USD, output included, priced alike. */
export interface KeepEverythingSum {
  calls: number;
  cost: number;
  ownCost: number;
  sessionCalls: number;
  sessionCost: number;
  sessionOwnCost: number;
}

/** Adds one call's `keepEverything` to the turn's sum (a new sum when `sum` is null). */
export function addKeepEverything(sum: KeepEverythingSum | null | undefined, call: KeepEverythingCall): KeepEverythingSum {
  return {
    calls: (sum?.calls ?? 0) + 1,
    cost: (sum?.cost ?? 0) + call.cost,
    ownCost: (sum?.ownCost ?? 0) + call.ownCost,
    sessionCalls: call.session.calls,
    sessionCost: call.session.cost,
    sessionOwnCost: call.session.ownCost,
  };
}

/** `−31%`: how much more (`+`) or less (`−`) `own` cost than `keep`, rounded. */
export function changeAgainst(own: number, keep: number): string {
  const change = keep > 0 ? Math.round((own / keep - 1) * 100) : 0;
  return change < 0 ? `\u2212${-change}%` : change > 0 ? `+${change}%` : "\u00b10%";
}

/** `keep-everything $0.0061 vs $0.0050 (−18%; session −22%)`: what the turn's calls would have
 *  cost under keep-everything-then-compact, what they cost priced the same way, the change;
 *  the session's change too once it has calls before this turn. */
export function keepEverythingLine(k: KeepEverythingSum): string {
  const session = k.sessionCalls > k.calls ? `; session ${changeAgainst(k.sessionOwnCost, k.sessionCost)}` : "";
  return `keep-everything ${formatCost(k.cost)} vs ${formatCost(k.ownCost)} (${changeAgainst(k.ownCost, k.cost)}${session})`;
}

/** The line under a turn: `12.3k in · 340 out · 92% cache read · $0.0042`, then the comparison
 *  with keep-everything when the calls carried it (`keepEverythingLine`). The share is the
 *  provider's own figure when it reported usage, else the prediction's (`predicted`). */
export function turnUsageLine(u: TurnUsage): string {
  const reported = u.inputTokens > 0;
  const input = reported ? u.inputTokens : u.predictedInputTokens;
  const read = reported ? u.cacheReadTokens : u.predictedReadTokens;
  const share = input > 0 ? Math.floor((read / input) * 100) : 0;
  const cost = u.cost === null ? "cost unknown" : formatCost(u.cost);
  const keep = u.keepEverything ? ` · ${keepEverythingLine(u.keepEverything)}` : "";
  return `${formatTokens(input)} in · ${formatTokens(u.outputTokens)} out · ${share}% cache read${reported ? "" : " (predicted)"} · ${cost}${keep}`;
}
