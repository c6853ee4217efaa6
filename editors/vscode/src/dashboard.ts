// The context dashboard webview: editors/dashboard/dashboard.html (copied to media/ at build),
// fed with `{type: "snapshot" | "events", data}` messages.
import * as vscode from "vscode";

import type { RunEvent } from "./host";

const CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:;";

export class DashboardPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private snapshot: unknown;
  private events: RunEvent[] = [];

  constructor(private readonly extensionUri: vscode.Uri) {}

  /** Open (or reveal) the panel and replay the last snapshot and events into it. */
  async show(): Promise<void> {
    if (this.panel) {
      this.panel.reveal(undefined, true);
      return;
    }
    const panel = vscode.window.createWebviewPanel("contextSidecar.dashboard", "Context Dashboard", vscode.ViewColumn.Beside, {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [],
    });
    this.panel = panel;
    panel.onDidDispose(() => {
      if (this.panel === panel) this.panel = undefined;
    });
    const file = vscode.Uri.joinPath(this.extensionUri, "media", "dashboard.html");
    const html = new TextDecoder().decode(await vscode.workspace.fs.readFile(file));
    panel.webview.html = withCsp(html);
    if (this.snapshot !== undefined) void panel.webview.postMessage({ type: "snapshot", data: this.snapshot });
    if (this.events.length > 0) void panel.webview.postMessage({ type: "events", data: this.events });
  }

  setSnapshot(snapshot: unknown): void {
    this.snapshot = snapshot;
    void this.panel?.webview.postMessage({ type: "snapshot", data: snapshot });
  }

  /** Replace the event list (a new run starts). */
  resetEvents(): void {
    this.events = [];
  }

  addEvent(event: RunEvent): void {
    this.events.push(event);
    void this.panel?.webview.postMessage({ type: "events", data: this.events });
  }

  dispose(): void {
    this.panel?.dispose();
  }
}

/** Replace the page's Content-Security-Policy with ours (inline script and style only). */
export function withCsp(html: string): string {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${CSP}">`;
  const stripped = html.replace(/<meta[^>]+http-equiv=["']Content-Security-Policy["'][^>]*>/gi, "");
  return /<head[^>]*>/i.test(stripped) ? stripped.replace(/<head[^>]*>/i, (head) => `${head}\n${meta}`) : meta + stripped;
}
