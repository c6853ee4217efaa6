// Against the real sidecar: `$SIDECAR_PYTHON -m sidecar serve --store <fresh temp dir>`, run from
// the repository root (default interpreter: <repo>/.venv/bin/python).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { SidecarClient, type RunEvent, type ToolExecuteParams } from "../sidecarClient";

function findRepoRoot(): string {
  let dir = __dirname;
  for (;;) {
    if (fs.existsSync(path.join(dir, "pyproject.toml"))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`repository root not found above ${__dirname}`);
    dir = parent;
  }
}

const REPO = findRepoRoot();
const PYTHON = process.env["SIDECAR_PYTHON"] ?? path.join(REPO, ".venv", "bin", "python");
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), "sidecar-vscode-test-"));
const clients = new Set<SidecarClient>();

after(async () => {
  await Promise.all([...clients].map((c) => c.close()));
  fs.rmSync(TMP, { recursive: true, force: true });
});

async function start(): Promise<SidecarClient> {
  const client = await SidecarClient.start({
    command: [PYTHON, "-m", "sidecar", "serve"],
    store: fs.mkdtempSync(path.join(TMP, "store-")),
    cwd: REPO,
  });
  clients.add(client);
  return client;
}

function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}

test("initialize exposes protocol version 1", async () => {
  const client = await start();
  assert.equal(client.capabilities.protocolVersion, 1);
  assert.ok(client.capabilities.methods.includes("context/assemble"));
  assert.ok(client.capabilities.methods.includes("run/start"));
});

test("context/assemble returns a dashboard whose categories add up to used", async () => {
  const client = await start();
  const session = await client.request("session/create", { title: "vscode test", workspaceRoots: [REPO] });
  const result = await client.request("context/assemble", {
    sessionId: session.sessionId,
    userTurn: [{ type: "text", text: "What does the Makefile do?" }],
    sources: [{ id: "selection", title: "Makefile (selection)", text: "test:\n\ttrue\n" }],
  });
  const { dashboard } = result;
  const sum = Object.values(dashboard.categories).reduce((a, b) => a + b, 0);
  assert.ok(dashboard.used > 0, "nothing used");
  assert.equal(sum, dashboard.used);
  assert.ok(dashboard.availableInput >= dashboard.used);
});

test("a scripted run calls the host's tool and ends with exactly one run.completed", async () => {
  const client = await start();
  const calls: ToolExecuteParams[] = [];
  client.onToolExecute((params) => {
    calls.push(params);
    return { content: [{ type: "text", text: "demo:\n\ttrue\ntest:\n\ttrue\n" }] };
  });
  const events: RunEvent[] = [];
  client.onRunEvent((e) => events.push(e));
  const session = await client.request("session/create", { title: "run test" });
  const { runId } = await client.request("run/start", {
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
      rounds: [{ toolCalls: [{ name: "read_file", arguments: { path: "Makefile" } }] }, { text: "done" }],
    },
  });
  const completed = await client.waitForCompletion(runId, 20_000);
  assert.equal(completed.payload["status"], "completed");
  assert.equal(calls.length, 1);
  assert.equal(calls[0]?.name, "read_file");
  assert.deepEqual(calls[0]?.arguments, { path: "Makefile" });
  const mine = events.filter((e) => e.runId === runId);
  assert.equal(mine.filter((e) => e.type === "run.completed").length, 1);
  assert.ok(mine.some((e) => e.type === "context.assembled"));
});

test("close() sends shutdown/exit and leaves no process", async () => {
  const client = await start();
  const pid = client.pid;
  assert.ok(pid !== undefined);
  const info = await client.close();
  clients.delete(client);
  assert.equal(info.code, 0);
  assert.ok(isGone(pid), `sidecar ${pid} still running`);
});

test("run/lagged: the client catches up from the journal and dispatches every seq once", async () => {
  const client = await start();
  const events: RunEvent[] = []; // filtered by run once its id is known (events may come first)
  client.onRunEvent((e) => events.push(e));
  const session = await client.request("session/create", { title: "flood" });
  const flood = { rounds: [{ deltas: Array.from({ length: 3000 }, () => "x".repeat(2048)) }] };
  const started = await client.request("run/start", {
    sessionId: session.sessionId,
    userTurn: [{ type: "text", text: "flood" }],
    script: flood,
  });
  const runId = started.runId;
  const stdout = client.process.stdout;
  assert.ok(stdout);
  stdout.pause(); // a slow client: read nothing while the run streams ~6 MB
  const journal = path.join(client.capabilities.storePath, "runs", runId, "events.jsonl");
  const deadline = Date.now() + 15_000;
  while (!(fs.existsSync(journal) && fs.readFileSync(journal, "utf8").slice(-600).includes('"run.completed"'))) {
    assert.ok(Date.now() < deadline, "flood run did not finish");
    await new Promise((r) => setTimeout(r, 100));
  }
  stdout.resume();
  const completed = await client.waitForCompletion(runId, 20_000);
  assert.equal(completed.payload["status"], "completed");
  assert.ok(client.lagged >= 1, "no run/lagged seen");
  const seqs = events.filter((e) => e.runId === runId).map((e) => e.seq);
  assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1));
  assert.equal(seqs.at(-1), completed.seq);
});
