// The model's todo list as a chat item: one checklist per turn, replaced by each `update_plan`
// call (live from `plan.updated`, read back from the history's tool calls). Pure (no `vscode`).
import type { PlanEntry } from "../host";
import type { PlanItem, PlanStep } from "./protocol";

export const PLAN_TOOL = "update_plan";

const STATUSES: readonly PlanStep["status"][] = ["pending", "in_progress", "completed"];

/** The steps of a `plan.updated` event. */
export function planSteps(entries: readonly PlanEntry[]): PlanStep[] {
  return entries.map((e) => ({ content: e.content, status: e.status, priority: e.priority ?? "medium" }));
}

/** The steps of an `update_plan` call as the history holds it (the sidecar validated it when it
 * ran; a malformed call, answered with an error, shows nothing). */
export function stepsOfArguments(args: Record<string, unknown>): PlanStep[] | undefined {
  const entries = args["entries"];
  if (!Array.isArray(entries)) return undefined;
  const steps: PlanStep[] = [];
  for (const e of entries as unknown[]) {
    if (e === null || typeof e !== "object") return undefined;
    const { content, status, priority } = e as Record<string, unknown>;
    if (typeof content !== "string" || !STATUSES.includes(status as PlanStep["status"])) return undefined;
    const p = priority === "high" || priority === "low" ? priority : "medium";
    steps.push({ content, status: status as PlanStep["status"], priority: p });
  }
  return steps;
}

export function planItem(id: string, steps: PlanStep[]): PlanItem {
  return { kind: "plan", id, steps };
}
