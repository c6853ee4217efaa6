// The extension's one sidecar: started from the settings, restarted on demand, stopped cleanly.
import * as vscode from "vscode";

import { describe, type Logger } from "./logger";
import type { Settings } from "./settings";
import { SidecarClient, type RunEvent, type ToolExecuteParams, type ToolExecuteResult } from "./sidecarClient";

export interface ClientHandlers {
  onRunEvent(event: RunEvent): void;
  onToolExecute(params: ToolExecuteParams, signal: AbortSignal): Promise<ToolExecuteResult>;
  onStateChanged(state: "stopped" | "starting" | "running"): void;
}

export class SidecarConnection implements vscode.Disposable {
  private client: SidecarClient | undefined;
  private starting: Promise<SidecarClient> | undefined;

  constructor(
    private settings: Settings,
    private readonly logger: Logger,
    private readonly handlers: ClientHandlers,
  ) {}

  updateSettings(settings: Settings): void {
    this.settings = settings;
  }

  get current(): SidecarClient | undefined {
    return this.client?.running ? this.client : undefined;
  }

  /** The running sidecar, started if needed. */
  ensure(): Promise<SidecarClient> {
    const running = this.current;
    if (running) return Promise.resolve(running);
    this.starting ??= this.start().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async start(): Promise<SidecarClient> {
    const { command, store } = this.settings;
    this.handlers.onStateChanged("starting");
    this.logger.info(`starting ${command.join(" ")}${store ? ` --store ${store}` : ""}`);
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    try {
      const client = await SidecarClient.start({
        command,
        ...(store ? { store } : {}),
        ...(cwd !== undefined ? { cwd } : {}),
        onStderr: (line) => this.logger.debug(`sidecar: ${line}`),
        ...(this.logger.enabled("trace") ? { onTrace: (line: string) => this.logger.trace(line) } : {}),
      });
      client.onRunEvent((e) => this.handlers.onRunEvent(e));
      client.onToolExecute((params, signal) => this.handlers.onToolExecute(params, signal));
      void client.exited.then((info) => {
        this.logger.info(`sidecar exited (code ${info.code}, signal ${info.signal})`);
        if (this.client === client) {
          this.client = undefined;
          this.handlers.onStateChanged("stopped");
        }
      });
      this.client = client;
      const caps = client.capabilities;
      this.logger.info(`sidecar ${caps.serverVersion} (protocol ${caps.protocolVersion}), store ${caps.storePath}`);
      this.handlers.onStateChanged("running");
      return client;
    } catch (err) {
      this.logger.error("could not start the sidecar", err);
      this.handlers.onStateChanged("stopped");
      throw err;
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    try {
      const info = await client.close();
      this.logger.info(`sidecar stopped (code ${info.code})`);
    } catch (err) {
      this.logger.error("stopping the sidecar failed", describe(err));
    }
    this.handlers.onStateChanged("stopped");
  }

  dispose(): void {
    void this.stop();
  }
}
