// Check a packaged .vsix (a zip): the manifest declares every command and setting; the entry
// point is esbuild's bundle with the host library inside (no node_modules, no require of
// editors/host or vscode-jsonrpc); the dashboard page is inside; and the main, unpacked alone
// into an empty folder, loads and activates with a stub `vscode`. Reads the zip's central
// directory itself (node:zlib for deflated entries), so it needs no `unzip`.
import assert from "node:assert/strict";
import fs from "node:fs";
import Module, { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";

const COMMANDS = [
  "contextSidecar.start",
  "contextSidecar.stop",
  "contextSidecar.newSession",
  "contextSidecar.assemble",
  "contextSidecar.run",
  "contextSidecar.showDashboard",
  "contextSidecar.showSnapshot",
  "contextSidecar.cancelRun",
  "contextSidecar.recover",
  "contextSidecar.openChat",
  "contextSidecar.acceptEdit",
  "contextSidecar.rejectEdit",
  "contextSidecar.reviewEdit",
  "contextSidecar.undoRewind",
];
const SETTINGS = [
  "contextSidecar.command",
  "contextSidecar.store",
  "contextSidecar.logLevel",
  "contextSidecar.approvalRequired",
  "contextSidecar.assembly",
  "contextSidecar.builtinTools",
  "contextSidecar.profile",
];
const REQUIRED = [
  "extension/package.json",
  "extension/dist/extension.js",
  "extension/dist/webview.js",
  "extension/media/dashboard.html",
  "extension/media/chat.css",
  "extension/media/sidecar.svg",
];
/** Node's own modules and `vscode` are all the bundle may require. */
const ALLOWED_REQUIRES = /^(node:.*|vscode|crypto|fs|net|os|path|util|child_process|events|stream)$/;

/** name -> {method, compressedSize, offset} from the central directory. */
function readEntries(buf) {
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 65_557); i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  assert.ok(eocd >= 0, "not a zip: no end of central directory");
  const count = buf.readUInt16LE(eocd + 10);
  let p = buf.readUInt32LE(eocd + 16);
  const entries = new Map();
  for (let n = 0; n < count; n++) {
    assert.equal(buf.readUInt32LE(p), 0x02014b50, "bad central directory entry");
    const method = buf.readUInt16LE(p + 10);
    const compressedSize = buf.readUInt32LE(p + 20);
    const nameLen = buf.readUInt16LE(p + 28);
    const extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    const offset = buf.readUInt32LE(p + 42);
    const name = buf.toString("utf8", p + 46, p + 46 + nameLen);
    entries.set(name, { method, compressedSize, offset });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return entries;
}

function readEntry(buf, entry) {
  const p = entry.offset;
  assert.equal(buf.readUInt32LE(p), 0x04034b50, "bad local header");
  const start = p + 30 + buf.readUInt16LE(p + 26) + buf.readUInt16LE(p + 28);
  const data = buf.subarray(start, start + entry.compressedSize);
  if (entry.method === 0) return data;
  if (entry.method === 8) return zlib.inflateRawSync(data);
  throw new Error(`unsupported compression method ${entry.method}`);
}

const file = process.argv[2] ?? "dist/context-sidecar.vsix";
const buf = fs.readFileSync(file);
const entries = readEntries(buf);
for (const name of REQUIRED) assert.ok(entries.has(name), `${file} lacks ${name}`);
for (const name of entries.keys()) {
  for (const banned of ["extension/src/", "extension/dist/test/", "extension/node_modules/"]) {
    assert.ok(!name.startsWith(banned), `${file} ships ${name}`);
  }
}

// The README is the extension's page in VS Code: every relative image or link it has is
// shipped beside it (the package keeps relative links as they are: no repository to point at).
const readme = readEntry(buf, entries.get("extension/readme.md")).toString("utf8");
for (const [, target] of readme.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)) {
  if (/^[a-z]+:/i.test(target)) continue;
  const shipped = path.posix.normalize(`extension/${target}`);
  assert.ok(entries.has(shipped), `README.md points at ${target}, which ${file} does not ship`);
}

