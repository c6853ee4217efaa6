// What an assembly explains, read the same way by every TypeScript front end: which ledger items
// `session/recover` can bring back, and how two `context/assemble` answers of a session differ
// (`snapshot/diff` does this for stored snapshots; a context/assemble answer has no snapshot id).
import type { ContextAssembleResult, LedgerChange, LedgerItem } from "./types.js";

/** Visibilities `session/recover` undoes: a masked tool result is shown in full, a drop undone. */
export const RECOVERABLE_VISIBILITIES: ReadonlySet<LedgerItem["visibility"]> = new Set(["masked", "dropped"]);

/** The ledger items a recover brings back (masked first, then dropped; oldest first). */
export function recoverableItems(ledger: readonly LedgerItem[]): LedgerItem[] {
  const rank = (item: LedgerItem): number => (item.visibility === "masked" ? 0 : 1);
  return ledger
    .filter((item) => RECOVERABLE_VISIBILITIES.has(item.visibility))
    .sort((a, b) => rank(a) - rank(b) || (a.fromSeq ?? -1) - (b.fromSeq ?? -1));
}

/** Ledger items whose visibility changed between two assemblies (`before`: null when new). */
export function ledgerChanges(before: readonly LedgerItem[], after: readonly LedgerItem[]): LedgerChange[] {
  const old = new Map(before.map((item) => [item.itemId, item]));
  const changes: LedgerChange[] = [];
  for (const item of after) {
    const prev = old.get(item.itemId);
    old.delete(item.itemId);
    if (prev?.visibility === item.visibility) continue;
    changes.push(change(item, prev?.visibility ?? null, item.visibility));
  }
  for (const prev of old.values()) changes.push(change(prev, prev.visibility, null));
  return changes;
}

function change(item: LedgerItem, before: string | null, after: string | null): LedgerChange {
  return { itemId: item.itemId, kind: item.kind, locator: item.locator ?? null, before, after };
}

/** How a context/assemble answer differs from the session's previous one: SnapshotDiff's sizes and
 *  ledger changes, with `fromSnapshot: null` (no stored snapshot; the cache's `firstChange` says
 *  where the prompt first differs). */
export interface AssemblyDiff {
  fromSnapshot: null;
  ledgerChanges: LedgerChange[];
  messagesBefore: number;
  messagesAfter: number;
  totalTokensBefore: number;
  totalTokensAfter: number;
}

type Assembly = Pick<ContextAssembleResult, "ledger" | "messages" | "dashboard">;

export function assemblyDiff(before: Assembly, after: Assembly): AssemblyDiff {
  return {
    fromSnapshot: null,
    ledgerChanges: ledgerChanges(before.ledger, after.ledger),
    messagesBefore: before.messages.length,
    messagesAfter: after.messages.length,
    totalTokensBefore: before.dashboard.used,
    totalTokensAfter: after.dashboard.used,
  };
}
