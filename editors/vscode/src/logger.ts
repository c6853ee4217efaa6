// Logging to the "Context Sidecar" output channel, filtered by `contextSidecar.logLevel`.
import * as vscode from "vscode";

import { LOG_LEVELS, type LogLevel } from "./settings";

export class Logger implements vscode.Disposable {
  private readonly channel: vscode.OutputChannel;
  private rank: number;

  constructor(name: string, level: LogLevel) {
    this.channel = vscode.window.createOutputChannel(name);
    this.rank = LOG_LEVELS.indexOf(level);
  }

  setLevel(level: LogLevel): void {
    this.rank = LOG_LEVELS.indexOf(level);
  }

  /** Whether messages of `level` are written (e.g. `trace` enables the JSON-RPC trace). */
  enabled(level: LogLevel): boolean {
    return LOG_LEVELS.indexOf(level) <= this.rank;
  }

  error(message: string, err?: unknown): void {
    this.write("error", err === undefined ? message : `${message}: ${describe(err)}`);
  }
  warn(message: string): void {
    this.write("warn", message);
  }
  info(message: string): void {
    this.write("info", message);
  }
  debug(message: string): void {
    this.write("debug", message);
  }
  trace(message: string): void {
    this.write("trace", message);
  }

  show(): void {
    this.channel.show(true);
  }

  dispose(): void {
    this.channel.dispose();
  }

  private write(level: LogLevel, message: string): void {
    if (!this.enabled(level)) return;
    this.channel.appendLine(`${new Date().toISOString()} [${level}] ${message}`);
  }
}

export function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
