// Entry point: wires settings, logger, the sidecar connection, the status bar, the dashboard
// and the commands. No logic of its own.
import * as vscode from "vscode";

import { SidecarConnection } from "./client";
import { registerCommands } from "./commands";
import { DashboardPanel } from "./dashboard";
import { Logger } from "./logger";
import { onSettingsChanged, readSettings } from "./settings";
import type { RunEvent } from "./sidecarClient";
import { ContextStatusBar } from "./statusBar";
import { executeTool } from "./tools";

let connection: SidecarConnection | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const settings = readSettings();
  const logger = new Logger("Context Sidecar", settings.logLevel);
  const runOutput = vscode.window.createOutputChannel("Context Sidecar Run");
  const statusBar = new ContextStatusBar();
  const dashboard = new DashboardPanel(context.extensionUri);

  let forward: (event: RunEvent) => void = () => undefined;
  connection = new SidecarConnection(settings, logger, {
    onRunEvent: (event) => forward(event),
    onToolExecute: executeTool,
    onStateChanged: (state) => statusBar.setState(state),
  });
  const commands = registerCommands({ connection, logger, statusBar, dashboard, runOutput });
  forward = commands.onRunEvent;

  const current = connection;
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
}

export async function deactivate(): Promise<void> {
  await connection?.stop();
  connection = undefined;
}