const manifest = JSON.parse(readEntry(buf, entries.get("extension/package.json")).toString("utf8"));
const commands = (manifest.contributes?.commands ?? []).map((c) => c.command);
for (const id of COMMANDS) assert.ok(commands.includes(id), `package.json lacks command ${id}`);
const properties = Object.keys(manifest.contributes?.configuration?.properties ?? {});
for (const key of SETTINGS) assert.ok(properties.includes(key), `package.json lacks setting ${key}`);
assert.equal(manifest.main, "./dist/extension.js");

const html = readEntry(buf, entries.get("extension/media/dashboard.html")).toString("utf8");
assert.ok(html.includes("renderSnapshot"), "media/dashboard.html is not the dashboard page");
const views = manifest.contributes?.views?.contextSidecar ?? [];
assert.ok(views.some((v) => v.type === "webview" && v.id === "contextSidecar.chat"), "package.json lacks the chat view");
const webview = readEntry(buf, entries.get("extension/dist/webview.js")).toString("utf8");
assert.ok(webview.includes("vscode-single-select") && webview.includes("acquireVsCodeApi"), "dist/webview.js is not the chat webview bundle");

// The bundle: the host library is inside, and nothing outside node and vscode is required.
const main = readEntry(buf, entries.get("extension/dist/extension.js")).toString("utf8");
assert.ok(/class _?SidecarHost\b/.test(main), "dist/extension.js does not carry the host library (SidecarHost)");
assert.ok(main.includes("createMessageConnection"), "dist/extension.js does not carry vscode-jsonrpc");
const requires = new Set([...main.matchAll(/\brequire\("([^"]+)"\)/g)].map((m) => m[1]));
for (const name of requires) assert.match(name, ALLOWED_REQUIRES, `dist/extension.js requires ${name}`);

// Load the main from the .vsix alone (an empty temp folder: no node_modules above it) and activate it.
const unpacked = fs.mkdtempSync(path.join(os.tmpdir(), "vsix-check-"));
try {
  const mainPath = path.join(unpacked, "extension", "dist", "extension.js");
  fs.mkdirSync(path.dirname(mainPath), { recursive: true });
  fs.writeFileSync(mainPath, main);
  const registered = [];
  const nothing = { dispose() {} };
  const vscodeStub = {
    StatusBarAlignment: { Left: 1, Right: 2 },
    workspace: {
      getConfiguration: () => ({ get: (_key, dflt) => dflt }),
      onDidChangeConfiguration: () => nothing,
      registerTextDocumentContentProvider: () => nothing,
    },
    window: {
      createOutputChannel: () => ({ append() {}, appendLine() {}, show() {}, dispose() {} }),
      createStatusBarItem: () => ({ text: "", show() {}, dispose() {} }),
      registerWebviewViewProvider: () => nothing,
    },
    commands: { registerCommand: (id) => (registered.push(id), nothing) },
  };
  const originalLoad = Module._load;
  Module._load = (request, ...rest) => (request === "vscode" ? vscodeStub : originalLoad(request, ...rest));
  try {
    const extension = createRequire(mainPath)(mainPath);
    assert.equal(typeof extension.deactivate, "function", "the main exports no deactivate");
    const api = extension.activate({ subscriptions: [], extensionUri: { fsPath: path.dirname(path.dirname(mainPath)) } });
    assert.deepEqual([...registered].sort(), [...COMMANDS].sort(), "activate registered other commands");
    assert.equal(typeof api.host, "function", "activate returned no API");
    await extension.deactivate();
  } finally {
    Module._load = originalLoad;
  }
} finally {
  fs.rmSync(unpacked, { recursive: true, force: true });
}

process.stdout.write(
  `${file}: ${entries.size} files, ${COMMANDS.length} commands, ${SETTINGS.length} settings, dashboard present; ` +
    `the main is a self-contained bundle with the host library (${main.length} bytes) and activates from the .vsix alone\n`,
);
