// The extension's settings (`contextSidecar.*`), read fresh from the workspace configuration.
import * as vscode from "vscode";

import type { PromptProfile } from "./host";

export const SECTION = "contextSidecar";

export const LOG_LEVELS = ["error", "warn", "info", "debug", "trace"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Settings {
  /** argv that starts the sidecar. */
  command: string[];
  /** `--store DIR`; empty for the sidecar's default. */
  store: string;
  logLevel: LogLevel;
  /** Tools whose every call in a run waits for the user's approval (`approvalRequired`). */
  approvalRequired: string[];
  /** The sidecar's built-in workspace tools: "off", or the approval mode they run in. */
  builtinTools: BuiltinToolsSetting;
  /** How to assemble (model, historyWindow, masking, ...): `profile` of context/assemble, the
   *  `assembly` of run/start's profile; `{}` for the sidecar's defaults. */
  assembly: PromptProfile;
  /** A stored profile's id (`profile/list`): the model runs use; "" for the sidecar's default. */
  profile: string;
}

export const BUILTIN_TOOLS_SETTINGS = ["off", "ask", "accept_edits", "auto", "plan", "read_only", "allow_all"] as const;
export type BuiltinToolsSetting = (typeof BUILTIN_TOOLS_SETTINGS)[number];

const DEFAULT_COMMAND = ["context-sidecar", "serve"];
const DEFAULT_APPROVAL_REQUIRED = ["read_file"];

function stringList(value: unknown, fallback: string[]): string[] {
  return Array.isArray(value) && value.every((a) => typeof a === "string") ? (value as string[]) : fallback;
}

function plainObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

export function readSettings(): Settings {
  const config = vscode.workspace.getConfiguration(SECTION);
  const command = stringList(config.get<unknown>("command"), DEFAULT_COMMAND);
  const level = config.get<string>("logLevel", "info");
  const builtin = config.get<string>("builtinTools", "ask");
  return {
    command: command.length > 0 ? command : DEFAULT_COMMAND,
    store: config.get<string>("store", "").trim(),
    logLevel: (LOG_LEVELS as readonly string[]).includes(level) ? (level as LogLevel) : "info",
    approvalRequired: stringList(config.get<unknown>("approvalRequired"), DEFAULT_APPROVAL_REQUIRED),
    builtinTools: (BUILTIN_TOOLS_SETTINGS as readonly string[]).includes(builtin) ? (builtin as BuiltinToolsSetting) : "ask",
    assembly: plainObject(config.get<unknown>("assembly")) as PromptProfile,
    profile: config.get<string>("profile", "").trim(),
  };
}

/** Calls `handler` with the new settings whenever a `contextSidecar.*` setting changes. */
export function onSettingsChanged(handler: (settings: Settings) => void): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration(SECTION)) handler(readSettings());
  });
}

/** Write a `contextSidecar.*` setting where the user would: the workspace when a folder is
 *  open, else the user settings (the chat view's header changes them). */
export async function writeSetting(key: "profile" | "builtinTools", value: string): Promise<void> {
  const target = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  await vscode.workspace.getConfiguration(SECTION).update(key, value, target);
}
