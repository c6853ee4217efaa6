// Smoke test of the wiring: activate() with a stub `vscode` module, against the real sidecar.
// Checks that the 8 commands register and that `assemble` updates the status bar.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import Module from "node:module";
import os from "node:os";
import path from "node:path";

function findRepoRoot(): string {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, "pyproject.toml"))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("repository root not found");
    dir = parent;
  }
  return dir;
}

const REPO = findRepoRoot();
const PYTHON = process.env["SIDECAR_PYTHON"] ?? path.join(REPO, ".venv", "bin", "python");
const STORE = fs.mkdtempSync(path.join(os.tmpdir(), "sidecar-vscode-ext-"));

const commands = new Map<string, () => Promise<void>>();
const statusItem = { text: "", tooltip: "", command: "", show() {}, dispose() {} };
const errors: string[] = [];
const disposable = { dispose() {} };
const uriFile = (p: string) => ({ fsPath: p, scheme: "file", toString: () => `file://${p}` });
const makefile = path.join(REPO, "Makefile");

const vscodeStub = {
  StatusBarAlignment: { Left: 1, Right: 2 },
  ViewColumn: { Active: -1, Beside: -2 },
  Uri: { file: uriFile, joinPath: (u: { fsPath: string }, ...p: string[]) => uriFile(path.join(u.fsPath, ...p)) },
  workspace: {
    workspaceFolders: [{ uri: uriFile(REPO) }],
    getConfiguration: () => ({
      get: (key: string, dflt?: unknown) =>
        ({ command: [PYTHON, "-m", "sidecar", "serve"], store: STORE, logLevel: "trace" })[key] ?? dflt,
    }),
    onDidChangeConfiguration: () => disposable,
    asRelativePath: (u: { fsPath: string }) => path.relative(REPO, u.fsPath),
    fs: { readFile: async (u: { fsPath: string }) => fs.readFileSync(u.fsPath) },
  },
  window: {
    activeTextEditor: {
      document: { uri: uriFile(makefile), getText: () => "" },
      selection: { isEmpty: true },
    },
    createOutputChannel: () => ({ append() {}, appendLine() {}, show() {}, dispose() {} }),
    createStatusBarItem: () => statusItem,
    showErrorMessage: async (m: string) => void errors.push(m),
    showWarningMessage: async (m: string) => void errors.push(m),
    showInformationMessage: async () => undefined,
  },
  commands: {
    registerCommand: (id: string, fn: () => Promise<void>) => {
      commands.set(id, fn);
      return disposable;
    },
  },
};

const loader = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
const originalLoad = loader._load;
loader._load = (request: string, ...rest: unknown[]) => (request === "vscode" ? vscodeStub : originalLoad(request, ...rest));

const extension = require("../extension") as typeof import("../extension");
const subscriptions: { dispose(): void }[] = [];

after(async () => {
  await extension.deactivate();
  loader._load = originalLoad;
  fs.rmSync(STORE, { recursive: true, force: true });
});

test("activate registers every command and assemble shows the context usage", async () => {
  extension.activate({ subscriptions, extensionUri: uriFile(path.resolve(__dirname, "..", "..")) } as never);
  for (const id of ["start", "stop", "newSession", "assemble", "run", "showDashboard", "showSnapshot", "cancelRun"]) {
    assert.ok(commands.has(`contextSidecar.${id}`), `contextSidecar.${id} not registered`);
  }
  await commands.get("contextSidecar.assemble")!();
  assert.deepEqual(errors, []);
  assert.match(statusItem.text, /^ctx \d+(\.\d)?k?\/\d+(\.\d+)?[kM]?$/);
  await commands.get("contextSidecar.stop")!();
  assert.equal(statusItem.text, "ctx (stopped)");
});
