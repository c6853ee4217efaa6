// Pure formatting helpers (no `vscode` import, tested in node).
import type { Dashboard } from "./host";

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

/** The status bar text after an assembly: `ctx 12.3k/167k`. */
export function contextUsage(dashboard: Dashboard): string {
  return `ctx ${formatTokens(dashboard.used)}/${formatTokens(dashboard.availableInput)}`;
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
