// A scripted agent turn through a real sidecar: the (scripted) model asks for a tool, this host
// runs it, the model answers; every run event is printed as it streams.
//
//   node dist/editors/host/examples/scripted-turn.js                      # context-sidecar on PATH
//   node dist/editors/host/examples/scripted-turn.js python -m sidecar serve
//   SIDECAR_PYTHON=/path/to/.venv/bin/python node dist/editors/host/examples/scripted-turn.js
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { SidecarHost } from "../src/index.js";

function repoRoot(): string | undefined {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (path.dirname(dir) !== dir) {
    if (fs.existsSync(path.join(dir, "pyproject.toml")) && fs.existsSync(path.join(dir, "sidecar"))) return dir;
    dir = path.dirname(dir);
  }
  return undefined;
}

const argv = process.argv.slice(2);
const python = process.env["SIDECAR_PYTHON"];
const command = argv.length > 0 ? argv : python ? [python, "-m", "sidecar", "serve"] : ["context-sidecar", "serve"];
const root = repoRoot();
const store = fs.mkdtempSync(path.join(os.tmpdir(), "sidecar-host-example-"));

const host = await SidecarHost.start({ command, store, stderr: "inherit", ...(root ? { cwd: root } : {}) });
try {
  const caps = host.capabilities;
  console.log(`▶ sidecar pid ${host.pid}: protocol v${caps.protocolVersion}, server ${caps.serverVersion}, ${caps.methods.length} methods`);

  host.onToolExecute(async ({ name, arguments: args }) => {
    console.log(`  ↳ tool/execute ${name}(${JSON.stringify(args)})`);
    const file = path.join(root ?? process.cwd(), String(args["path"] ?? ""));
    if (!fs.existsSync(file)) return { content: [{ type: "text", text: `no such file: ${args["path"]}` }], isError: true };
    const head = fs.readFileSync(file, "utf8").split("\n").slice(0, 8).join("\n");
    return { content: [{ type: "text", text: head }] };
  });
  host.onRunEvent((e) => {
    const detail = e.type === "model.delta" ? JSON.stringify(e.payload["text"] ?? e.payload) : JSON.stringify(e.payload).slice(0, 100);
    console.log(`  #${String(e.seq).padEnd(3)} ${e.type.padEnd(20)} ${detail}`);
  });

  const session = await host.request("session/create", { title: "host example", ...(root ? { workspaceRoots: [root] } : {}) });
  console.log(`▶ session/create → ${session.sessionId}`);
  const { runId } = await host.request("run/start", {
    sessionId: session.sessionId,
    userTurn: [{ type: "text", text: "What targets does the Makefile have?" }],
    tools: [
      {
        name: "read_file",
        description: "Read a workspace file.",
        parameters: { type: "object", properties: { path: { type: "string" } } },
      },
    ],
    script: {
      rounds: [
        { deltas: ["Let me look at ", "the Makefile."], toolCalls: [{ name: "read_file", arguments: { path: "Makefile" } }] },
        { deltas: ["It has `make demo` ", "and `make test`."] },
      ],
    },
  });
  console.log(`▶ run/start → ${runId}`);
  const done = await host.waitForCompletion(runId);
  const run = await host.request("run/get", { runId });
  console.log(`✔ run ${done.payload["status"]} after ${run.rounds} model calls`);
} finally {
  await host.close();
  fs.rmSync(store, { recursive: true, force: true });
}
