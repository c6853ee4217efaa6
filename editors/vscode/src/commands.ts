// The `contextSidecar.*` commands. Each one is a few requests to the sidecar and a UI update.
import * as vscode from "vscode";

import type { SidecarConnection } from "./connection";
import type { DashboardPanel } from "./dashboard";
import { approvalLine, describeArguments, recoverPickItem, resultLines } from "./format";
import {
  assemblyDiff,
  recoverableItems,
  type CacheAccounting,
  type ContextAssembleParams,
  type ContextAssembleResult,
  type Dashboard,
  type LedgerItem,
  type RunEvent,
  type RunStartParams,
  type SidecarHost,
} from "./host";
import { describe, type Logger } from "./logger";
import type { ContextStatusBar } from "./statusBar";
import { runStartParams } from "./runParams";
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
  /** The last context/assemble: its params (a recover assembles again with them) and answer. */
  assembly: { params: ContextAssembleParams; result: ContextAssembleResult } | undefined;
  /** The ledger the dashboard shows (of an assembly or a run's snapshot): what *Recover* offers. */
  shown: { sessionId: string; ledger: LedgerItem[]; from: "assembly" | "snapshot" } | undefined;
  /** The dashboard of the run's last assembly, until its cache prediction arrives (model.completed). */
  runDashboard: Dashboard | undefined;
  /** sessionId -> the last snapshot a run assembled in it; snapshotId -> the one before it. A
   *  run's snapshots are not in the session's snapshot index (only snapshot/assemble's are), so
   *  snapshot/diff is told what to compare with. */
  lastSnapshot: Map<string, string>;
  diffBase: Map<string, string>;
}

export interface Commands {
  disposables: vscode.Disposable[];
  /** Fed every run/event. */
  onRunEvent(event: RunEvent): void;
  /** What *Run Prompt* does after asking for the prompt; `extra` adds run/start params (a script). */
  startRun(prompt: string, extra?: Partial<RunStartParams>): Promise<string>;
  /** The current session, created if there is none. */
  session(): Promise<string>;
}

