// The status bar item showing the context usage of the last assembly (`ctx 12.3k/167k`).
import * as vscode from "vscode";

import { contextUsage } from "./format";
import type { Dashboard } from "./sidecarClient";

export class ContextStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;

  constructor() {
    this.item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
    this.item.command = "contextSidecar.showDashboard";
    this.setState("stopped");
    this.item.show();
  }

  setState(state: "stopped" | "starting" | "running"): void {
    this.item.text = state === "running" ? "ctx –" : `ctx (${state})`;
    this.item.tooltip = `Context Sidecar: ${state}`;
  }

  showUsage(dashboard: Dashboard): void {
    this.item.text = contextUsage(dashboard);
    this.item.tooltip = dashboard.summary;
  }

  dispose(): void {
    this.item.dispose();
  }
}
