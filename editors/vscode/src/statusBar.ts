// The status bar item: the context usage of the last assembly and its cache prediction
// (`ctx 12.3k/167k · 98% cached · $0.0042`; the tooltip adds masking and the history window), or,
// while a run waits on the user's approval, the tool it waits for (`$(shield) approve read_file?`).
import * as vscode from "vscode";

import { approvalWaiting, contextUsage, usageTooltip } from "./format";
import type { ApprovalRequestParams, CacheAccounting, Dashboard } from "./host";

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

  /** `cache`: the assembly's prediction; `undefined` when not known yet (a run's, until model.completed). */
  showUsage(dashboard: Dashboard, cache?: CacheAccounting | null): void {
    this.base = { text: contextUsage(dashboard, cache), tooltip: usageTooltip(dashboard, cache) };
    this.render();
  }

  /** What the item shows when no approval is waiting (the tests read it). */
  get usage(): { text: string; tooltip: string } {
    return this.base;
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
