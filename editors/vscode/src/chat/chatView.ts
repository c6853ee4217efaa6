// The chat as a webview view in the activity bar's Context Sidecar container: its page, and
// the messages between it and the ChatController (checked with isFromWebview on the way in).
import * as vscode from "vscode";

import { describe, type Logger } from "../logger";
import { chatHtml, newNonce } from "./chatHtml";
import { isFromWebview, type FromWebview, type ToWebview } from "./protocol";

export const CHAT_VIEW_ID = "contextSidecar.chat";

export class ChatView implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private handler: ((message: FromWebview) => Promise<void>) | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly logger: Logger,
  ) {}

  /** Where the webview's messages go (the controller). */
  onMessage(handler: (message: FromWebview) => Promise<void>): void {
    this.handler = handler;
  }

  get resolved(): boolean {
    return this.view !== undefined;
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    const uri = (base: vscode.Uri, ...p: string[]): string => view.webview.asWebviewUri(vscode.Uri.joinPath(base, ...p)).toString();
    view.webview.html = chatHtml(
      { cspSource: view.webview.cspSource, script: uri(dist, "webview.js"), style: uri(media, "chat.css") },
      newNonce(),
    );
    this.disposables.push(
      view.webview.onDidReceiveMessage((message: unknown) => {
        if (!isFromWebview(message)) {
          this.logger.warn(`chat: ignored a message from the webview: ${JSON.stringify(message)?.slice(0, 200)}`);
          return;
        }
        void this.handler?.(message).catch((err: unknown) => {
          this.logger.error(`chat: ${message.type} failed`, err);
          void vscode.window.showErrorMessage(`Context Sidecar: ${message.type} failed: ${describe(err)}`);
        });
      }),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
      }),
    );
  }

  post(message: ToWebview): void {
    void this.view?.webview.postMessage(message);
  }

  /** Show the view (the activity bar container opens). */
  async reveal(): Promise<void> {
    if (this.view) this.view.show(true);
    else await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
