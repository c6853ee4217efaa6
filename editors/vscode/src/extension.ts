// Entry point: wires settings, logger, the sidecar connection, approvals, the status bar, the
// dashboard and the commands. No logic of its own. `activate` returns the extension's API (for
// other extensions, and for the tests, which drive the bundled extension against the real sidecar).
import * as vscode from "vscode";

import { Approvals, askWithQuickPick } from "./approvals";
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
}

let connection: SidecarConnection | undefined;

export function activate(context: vscode.ExtensionContext): ContextSidecarApi {
  const settings = readSettings();
  const logger = new Logger("Context Sidecar", settings.logLevel);
  const runOutput = vscode.window.createOutputChannel("Context Sidecar Run");
  const statusBar = new ContextStatusBar();
  const dashboard = new DashboardPanel(context.extensionUri);

  let forward: (event: RunEvent) => void = () => undefined;
  const approvals: Approvals = new Approvals({
    ask: askWithQuickPick,
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
  const commands = registerCommands({ connection: current, logger, statusBar, dashboard, runOutput });
  forward = commands.onRunEvent;

  context.subscriptions.push(
    logger,
    runOutput,
    statusBar,
    dashboard,
    current,
    ...commands.disposables,
    onSettingsChanged((next) => {
      logger.setLevel(next.logLevel);
      current.updateSettings(next);
      logger.info("settings changed; they apply from the next start");
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
  };
}

export async function deactivate(): Promise<void> {
  await connection?.stop();
  connection = undefined;
}
