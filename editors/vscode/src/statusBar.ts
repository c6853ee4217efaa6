// The status bar item: the context usage of the last assembly (`ctx 12.3k/167k`), or, while a
// run waits on the user's approval, the tool it waits for (`$(shield) approve read_file?`).
import * as vscode from "vscode";

import { approvalWaiting, contextUsage } from "./format";
import type { ApprovalRequestParams, Dashboard } from "./host";

export class ContextStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  /** What the item shows when no approval is waiting. */
  private base = { text: "", tooltip: "" };
  private pending: readonly ApprovalRequestParams[] = [];

  constructor() {
    this.item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
    this.item.command = "contextSidecar.showDashboard";
    this.setState("stopped");
    this.item.show();
  }

  setState(state: "stopped" | "starting" | "running"): void {
    this.base = { text: state === "running" ? "ctx –" : `ctx (${state})`, tooltip: `Context Sidecar: ${state}` };
    this.render();
  }

  showUsage(dashboard: Dashboard): void {
    this.base = { text: contextUsage(dashboard), tooltip: dashboard.summary };
    this.render();
  }

  /** The approval requests waiting on the user (empty: back to the usage). */
  showApprovals(pending: readonly ApprovalRequestParams[]): void {
    this.pending = pending;
    this.render();
  }

  private render(): void {
    const waiting = approvalWaiting(this.pending);
    this.item.text = waiting ? `$(shield) ${waiting}` : this.base.text;
    this.item.tooltip = waiting
      ? this.pending.map((p) => `run ${p.runId} waits for your approval of ${p.name}`).join("\n")
      : this.base.tooltip;
  }

  dispose(): void {
    this.item.dispose();
  }
}
