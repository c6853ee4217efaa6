// Check a packaged .vsix (a zip): the manifest declares every command and setting, and the
// compiled entry point and the dashboard page are inside. Reads the zip's central directory
// itself (node:zlib for deflated entries), so it needs no `unzip`.
import assert from "node:assert/strict";
import fs from "node:fs";
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
];
const SETTINGS = ["contextSidecar.command", "contextSidecar.store", "contextSidecar.logLevel"];
const REQUIRED = [
  "extension/package.json",
  "extension/dist/extension.js",
  "extension/dist/sidecarClient.js",
  "extension/media/dashboard.html",
  "extension/node_modules/vscode-jsonrpc/node.js",
];

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
  assert.ok(!name.startsWith("extension/src/") && !name.startsWith("extension/dist/test/"), `${file} ships ${name}`);
}

const manifest = JSON.parse(readEntry(buf, entries.get("extension/package.json")).toString("utf8"));
const commands = (manifest.contributes?.commands ?? []).map((c) => c.command);
for (const id of COMMANDS) assert.ok(commands.includes(id), `package.json lacks command ${id}`);
const properties = Object.keys(manifest.contributes?.configuration?.properties ?? {});
for (const key of SETTINGS) assert.ok(properties.includes(key), `package.json lacks setting ${key}`);
assert.equal(manifest.main, "./dist/extension.js");

const html = readEntry(buf, entries.get("extension/media/dashboard.html")).toString("utf8");
assert.ok(html.includes("renderSnapshot"), "media/dashboard.html is not the dashboard page");

process.stdout.write(
  `${file}: ${entries.size} files, ${COMMANDS.length} commands, ${SETTINGS.length} settings, dashboard and entry point present\n`,
);
