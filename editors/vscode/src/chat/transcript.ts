// A session's history (`session/read` entries) as the chat shows it: user turns, answers with
// their thinking, each tool call a card with its result (an `update_plan` call is the turn's
// todo list instead: one checklist, the last call's), compactions as notices. Pure.
import type { Entry } from "../host";
import { newCard, partsText, withResult } from "./cards";
import { PLAN_TOOL, planItem, stepsOfArguments } from "./plan";
import type { ChatItem, ToolCard } from "./protocol";

export function transcriptItems(entries: readonly Entry[]): ChatItem[] {
  const items: ChatItem[] = [];
  const cards = new Map<string, number>(); // callId -> index in items
  let plan: number | undefined; // the index of this turn's todo list
  for (const entry of entries) {
    if (entry.kind === "compaction") {
      items.push({ kind: "notice", id: entry.id, level: "info", text: `Compacted history through seq ${entry.throughSeq}.` });
      continue;
    }
    if (entry.kind !== "message" || entry.role === "system") continue;
    let text = "";
    let thinking = "";
    for (const part of entry.content) {
      if (part.type === "text") text += part.text;
      else if (part.type === "reasoning") thinking += part.text;
      else if (part.type === "toolResult") {
        const at = cards.get(part.callId);
        const card = at === undefined ? undefined : (items[at] as ToolCard | undefined);
        if (card?.kind === "tool" && at !== undefined) items[at] = withResult(card, partsText(part.content), part.isError === true);
      }
    }
    if (entry.role === "user") {
      if (text) {
        items.push({ kind: "user", id: entry.id, text, seq: entry.seq });
        plan = undefined; // a new turn, a new list
      }
      continue;
    }
    if (text || thinking) items.push({ kind: "assistant", id: entry.id, text, thinking, streaming: false });
    for (const part of entry.content) {
      if (part.type !== "toolCall") continue;
      const steps = part.name === PLAN_TOOL ? stepsOfArguments(part.arguments) : undefined;
      if (steps) {
        const item = planItem(plan === undefined ? `plan:${part.callId}` : items[plan]!.id, steps);
        if (plan === undefined) {
          plan = items.length;
          items.push(item);
        } else items[plan] = item;
        continue;
      }
      cards.set(part.callId, items.length);
      items.push({ ...newCard(part.callId, part.name, part.arguments), status: "done" });
    }
  }
  return items;
}
