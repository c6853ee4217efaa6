// A proposed write or edit (a built-in call's approval/request with its `change`) in VS Code's
// diff editor: the file before on the left, after on the right, both virtual documents of the
// `context-sidecar-proposed` scheme; the editor title's Accept / Reject buttons
// (contextSidecar.acceptEdit / rejectEdit) answer the approval: accept lets the sidecar write,
// reject denies it. Closed without an answer, the card in the chat still waits.
import * as vscode from "vscode";

import type { ApprovalRequestParams } from "../host";
import type { ApprovalChoice } from "./protocol";

export const PROPOSED_SCHEME = "context-sidecar-proposed";

interface Proposal {
  before: string;
  after: string;
  path: string;
  created: boolean;
  answer(choice: ApprovalChoice): void;
}

export class EditReview implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly proposals = new Map<string, Proposal>();
  private readonly disposables: vscode.Disposable[];

  constructor() {
    this.disposables = [
      vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, this),
      vscode.commands.registerCommand("contextSidecar.acceptEdit", (uri?: vscode.Uri) => this.answerFrom(uri, "once")),
      vscode.commands.registerCommand("contextSidecar.rejectEdit", (uri?: vscode.Uri) => this.answerFrom(uri, "deny")),
      vscode.commands.registerCommand("contextSidecar.reviewEdit", (callId: string) => this.show(callId)),
    ];
  }

  /** The diff of `request`'s change; resolves with the button pressed ("once" accept, "deny"
   *  reject), or undefined when `signal` aborts first (answered in the chat, or withdrawn). */
  open(request: ApprovalRequestParams, signal: AbortSignal): Promise<ApprovalChoice | undefined> {
    const change = request.change;
    if (!change || change.omitted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const done = (choice: ApprovalChoice | undefined): void => {
        if (!this.proposals.has(request.callId)) return;
        this.proposals.delete(request.callId);
        void this.close(request.callId);
        resolve(choice);
      };
      this.proposals.set(request.callId, {
        before: change.oldText ?? "",
        after: change.newText ?? "",
        path: change.path,
        created: change.created === true,
        answer: done,
      });
      signal.addEventListener("abort", () => done(undefined), { once: true });
      void this.show(request.callId);
    });
  }

  /** The calls whose diff waits for an answer. */
  get pending(): string[] {
    return [...this.proposals.keys()];
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const [callId, side] = uri.path.split("/").filter(Boolean);
    const proposal = callId === undefined ? undefined : this.proposals.get(callId);
    if (!proposal) return "";
    return side === "before" ? proposal.before : proposal.after;
  }

  async show(callId: string): Promise<void> {
    const p = this.proposals.get(callId);
    if (!p) return;
    const name = p.path.split("/").pop() ?? p.path;
    const side = (which: string) => vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: `/${callId}/${which}/${p.path}` });
    await vscode.commands.executeCommand(
      "vscode.diff",
      side("before"),
      side("after"),
      `${name}: ${p.created ? "new file" : "proposed edit"} (Accept / Reject)`,
      { preview: false },
    );
  }

  /** Answer from the title buttons: the diff's uri names the call; else the only one open. */
  answerFrom(uri: vscode.Uri | undefined, choice: ApprovalChoice): boolean {
    const callId = uri?.scheme === PROPOSED_SCHEME ? uri.path.split("/").filter(Boolean)[0] : this.pending.length === 1 ? this.pending[0] : undefined;
    const proposal = callId === undefined ? undefined : this.proposals.get(callId);
    proposal?.answer(choice);
    return proposal !== undefined;
  }

  /** Close the diff tabs of `callId`. */
  async close(callId: string): Promise<void> {
    const groups = vscode.window.tabGroups;
    if (!groups) return;
    const tabs = groups.all
      .flatMap((g) => g.tabs)
      .filter((tab) => {
        const input = tab.input as { modified?: vscode.Uri } | undefined;
        return input?.modified?.scheme === PROPOSED_SCHEME && input.modified.path.startsWith(`/${callId}/`);
      });
    if (tabs.length > 0) await groups.close(tabs);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
