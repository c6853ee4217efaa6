// A stand-in for the `vscode` module, installed on import (before anything requires "vscode"):
// what the extension touches, recorded for the tests. Shared by the test files (esbuild inlines
// it into each bundle; it is no test file of its own).
import fs from "node:fs";
import Module from "node:module";
import os from "node:os";
import path from "node:path";

/** The repository root: the nearest ancestor holding pyproject.toml and sidecar/. */
function findRepoRoot(): string {
  let dir = __dirname;
  for (;;) {
    if (fs.existsSync(path.join(dir, "pyproject.toml")) && fs.existsSync(path.join(dir, "sidecar"))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`repository root not found above ${__dirname}`);
    dir = parent;
  }
}

export const REPO = findRepoRoot();
export const PYTHON = process.env["SIDECAR_PYTHON"] ?? path.join(REPO, ".venv", "bin", "python");
// The sidecar of this checkout, whatever `SIDECAR_PYTHON` has installed (children inherit it).
process.env["PYTHONPATH"] = [REPO, process.env["PYTHONPATH"]].filter(Boolean).join(path.delimiter);
export const TMP = fs.mkdtempSync(path.join(os.tmpdir(), "sidecar-vscode-test-"));

export interface QuickPickCall {
  items: { label: string; detail?: string; description?: string; choice?: string; itemId?: string }[];
  options: { title?: string; placeHolder?: string };
  token: StubToken;
  /** The status bar text while the pick was shown. */
  statusText: string;
}

class StubToken {
  isCancellationRequested = false;
  private readonly listeners: (() => void)[] = [];
  onCancellationRequested(listener: () => void): { dispose(): void } {
    this.listeners.push(listener);
    return { dispose: () => undefined };
  }
  fire(): void {
    if (this.isCancellationRequested) return;
    this.isCancellationRequested = true;
    for (const l of this.listeners) l();
  }
}
export type { StubToken };

const disposable = { dispose() {} };
const uriFile = (p: string) => ({ fsPath: p, path: p, scheme: "file", toString: () => `file://${p}` });
const uriFrom = (parts: { scheme: string; path: string }) => ({ ...parts, fsPath: parts.path, toString: () => `${parts.scheme}:${parts.path}` });
export type StubUri = ReturnType<typeof uriFrom>;

/** A webview (panel or view): its html, what was posted to it, and a way to send it a message. */
export interface StubWebview {
  html: string;
  options: unknown;
  cspSource: string;
  posted: { type: string; [key: string]: unknown }[];
  send(message: unknown): void;
}

function createWebview(): StubWebview & Record<string, unknown> {
  const listeners: ((message: unknown) => void)[] = [];
  const webview = {
    html: "",
    options: {} as unknown,
    cspSource: "vscode-resource:",
    posted: [] as { type: string; [key: string]: unknown }[],
    asWebviewUri: (u: { fsPath: string }) => ({ toString: () => `vscode-resource:${u.fsPath}` }),
    postMessage: async (message: { type: string }) => (webview.posted.push(message), true),
    onDidReceiveMessage: (listener: (message: unknown) => void) => (listeners.push(listener), disposable),
    send: (message: unknown) => listeners.forEach((l) => l(message)),
  };
  return webview;
}

const configListeners: ((e: { affectsConfiguration(section: string): boolean }) => void)[] = [];

/** Change a `contextSidecar.*` setting as the user would: the extension hears of it. */
export function changeSetting(key: string, value: unknown): void {
  ui.settings[key] = value;
  for (const listener of configListeners) listener({ affectsConfiguration: (section) => section === "contextSidecar" });
}

/** What the tests read and steer. */
export const ui = {
  commands: new Map<string, () => Promise<void>>(),
  statusItem: { text: "", tooltip: "", command: "", show() {}, dispose() {} },
  errors: [] as string[],
  settings: { command: [PYTHON, "-m", "sidecar", "serve"], store: fs.mkdtempSync(path.join(TMP, "store-")), logLevel: "debug" } as Record<string, unknown>,
  quickPicks: [] as QuickPickCall[],
  /** Answers a quick pick (default: dismiss it). */
  answerQuickPick: (_call: QuickPickCall): Promise<unknown> => Promise.resolve(undefined),
  infos: [] as string[],
  /** Every line written to an output channel (the run output among them). */
  outputLines: [] as string[],
  /** The dashboard webview, once created: what was posted to it, and a way to send it a message. */
  webview: undefined as undefined | { html: string; posted: { type: string; data: unknown }[]; send(message: unknown): void },
  /** Webview view providers by view id (the chat). */
  viewProviders: new Map<string, { resolveWebviewView(view: unknown): void }>(),
  /** Text document content providers by scheme (proposed edits). */
  contentProviders: new Map<string, { provideTextDocumentContent(uri: StubUri): string }>(),
  /** Every executeCommand call, and the diff editors opened (`vscode.diff`). */
  executed: [] as { id: string; args: unknown[] }[],
  diffs: [] as { left: StubUri; right: StubUri; title: string }[],
  clipboard: "",
  /** Open documents (`workspace.textDocuments`): a test adds unsaved buffers here. */
  textDocuments: [] as { uri: ReturnType<typeof uriFile>; getText(): string; isDirty: boolean }[],
  /** What the active editor's edits replaced its selections with. */
  inserted: [] as string[],
  /** The workspace folders (`workspace.workspaceFolders`), as paths. */
  folders: [REPO] as string[],
  /** Answers a warning message (modal or not) with one of its items (default: dismiss it). */
  answerWarning: (_message: string, _items: string[]): Promise<string | undefined> => Promise.resolve(undefined),
};

