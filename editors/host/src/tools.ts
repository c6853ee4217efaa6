// The sidecar's built-in workspace tools as a host sees them: typed views of the tool events
// (`tool.callRequested`, `tool.approval`, `tool.resultStored`, and `plan.updated`: the model's
// todo list, from its `update_plan` calls) and a one-line summary of
// an `approval/request` for a prompt. Run events carry untyped payloads on the wire (one
// `run/event` notification for every kind); these narrow them by `type`, nothing more.
import type {
  ApprovalRequestParams,
  BuiltinCallRequested,
  PlanUpdated,
  RunEvent,
  ToolApproval,
  ToolResultStored,
} from "./types.js";

/** `tool.callRequested` of any call (a built-in one has `builtin: true`). */
export function toolCall(event: RunEvent): BuiltinCallRequested | undefined {
  return event.type === "tool.callRequested" ? (event.payload as unknown as BuiltinCallRequested) : undefined;
}

/** `tool.approval`: how the approval mode decided a built-in call. */
export function toolApproval(event: RunEvent): ToolApproval | undefined {
  return event.type === "tool.approval" ? (event.payload as unknown as ToolApproval) : undefined;
}

/** `tool.resultStored`; for a built-in call it carries the content, locations and change. */
export function toolResult(event: RunEvent): ToolResultStored | undefined {
  return event.type === "tool.resultStored" ? (event.payload as unknown as ToolResultStored) : undefined;
}

/** `plan.updated`: the model's whole todo list (it replaces the one before), from `update_plan`. */
export function planUpdated(event: RunEvent): PlanUpdated | undefined {
  return event.type === "plan.updated" ? (event.payload as unknown as PlanUpdated) : undefined;
}

/** What an approval prompt says in one line: "Edit calc/add.py", "Run `pytest -q` in .". */
export function approvalSummary(params: ApprovalRequestParams): string {
  if (params.command !== undefined) return `Run \`${params.command}\`` + (params.cwd ? ` in ${params.cwd}` : "");
  if (params.change) return `${params.change.created ? "Create" : params.name === "edit_file" ? "Edit" : "Write"} ${params.change.path}`;
  return `Call ${params.name}`;
}