export function registerCommands(deps: CommandDeps): Commands {
  const { connection, logger, statusBar, dashboard, runOutput } = deps;
  const state: State = {
    sessionId: undefined,
    runId: undefined,
    snapshotId: undefined,
    assembly: undefined,
    shown: undefined,
    runDashboard: undefined,
    lastSnapshot: new Map(),
    diffBase: new Map(),
  };

  /** snapshot/diff of `snapshotId` against the snapshot before it (known or the session's index). */
  function diffOf(client: SidecarHost, snapshotId: string) {
    const from = state.diffBase.get(snapshotId);
    return client.request("snapshot/diff", { to: snapshotId, ...(from !== undefined ? { from } : {}) });
  }

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
    const { runId } = await client.request("run/start", { ...runStartParams(connection.settings, sessionId, prompt, workspaceRoots()), ...extra });
    state.runId = runId;
    logger.info(`run ${runId} started`);
    return runId;
  }

  /** context/assemble, then the status bar and the dashboard: usage, cache prediction, diff. */
  async function assemble(client: SidecarHost, params: ContextAssembleParams): Promise<ContextAssembleResult> {
    const result = await client.request("context/assemble", params);
    const previous = state.assembly?.params.sessionId === params.sessionId ? state.assembly.result : undefined;
    state.assembly = { params, result };
    state.shown = { sessionId: params.sessionId, ledger: result.ledger, from: "assembly" };
    statusBar.showUsage(result.dashboard, result.cache ?? null);
    dashboard.setSnapshot({ ...result, sessionId: params.sessionId });
    dashboard.setCache(result.cache ?? null);
    dashboard.setDiff(previous ? assemblyDiff(previous, result) : null);
    logger.info(result.dashboard.summary);
    return result;
  }

  /** session/recover of a masked or dropped item of the ledger shown (`itemId`: else ask with a
   *  quick pick); after an assembly, assemble the same turn again to show it back. */
  async function recover(itemId?: string): Promise<void> {
    const shown = state.shown;
    if (!shown) {
      void vscode.window.showInformationMessage("Context Sidecar: nothing to recover yet (assemble or run first)");
      return;
    }
    let target = itemId;
    if (target === undefined) {
      const items = recoverableItems(shown.ledger).map(recoverPickItem);
      if (items.length === 0) {
        void vscode.window.showInformationMessage("Context Sidecar: nothing is masked or dropped");
        return;
      }
      const picked = await vscode.window.showQuickPick(items, {
        title: "Context Sidecar: recover a masked or dropped item",
        placeHolder: "shown in full again from the next assembly",
        matchOnDescription: true,
        matchOnDetail: true,
      });
      if (!picked) return;
      target = picked.itemId;
    }
    const client = await connection.ensure();
    await client.request("session/recover", { sessionId: shown.sessionId, target: { kind: "item", itemId: target } });
    logger.info(`session/recover ${target}`);
    if (shown.from === "assembly" && state.assembly?.params.sessionId === shown.sessionId) {
      await assemble(client, state.assembly.params);
    } else {
      void vscode.window.showInformationMessage(`Context Sidecar: ${target} is shown in full from the next turn`);
    }
  }

  const commands: Record<string, () => Promise<void>> = {
    "contextSidecar.start": async () => {
      await connection.ensure();
    },
    "contextSidecar.stop": async () => {
      await connection.stop();
      state.sessionId = undefined;
      state.runId = undefined;
      state.assembly = undefined;
      state.shown = undefined;
      state.lastSnapshot.clear();
      state.diffBase.clear();
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
      const { assembly } = connection.settings;
      await assemble(client, {
        sessionId,
        userTurn: [{ type: "text", text: selection ? `About this selection of ${relPath}.` : `About ${relPath}.` }],
        tools: TOOLS,
        ...(doc.uri.scheme === "file" ? { mentionedPaths: [relPath] } : {}),
        ...(selection
          ? { sources: [{ id: "editor.selection", title: `${relPath} (selection)`, text: selection, priority: 10 }] }
          : {}),
        ...(cwd !== undefined ? { cwd } : {}),
        ...(hasKeys(assembly) ? { profile: assembly } : {}),
      });
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
      state.shown = { sessionId: snapshot.sessionId, ledger: snapshot.ledger, from: "snapshot" };
      dashboard.setSnapshot(snapshot);
      dashboard.setCache(null);
      dashboard.setDiff(await diffOf(client, snapshotId));
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
    "contextSidecar.recover": () => recover(),
  };
  dashboard.onRecover((itemId) => void guarded("contextSidecar.recover", () => recover(itemId))());

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
          const client = connection.current;
          const before = state.lastSnapshot.get(event.sessionId);
          if (before !== undefined && before !== snapshotId) state.diffBase.set(snapshotId, before);
          state.lastSnapshot.set(event.sessionId, snapshotId);
          state.snapshotId = snapshotId;
          dashboard.setCache(null); // this round's prediction comes with model.completed
          const current = (): boolean => state.snapshotId === snapshotId; // a later round's wins
          client
            ?.request("snapshot/get", { snapshotId })
            .then((snapshot) => {
              if (!current()) return undefined;
              state.shown = { sessionId: event.sessionId, ledger: snapshot.ledger, from: "snapshot" };
              dashboard.setSnapshot(snapshot);
              return diffOf(client, snapshotId);
            })
            .then((diff) => {
              if (diff && current()) dashboard.setDiff(diff);
            })
            .catch((err: unknown) => logger.warn(`snapshot ${snapshotId}: ${describe(err)}`));
        }
        const d = p["dashboard"];
        if (d && typeof d === "object") {
          state.runDashboard = d as Dashboard;
          statusBar.showUsage(state.runDashboard);
        }
        break;
      }
      case "model.completed": {
        const predicted = p["predictedCache"];
        if (p["agent"] !== undefined || !predicted || typeof predicted !== "object") break;
        dashboard.setCache(predicted as CacheAccounting);
        if (state.runDashboard) statusBar.showUsage(state.runDashboard, predicted as CacheAccounting);
        break;
      }
      case "tool.callRequested":
        runOutput.appendLine(
          p["builtin"] === true
            ? `\n[${typeof p["title"] === "string" ? p["title"] : String(p["name"])}]`
            : `\n[tool ${String(p["name"] ?? "?")} ${describeArguments(asRecord(p["arguments"]), 200)}]`,
        );
        break;
      case "tool.approval":
        runOutput.appendLine(`[${approvalLine(p)}]`);
        break;
      case "tool.resultStored":
        if (Array.isArray(p["content"])) runOutput.appendLine(resultLines(p, 12));
        else if (p["isError"] === true) runOutput.appendLine(`[tool call ${String(p["callId"])} failed or was not approved]`);
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
    session: async () => ensureSession(await connection.ensure()),
  };
}

function hasKeys(value: object): boolean {
  return Object.keys(value).length > 0;
}
