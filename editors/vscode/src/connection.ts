// The extension's one sidecar: started from the settings through the host library, restarted on
// demand, stopped cleanly. It wires the server's requests (tool/execute, approval/request) to the
// extension's handlers and remembers which session each run belongs to.
import * as vscode from "vscode";

import { SidecarHost, type ApprovalRequestParams, type ApprovalRequestResult, type RunEvent, type ToolExecuteParams, type ToolExecuteResult } from "./host";
import { describe, type Logger } from "./logger";
import type { Settings } from "./settings";

export type ConnectionState = "stopped" | "starting" | "running";

export interface ConnectionHandlers {
  onRunEvent(event: RunEvent): void;
  onToolExecute(params: ToolExecuteParams, signal: AbortSignal): Promise<ToolExecuteResult>;
  /** `signal` aborts when the sidecar withdraws the request (run cancelled, tool timeout). */
  onApproval(params: ApprovalRequestParams, signal: AbortSignal): Promise<ApprovalRequestResult>;
  onStateChanged(state: ConnectionState): void;
}

export class SidecarConnection implements vscode.Disposable {
  private host: SidecarHost | undefined;
  private starting: Promise<SidecarHost> | undefined;
  private readonly runSessions = new Map<string, string>();

  constructor(
    private config: Settings,
    private readonly logger: Logger,
    private readonly handlers: ConnectionHandlers,
  ) {}

  get settings(): Settings {
    return this.config;
  }

  updateSettings(settings: Settings): void {
    this.config = settings;
  }

  get current(): SidecarHost | undefined {
    return this.host?.running ? this.host : undefined;
  }

  /** The running sidecar, started if needed. */
  ensure(): Promise<SidecarHost> {
    const running = this.current;
    if (running) return Promise.resolve(running);
    this.starting ??= this.start().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /** The session a run belongs to: seen in its events, else asked with `run/get`. */
  async sessionOf(runId: string): Promise<string> {
    const known = this.runSessions.get(runId);
    if (known !== undefined) return known;
    const run = await (await this.ensure()).request("run/get", { runId });
    this.runSessions.set(runId, run.sessionId);
    return run.sessionId;
  }

  private async start(): Promise<SidecarHost> {
    const { command, store } = this.config;
    this.handlers.onStateChanged("starting");
    this.logger.info(`starting ${command.join(" ")}${store ? ` --store ${store}` : ""}`);
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    try {
      const host = await SidecarHost.start({
        command,
        ...(store ? { store } : {}),
        ...(cwd !== undefined ? { cwd } : {}),
        clientName: "context-sidecar-vscode",
        onStderrLine: (line) => this.logger.debug(`sidecar: ${line}`),
        ...(this.logger.enabled("trace") ? { onTrace: (line: string) => this.logger.trace(line) } : {}),
      });
      host.onRunEvent((event) => {
        this.runSessions.set(event.runId, event.sessionId);
        this.handlers.onRunEvent(event);
      });
      host.onRunLagged((lagged) => this.logger.debug(`run ${lagged.runId} lagged; catching up from ${lagged.lastSentSeq}`));
      host.onToolExecute((params, signal) => this.handlers.onToolExecute(params, signal));
      host.onApproval((params, signal) => this.handlers.onApproval(params, signal));
      void host.exited.then((info) => {
        this.logger.info(`sidecar exited (code ${info.code}, signal ${info.signal})`);
        if (this.host === host) {
          this.host = undefined;
          this.handlers.onStateChanged("stopped");
        }
      });
      this.host = host;
      const caps = host.capabilities;
      this.logger.info(`sidecar ${caps.serverVersion} (protocol ${caps.protocolVersion}), store ${caps.storePath}`);
      this.handlers.onStateChanged("running");
      return host;
    } catch (err) {
      this.logger.error("could not start the sidecar", err);
      this.handlers.onStateChanged("stopped");
      throw err;
    }
  }

  async stop(): Promise<void> {
    const host = this.host;
    this.host = undefined;
    this.runSessions.clear();
    if (!host) return;
    try {
      const info = await host.close();
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
