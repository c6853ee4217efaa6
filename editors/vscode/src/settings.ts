// The extension's settings (`contextSidecar.*`), read fresh from the workspace configuration.
import * as vscode from "vscode";

export const SECTION = "contextSidecar";

export const LOG_LEVELS = ["error", "warn", "info", "debug", "trace"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Settings {
  /** argv that starts the sidecar. */
  command: string[];
  /** `--store DIR`; empty for the sidecar's default. */
  store: string;
  logLevel: LogLevel;
}

const DEFAULT_COMMAND = ["context-sidecar", "serve"];

export function readSettings(): Settings {
  const config = vscode.workspace.getConfiguration(SECTION);
  const command = config.get<unknown>("command");
  const level = config.get<string>("logLevel", "info");
  return {
    command:
      Array.isArray(command) && command.length > 0 && command.every((a) => typeof a === "string")
        ? (command as string[])
        : DEFAULT_COMMAND,
    store: config.get<string>("store", "").trim(),
    logLevel: (LOG_LEVELS as readonly string[]).includes(level) ? (level as LogLevel) : "info",
  };
}

/** Calls `handler` with the new settings whenever a `contextSidecar.*` setting changes. */
export function onSettingsChanged(handler: (settings: Settings) => void): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration(SECTION)) handler(readSettings());
  });
}
