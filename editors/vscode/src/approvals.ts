// Answers the sidecar's `approval/request` (a run wants to call a tool listed in its
// `approvalRequired`): allow once, allow the tool for the rest of the session, or deny. Asking
// is a function, so tests drive the handler with their own answers; the extension asks with a
// quick pick that the sidecar's `$/cancelRequest` (run cancelled, tool timeout) takes down.
import * as vscode from "vscode";

import { describeArguments } from "./format";
import { approvalSummary, type ApprovalRequestParams, type ApprovalRequestResult } from "./host";

export type ApprovalChoice = "once" | "session" | "deny";

/** Asks the user about one tool call; `undefined` when dismissed. `signal` aborts when the
 *  sidecar withdraws the request: the question should go away then. */
export type AskApproval = (request: ApprovalRequestParams, signal: AbortSignal) => Promise<ApprovalChoice | undefined>;

export interface ApprovalsOptions {
  ask: AskApproval;
  /** The session a run belongs to ("allow for this session" is remembered per session). */
  sessionOf(runId: string): Promise<string>;
  /** Called whenever the requests waiting on the user change (the status bar shows them). */
  onPendingChanged?(pending: readonly ApprovalRequestParams[]): void;
}

export const REASONS = {
  session: "allowed for this session",
  denied: "denied by the user",
  dismissed: "dismissed without an answer",
  withdrawn: "withdrawn by the sidecar",
} as const;

export class Approvals {
  /** sessionId -> tool names allowed for the rest of that session. */
  private readonly allowed = new Map<string, Set<string>>();
  private readonly waiting: ApprovalRequestParams[] = [];

  constructor(private readonly opts: ApprovalsOptions) {}

  /** The requests waiting on the user, oldest first. */
  get pending(): readonly ApprovalRequestParams[] {
    return this.waiting;
  }

  /** The `approval/request` handler. */
  async handle(request: ApprovalRequestParams, signal: AbortSignal): Promise<ApprovalRequestResult> {
    const sessionId = await this.opts.sessionOf(request.runId).catch(() => undefined);
    if (sessionId !== undefined && this.allowed.get(sessionId)?.has(request.name)) {
      return { approved: true, reason: REASONS.session };
    }
    this.waiting.push(request);
    this.changed();
    try {
      const choice = await Promise.race([this.opts.ask(request, signal), whenAborted(signal)]);
      if (signal.aborted) return { approved: false, reason: REASONS.withdrawn }; // no one reads it
      switch (choice) {
        case "session":
          if (sessionId !== undefined) this.allowed.set(sessionId, (this.allowed.get(sessionId) ?? new Set()).add(request.name));
          return { approved: true, reason: REASONS.session };
        case "once":
          return { approved: true };
        case "deny":
          return { approved: false, reason: REASONS.denied };
        default:
          return { approved: false, reason: REASONS.dismissed };
      }
    } finally {
      this.waiting.splice(this.waiting.indexOf(request), 1);
      this.changed();
    }
  }

  /** Whether `tool` is allowed for the rest of `sessionId`. */
  allowedForSession(sessionId: string, tool: string): boolean {
    return this.allowed.get(sessionId)?.has(tool) ?? false;
  }

  /** Forget every "allow for this session" (the sidecar was stopped). */
  forget(): void {
    this.allowed.clear();
  }

  private changed(): void {
    this.opts.onPendingChanged?.([...this.waiting]);
  }
}

function whenAborted(signal: AbortSignal): Promise<undefined> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(undefined);
    else signal.addEventListener("abort", () => resolve(undefined), { once: true });
  });
}

interface ChoiceItem extends vscode.QuickPickItem {
  choice: ApprovalChoice;
}

/** The extension's way to ask: a quick pick naming the tool and its arguments, taken down
 *  (cancellation token) when the sidecar withdraws the request. */
export const askWithQuickPick: AskApproval = async (request, signal) => {
  const source = new vscode.CancellationTokenSource();
  const onAbort = (): void => source.cancel();
  if (signal.aborted) source.cancel();
  else signal.addEventListener("abort", onAbort, { once: true });
  const args = request.builtin ? builtinDetail(request) : describeArguments(request.arguments, 400);
  const items: ChoiceItem[] = [
    { label: "Allow once", description: `this call of ${request.name}`, detail: args, choice: "once" },
    { label: "Allow for this session", description: `every ${request.name} call in this session`, choice: "session" },
    { label: "Deny", description: "the model is told it was not approved", choice: "deny" },
  ];
  try {
    const picked = await vscode.window.showQuickPick(
      items,
      {
        title: request.builtin
          ? `Context Sidecar: ${approvalSummary(request)}?`
          : `Context Sidecar: the run wants to call ${request.name}`,
        placeHolder: request.builtin ? args : `${request.name} ${describeArguments(request.arguments, 120)}`,
        ignoreFocusOut: true,
      },
      source.token,
    );
    return picked?.choice;
  } finally {
    signal.removeEventListener("abort", onAbort);
    source.dispose();
  }
};

/** What a built-in write or command would do, in a line: the lines it adds and removes, or the
 *  command and where it runs. */
export function builtinDetail(request: ApprovalRequestParams): string {
  if (request.command !== undefined && request.command !== null) return `$ ${request.command}  (in ${request.cwd ?? "."})`;
  const change = request.change;
  if (!change) return describeArguments(request.arguments, 400);
  if (change.omitted) return `${change.path}: too large to show`;
  const linesOf = (text: string | null | undefined): string[] => (text ? text.replace(/\n$/, "").split("\n") : []);
  const before = linesOf(change.oldText);
  const after = linesOf(change.newText);
  const removed = before.filter((line) => !after.includes(line)).length;
  const added = after.filter((line) => !before.includes(line)).length;
  return `${change.created ? "new file " : ""}${change.path}: +${added} -${removed} lines`;
}
