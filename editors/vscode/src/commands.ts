// The `contextSidecar.*` commands. Each one is a few requests to the sidecar and a UI update.
import * as vscode from "vscode";

import type { SidecarConnection } from "./connection";
import type { DashboardPanel } from "./dashboard";
import { describeArguments } from "./format";
import type { RunEvent, RunStartParams, SidecarHost } from "./host";
import { describe, type Logger } from "./logger";
import type { ContextStatusBar } from "./statusBar";
import { TOOLS } from "./tools";

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

export interface CommandDeps {
  connection: SidecarConnection;
  logger: Logger;
  statusBar: ContextStatusBar;
  dashboard: DashboardPanel;
  /** Streamed run output. */
  runOutput: vscode.OutputChannel;
}

/** What the commands remember between invocations. */
interface State {
  sessionId: string | undefined;
  runId: string | undefined;
  snapshotId: string | undefined;
}

export interface Commands {
  disposables: vscode.Disposable[];
  /** Fed every run/event. */
  onRunEvent(event: RunEvent): void;
  /** What *Run Prompt* does after asking for the prompt; `extra` adds run/start params (a script). */
  startRun(prompt: string, extra?: Partial<RunStartParams>): Promise<string>;
}

export function registerCommands(deps: CommandDeps): Commands {
  const { connection, logger, statusBar, dashboard, runOutput } = deps;
  const state: State = { sessionId: undefined, runId: undefined, snapshotId: undefined };

  const workspaceRoots = (): string[] => (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);

  async function ensureSession(client: SidecarHost): Promise<string> {
    if (state.sessionId) return state.sessionId;
    const session = await client.request("session/create", { title: "VS Code", workspaceRoots: workspaceRoots() });
    state.sessionId = session.sessionId;
    logger.info(`session ${session.sessionId} created`);
    return session.sessionId;
  }

  /** Run `body`, reporting any failure in the log and a notification. */
  const guarded =
    (name: string, body: () => Promise<void>) =>
    async (): Promise<void> => {
      try {
        await body();
      } catch (err) {
        logger.error(`${name} failed`, err);
        void vscode.window.showErrorMessage(`Context Sidecar: ${name} failed: ${describe(err)}`);
      }
    };

  async function startRun(prompt: string, extra: Partial<RunStartParams> = {}): Promise<string> {
    const client = await connection.ensure();
    const sessionId = await ensureSession(client);
    dashboard.resetEvents();
    runOutput.show(true);
    runOutput.appendLine(`> ${prompt}`);
    const { runId } = await client.request("run/start", {
      sessionId,
      userTurn: [{ type: "text", text: prompt }],
      tools: TOOLS,
      approvalRequired: connection.settings.approvalRequired,
      ...extra,
    });
    state.runId = runId;
    logger.info(`run ${runId} started`);
    return runId;
  }

  const commands: Record<string, () => Promise<void>> = {
    "contextSidecar.start": async () => {
      await connection.ensure();
    },
    "contextSidecar.stop": async () => {
      await connection.stop();
      state.sessionId = undefined;
      state.runId = undefined;
    },
    "contextSidecar.newSession": async () => {
      const title = await vscode.window.showInputBox({ prompt: "Session title", value: "VS Code" });
      if (title === undefined) return;
      const client = await connection.ensure();
      const session = await client.request("session/create", { title, workspaceRoots: workspaceRoots() });
      state.sessionId = session.sessionId;
      logger.info(`session ${session.sessionId} created`);
      void vscode.window.showInformationMessage(`Context Sidecar: session ${session.title} (${session.sessionId})`);
    },
    "contextSidecar.assemble": async () => {
      const editor = vscode.window.activeTextEditor;
      if (!editor) {
        void vscode.window.showWarningMessage("Context Sidecar: no active editor");
        return;
      }
      const client = await connection.ensure();
      const sessionId = await ensureSession(client);
      const doc = editor.document;
      const relPath = vscode.workspace.asRelativePath(doc.uri, false);
      const selection = editor.selection.isEmpty ? undefined : doc.getText(editor.selection);
      const cwd = workspaceRoots()[0];
      const result = await client.request("context/assemble", {
        sessionId,
        userTurn: [{ type: "text", text: selection ? `About this selection of ${relPath}.` : `About ${relPath}.` }],
        tools: TOOLS,
        ...(doc.uri.scheme === "file" ? { mentionedPaths: [relPath] } : {}),
        ...(selection
          ? { sources: [{ id: "editor.selection", title: `${relPath} (selection)`, text: selection, priority: 10 }] }
          : {}),
        ...(cwd !== undefined ? { cwd } : {}),
      });
      statusBar.showUsage(result.dashboard);
      dashboard.setSnapshot({ ...result, sessionId });
      logger.info(result.dashboard.summary);
    },
    "contextSidecar.run": async () => {
      const prompt = await vscode.window.showInputBox({ prompt: "Ask the model (Context Sidecar run)" });
      if (prompt) await startRun(prompt);
    },
    "contextSidecar.showDashboard": async () => {
      await dashboard.show();
    },
    "contextSidecar.showSnapshot": async () => {
      const snapshotId = await vscode.window.showInputBox({
        prompt: "Snapshot id",
        value: state.snapshotId ?? "",
      });
      if (!snapshotId) return;
      const client = await connection.ensure();
      const snapshot = await client.request("snapshot/get", { snapshotId });
      dashboard.setSnapshot(snapshot);
      await dashboard.show();
      const doc = await vscode.workspace.openTextDocument({ language: "json", content: JSON.stringify(snapshot, null, 2) });
      await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Active });
    },
    "contextSidecar.cancelRun": async () => {
      const client = connection.current;
      if (!client || !state.runId) {
        void vscode.window.showInformationMessage("Context Sidecar: no run in progress");
        return;
      }
      const run = await client.request("run/cancel", { runId: state.runId });
      logger.info(`run ${run.runId} cancel requested (${run.status})`);
    },
  };

  /** Fed every run/event by the extension: stream text, track snapshots, update the dashboard. */
  function onRunEvent(event: RunEvent): void {
    dashboard.addEvent(event);
    const p = event.payload;
    switch (event.type) {
      case "model.delta":
        if (typeof p["text"] === "string") runOutput.append(p["text"]);
        break;
      case "context.assembled": {
        if (typeof p["snapshotId"] === "string") {
          const snapshotId = p["snapshotId"];
          state.snapshotId = snapshotId;
          connection.current
            ?.request("snapshot/get", { snapshotId })
            .then((snapshot) => dashboard.setSnapshot(snapshot))
            .catch((err: unknown) => logger.warn(`snapshot/get ${snapshotId}: ${describe(err)}`));
        }
        const d = p["dashboard"];
        if (d && typeof d === "object") statusBar.showUsage(d as Parameters<ContextStatusBar["showUsage"]>[0]);
        break;
      }
      case "tool.callRequested":
        runOutput.appendLine(`\n[tool ${String(p["name"] ?? "?")} ${describeArguments(asRecord(p["arguments"]), 200)}]`);
        break;
      case "tool.resultStored":
        if (p["isError"] === true) runOutput.appendLine(`[tool call ${String(p["callId"])} failed or was not approved]`);
        break;
      case "run.completed":
        if (p["agent"] !== undefined) break;
        runOutput.appendLine(`\n[run ${String(p["status"])}${p["error"] ? `: ${JSON.stringify(p["error"])}` : ""}]`);
        if (state.runId === event.runId) state.runId = undefined;
        break;
      default:
        logger.debug(`run/event ${event.type} #${event.seq}`);
    }
  }

  return {
    disposables: Object.entries(commands).map(([id, body]) => vscode.commands.registerCommand(id, guarded(id, body))),
    onRunEvent,
    startRun,
  };
}
