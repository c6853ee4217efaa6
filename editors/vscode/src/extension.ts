// Entry point: wires settings, logger, the sidecar connection, approvals, the status bar, the
// dashboard, the chat view (its controller, the diff editor of proposed edits and of a rewind)
// and the commands.
// No logic of its own. `activate` returns the extension's API (for other extensions, and for the
// tests, which drive the bundled extension against the real sidecar).
import * as vscode from "vscode";

import { Approvals, askWithQuickPick } from "./approvals";
import { ChatController } from "./chat/chatController";
import { CHAT_VIEW_ID, ChatView } from "./chat/chatView";
import { EditReview } from "./chat/editReview";
import { RewindReview } from "./chat/rewind";
import { scriptFor } from "./chat/scriptHook";
import { registerCommands } from "./commands";
import { SidecarConnection } from "./connection";
import { DashboardPanel, type DashboardModel } from "./dashboard";
import type { RunEvent, RunStartParams, SidecarHost } from "./host";
import { Logger } from "./logger";
import { onSettingsChanged, readSettings } from "./settings";
import { ContextStatusBar } from "./statusBar";
import { executeTool } from "./tools";

export interface ContextSidecarApi {
  /** The running sidecar (started if needed): the host library's client. */
  host(): Promise<SidecarHost>;
  /** Start a run in the current session as *Run Prompt* does; `extra` adds run/start params. */
  startRun(prompt: string, extra?: Partial<RunStartParams>): Promise<string>;
  /** The `approval/request` handler and what waits on the user. */
  readonly approvals: Approvals;
  /** The current session (created if there is none): what *Assemble* and *Run Prompt* use. */
  session(): Promise<string>;
  /** What the dashboard webview shows: the last assembly or snapshot, its cache prediction, its diff. */
  readonly dashboard: Readonly<DashboardModel>;
  /** The chat view's state and actions (what its webview sends goes through `chat.handle`). */
  readonly chat: ChatController;
  /** The diff editor of proposed writes and edits. */
  readonly edits: EditReview;
}

let connection: SidecarConnection | undefined;

export function activate(context: vscode.ExtensionContext): ContextSidecarApi {
  const settings = readSettings();
  const logger = new Logger("Context Sidecar", settings.logLevel);
  const runOutput = vscode.window.createOutputChannel("Context Sidecar Run");
  const statusBar = new ContextStatusBar();
  const dashboard = new DashboardPanel(context.extensionUri);

  let forward: (event: RunEvent) => void = () => undefined;
  const chatView = new ChatView(context.extensionUri, logger);
  const edits = new EditReview();
  const rewinds = new RewindReview(() => current.ensure());
  // Runs started in the chat ask in their tool cards (and a write or an edit in the diff
  // editor); the others (*Run Prompt*) with a quick pick.
  const approvals: Approvals = new Approvals({
    ask: (request, signal) => (chat.owns(request.runId) ? chat.ask(request, signal) : askWithQuickPick(request, signal)),
    sessionOf: (runId: string): Promise<string> => current.sessionOf(runId),
    onPendingChanged: (pending) => statusBar.showApprovals(pending),
  });
  const current: SidecarConnection = new SidecarConnection(settings, logger, {
    onRunEvent: (event) => forward(event),
    onToolExecute: executeTool,
    onApproval: (params, signal) => approvals.handle(params, signal),
    onStateChanged: (state) => {
      statusBar.setState(state);
      if (state === "stopped") approvals.forget();
    },
  });
  connection = current;
  const chat: ChatController = new ChatController({
    connection: current,
    logger,
    memento: context.workspaceState ?? memoryMemento(),
    post: (message) => chatView.post(message),
    reviewEdit: (request, signal) => edits.open(request, signal),
    closeReview: (callId) => void edits.close(callId),
    scriptFor: (prompt) => scriptFor(prompt),
    rewind: (host, sessionId, seq, text) => rewinds.rewind(host, sessionId, seq, text),
  });
  chatView.onMessage((message) => chat.handle(message));
  const commands = registerCommands({ connection: current, logger, statusBar, dashboard, runOutput });
  forward = (event) => {
    commands.onRunEvent(event);
    chat.onRunEvent(event);
  };

  context.subscriptions.push(
    logger,
    runOutput,
    statusBar,
    dashboard,
    current,
    ...commands.disposables,
    chatView,
    edits,
    rewinds,
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, chatView, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.commands.registerCommand("contextSidecar.openChat", () => chatView.reveal()),
    onSettingsChanged((next) => {
      logger.setLevel(next.logLevel);
      current.updateSettings(next);
      logger.info("settings changed; the model and the approval mode apply from the next run, the rest from the next start");
      if (current.current && chatView.resolved) void chat.refresh().catch(() => undefined);
    }),
  );
  return {
    host: () => current.ensure(),
    startRun: commands.startRun,
    approvals,
    session: commands.session,
    get dashboard() {
      return dashboard.model;
    },
    chat,
    edits,
  };
}

/** A memento for hosts that give none (an activation outside VS Code: the .vsix check). */
function memoryMemento(): vscode.Memento {
  const values = new Map<string, unknown>();
  return {
    keys: () => [...values.keys()],
    get: <T>(key: string, dflt?: T) => (values.has(key) ? (values.get(key) as T) : dflt),
    update: async (key: string, value: unknown) => void values.set(key, value),
  } as vscode.Memento;
}

export async function deactivate(): Promise<void> {
  await connection?.stop();
  connection = undefined;
}
