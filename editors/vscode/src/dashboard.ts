// The context dashboard webview: editors/dashboard/dashboard.html (copied to media/ at build),
// fed with `{type: "snapshot" | "cache" | "diff" | "events", data}` messages. What it shows is
// kept here (`model`) and replayed when the panel opens; the page asks for a recover with
// `{type: "recover", itemId}` (its buttons on masked and dropped items).
import * as vscode from "vscode";

import type { AssemblyDiff, CacheAccounting, RunEvent, SnapshotDiff } from "./host";

const CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:;";

/** What the dashboard shows: the last assembly or snapshot, its cache prediction (`undefined`:
 *  not sent), its diff against the previous turn, the current run's events. */
export interface DashboardModel {
  snapshot: unknown;
  cache: CacheAccounting | null | undefined;
  diff: SnapshotDiff | AssemblyDiff | null | undefined;
  events: RunEvent[];
}

export class DashboardPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private readonly state: DashboardModel = { snapshot: undefined, cache: undefined, diff: undefined, events: [] };
  private recoverHandler: ((itemId: string) => void) | undefined;

  constructor(private readonly extensionUri: vscode.Uri) {}

  get model(): Readonly<DashboardModel> {
    return this.state;
  }

  /** Called with the ledger id when the page's *recover* button is pressed. */
  onRecover(handler: (itemId: string) => void): void {
    this.recoverHandler = handler;
  }

  /** Open (or reveal) the panel and replay what it shows into it. */
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
    panel.webview.onDidReceiveMessage((message: unknown) => {
      const m = message as { type?: unknown; itemId?: unknown } | null;
      if (m?.type === "recover" && typeof m.itemId === "string") this.recoverHandler?.(m.itemId);
    });
    const file = vscode.Uri.joinPath(this.extensionUri, "media", "dashboard.html");
    const html = new TextDecoder().decode(await vscode.workspace.fs.readFile(file));
    panel.webview.html = withCsp(html);
    const { snapshot, cache, diff, events } = this.state;
    if (snapshot !== undefined) this.post("snapshot", snapshot);
    if (cache !== undefined) this.post("cache", cache);
    if (diff !== undefined) this.post("diff", diff);
    if (events.length > 0) this.post("events", events);
  }

  setSnapshot(snapshot: unknown): void {
    this.state.snapshot = snapshot;
    this.post("snapshot", snapshot);
  }

  /** The cache prediction of the turn shown (`null`: none yet). */
  setCache(cache: CacheAccounting | null): void {
    this.state.cache = cache;
    this.post("cache", cache);
  }

  /** The diff against the previous turn (`null`: no previous one). */
  setDiff(diff: SnapshotDiff | AssemblyDiff | null): void {
    this.state.diff = diff;
    this.post("diff", diff);
  }

  /** Replace the event list (a new run starts). */
  resetEvents(): void {
    this.state.events = [];
  }

  addEvent(event: RunEvent): void {
    this.state.events.push(event);
    this.post("events", this.state.events);
  }

  private post(type: "snapshot" | "cache" | "diff" | "events", data: unknown): void {
    void this.panel?.webview.postMessage({ type, data });
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