function createWebviewPanel() {
  const webview = createWebview();
  ui.webview = webview as never;
  return { webview, reveal() {}, onDidDispose: () => disposable, dispose() {} };
}

/** Resolve a registered webview view as VS Code does when it is first shown. */
export function resolveView(id: string): StubWebview {
  const provider = ui.viewProviders.get(id);
  if (!provider) throw new Error(`no webview view provider for ${id}`);
  const webview = createWebview();
  provider.resolveWebviewView({ webview, show() {}, onDidDispose: () => disposable, visible: true });
  return webview;
}

/** A memento (workspaceState) kept in memory; pass the same one to see a "reload". */
export function memento(): { get<T>(key: string): T | undefined; update(key: string, value: unknown): Promise<void> } {
  const values = new Map<string, unknown>();
  return { get: <T>(key: string) => values.get(key) as T | undefined, update: async (key, value) => void values.set(key, value) };
}

const vscodeStub = {
  StatusBarAlignment: { Left: 1, Right: 2 },
  ViewColumn: { Active: -1, Beside: -2 },
  CancellationTokenSource: class {
    readonly token = new StubToken();
    cancel(): void {
      this.token.fire();
    }
    dispose(): void {}
  },
  ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
  Uri: { file: uriFile, from: uriFrom, joinPath: (u: { fsPath: string }, ...p: string[]) => uriFile(path.join(u.fsPath, ...p)) },
  env: { clipboard: { writeText: async (text: string) => void (ui.clipboard = text) } },
  workspace: {
    get workspaceFolders() {
      return ui.folders.map((folder) => ({ uri: uriFile(folder) }));
    },
    get textDocuments() {
      return ui.textDocuments;
    },
    registerTextDocumentContentProvider: (scheme: string, provider: { provideTextDocumentContent(uri: StubUri): string }) => {
      ui.contentProviders.set(scheme, provider);
      return disposable;
    },
    getConfiguration: () => ({
      get: (key: string, dflt?: unknown) => ui.settings[key] ?? dflt,
      update: async (key: string, value: unknown) => changeSetting(key, value),
    }),
    onDidChangeConfiguration: (listener: (e: { affectsConfiguration(section: string): boolean }) => void) => {
      configListeners.push(listener);
      return disposable;
    },
    asRelativePath: (u: { fsPath: string }) => path.relative(REPO, u.fsPath),
    fs: { readFile: async (u: { fsPath: string }) => fs.readFileSync(u.fsPath) },
  },
  window: {
    activeTextEditor: {
      document: { uri: uriFile(path.join(REPO, "Makefile")), getText: () => "" },
      selection: { isEmpty: true },
      selections: [{ isEmpty: true }],
      edit: async (build: (edit: { replace(selection: unknown, text: string): void }) => void) => {
        build({ replace: (_selection, text) => void ui.inserted.push(text) });
        return true;
      },
    },
    registerWebviewViewProvider: (id: string, provider: { resolveWebviewView(view: unknown): void }) => {
      ui.viewProviders.set(id, provider);
      return disposable;
    },
    tabGroups: { all: [] as { tabs: unknown[] }[], close: async () => true },
    createOutputChannel: () => ({
      append() {},
      appendLine: (line: string) => void ui.outputLines.push(line),
      show() {},
      dispose() {},
    }),
    createStatusBarItem: () => ui.statusItem,
    showErrorMessage: async (m: string) => void ui.errors.push(m),
    showWarningMessage: async (m: string, ...rest: unknown[]) => {
      ui.errors.push(m);
      return ui.answerWarning(m, rest.filter((r): r is string => typeof r === "string"));
    },
    showInformationMessage: async (m: string) => void ui.infos.push(m),
    createWebviewPanel,
    showQuickPick: (items: QuickPickCall["items"], options: QuickPickCall["options"], token: StubToken) => {
      const call = { items, options, token, statusText: ui.statusItem.text };
      ui.quickPicks.push(call);
      return ui.answerQuickPick(call);
    },
  },
  commands: {
    registerCommand: (id: string, fn: () => Promise<void>) => {
      ui.commands.set(id, fn);
      return disposable;
    },
    executeCommand: async (id: string, ...args: unknown[]) => {
      ui.executed.push({ id, args });
      if (id === "vscode.diff") ui.diffs.push({ left: args[0] as StubUri, right: args[1] as StubUri, title: String(args[2]) });
      const command = ui.commands.get(id) as ((...a: unknown[]) => Promise<unknown>) | undefined;
      return command?.(...args);
    },
  },
};

const loader = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
const originalLoad = loader._load;
loader._load = (request: string, ...rest: unknown[]) => (request === "vscode" ? vscodeStub : originalLoad(request, ...rest));

export function removeTmp(): void {
  fs.rmSync(TMP, { recursive: true, force: true });
}
