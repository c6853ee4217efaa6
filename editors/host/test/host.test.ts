// Against the real sidecar: `$SIDECAR_PYTHON -m sidecar serve --store <fresh temp dir>`, run
// from the repository root (default interpreter: <repo>/.venv/bin/python).
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { SidecarError, SidecarHost, type RunEvent, type StartOptions, type ToolExecuteParams } from "../src/index.js";
import { PYTHON, REPO } from "./repo.js";

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), "sidecar-host-test-"));
const hosts = new Set<SidecarHost>();

after(async () => {
  await Promise.all([...hosts].map((h) => h.close()));
  fs.rmSync(TMP, { recursive: true, force: true });
});

function freshStore(): string {
  return fs.mkdtempSync(path.join(TMP, "store-"));
}

async function startHost(store: string, extra: Partial<StartOptions> = {}): Promise<SidecarHost> {
  const host = await SidecarHost.start({
    command: [PYTHON, "-m", "sidecar", "serve"],
    store,
    cwd: REPO,
    stderr: "pipe",
    ...extra,
  });
  hosts.add(host);
  return host;
}

async function closeHost(host: SidecarHost): Promise<void> {
  await host.close();
  hosts.delete(host);
}

const READ_FILE_TOOL = {
  name: "read_file",
  description: "Read a workspace file.",
  parameters: { type: "object", properties: { path: { type: "string" } } },
};

const TOOL_SCRIPT = {
  rounds: [
    {
      deltas: ["Let me look at ", "the Makefile."],
      toolCalls: [{ name: "read_file", arguments: { path: "Makefile" }, id: "call_1" }],
    },
    { deltas: ["It has `make demo` ", "and `make test`."] },
  ],
};

/** The run's events, in arrival order (events may arrive before run/start answers). */
function collect(host: SidecarHost, runId: () => string | undefined): () => RunEvent[] {
  const all: RunEvent[] = [];
  host.onRunEvent((e) => all.push(e));
  return () => all.filter((e) => e.runId === runId());
}

/** Start the scripted tool-call run and wait for it; returns everything seen. */
async function scriptedRun(host: SidecarHost) {
  const calls: ToolExecuteParams[] = [];
  host.onToolExecute((params) => {
    calls.push(params);
    return { content: [{ type: "text", text: "demo:\n\ttrue\ntest:\n\ttrue" }] };
  });
  let runId: string | undefined;
  const all: RunEvent[] = [];
  host.onRunEvent((e) => all.push(e));
  const session = await host.request("session/create", { title: "host test" });
  const started = await host.request("run/start", {
    sessionId: session.sessionId,
    userTurn: [{ type: "text", text: "What targets does the Makefile have?" }],
    tools: [READ_FILE_TOOL],
    script: TOOL_SCRIPT,
  });
  runId = started.runId;
  const completed = await host.waitForCompletion(runId, 20_000);
  const events = all.filter((e) => e.runId === runId);
  return { runId, sessionId: session.sessionId, calls, events, completed };
}

/** Whether the run's journal already ends with run.completed (read from disk: the pipe is paused). */
async function readRunState(host: SidecarHost, runId: string): Promise<boolean> {
  const journal = path.join(host.capabilities.storePath, "runs", runId, "events.jsonl");
  if (!fs.existsSync(journal)) return false;
  const text = fs.readFileSync(journal, "utf8");
  return text.slice(-600).includes('"run.completed"');
}

function assertSeqsFromOne(events: RunEvent[]): void {
  assert.ok(events.length > 0, "no events");
  events.forEach((e, i) => assert.equal(e.seq, i + 1, `event #${i} has seq ${e.seq}`));
}

describe("SidecarHost against the real sidecar", () => {
  test("initialize exposes protocol version 1 and the methods", async () => {
    const host = await startHost(freshStore());
    assert.equal(host.capabilities.protocolVersion, 1);
    for (const m of ["session/create", "run/start", "run/subscribe", "run/cancel", "server/sleep"]) {
      assert.ok(host.capabilities.methods.includes(m), `methods lack ${m}`);
    }
    for (const m of ["run/event", "run/lagged", "tool/execute", "assembly/request", "approval/request"]) {
      assert.ok(!host.capabilities.methods.includes(m), `methods list the server-to-client ${m}`);
    }
    assert.match(host.capabilities.schemaHash, /^[0-9a-f]{32}$/);
    const pong = await host.request("server/ping", {});
    assert.ok(pong);
    await assert.rejects(
      host.request("session/get", { sessionId: "ses_nope" }),
      (err: unknown) => err instanceof SidecarError && typeof err.code === "number" && err.data !== undefined,
    );
    await closeHost(host);
  });

  test("onStderrLine and onTrace see the sidecar's log and every message; running ends at close()", async () => {
    const stderrLines: string[] = [];
    const trace: string[] = [];
    const host = await startHost(freshStore(), {
      args: ["-v"],
      onStderrLine: (line) => stderrLines.push(line),
      onTrace: (line) => trace.push(line),
    });
    assert.equal(host.running, true);
    await host.request("server/ping", {});
    assert.ok(trace.some((line) => line.includes("server/ping")), `no server/ping in the trace: ${trace.join("\n")}`);
    await closeHost(host);
    assert.equal(host.running, false);
    assert.ok(stderrLines.length > 0, "no stderr line seen with -v");
    assert.ok(stderrLines.every((line) => !line.includes("\n") && line.trim() !== ""));
  });

  test("a scripted run with a tool call answered by the host", async () => {
    const host = await startHost(freshStore());
    const { calls, events, completed } = await scriptedRun(host);
    assertSeqsFromOne(events);
    const completions = events.filter((e) => e.type === "run.completed");
    assert.equal(completions.length, 1);
    assert.equal(completions[0]?.payload["status"], "completed");
    assert.equal(events.at(-1)?.type, "run.completed");
    assert.equal(completed.payload["status"], "completed");
    assert.equal(calls.length, 1);
    assert.equal(calls[0]?.name, "read_file");
    assert.equal(calls[0]?.callId, "call_1");
    assert.deepEqual(calls[0]?.arguments, { path: "Makefile" });
    assert.ok(events.some((e) => e.type === "tool.callRequested"));
    assert.ok(events.some((e) => e.type === "tool.resultStored"));
    await closeHost(host);
  });

  test("cancel: run/cancel ends a slow run; an aborted request rejects with -32800", async () => {
    const host = await startHost(freshStore());
    let runId: string | undefined;
    const runEvents = collect(host, () => runId);
    const session = await host.request("session/create", { title: "slow" });
    const deltas = Array.from({ length: 200 }, (_, i) => `tok${i} `);
    const started = await host.request("run/start", {
      sessionId: session.sessionId,
      userTurn: [{ type: "text", text: "talk slowly" }],
      script: { rounds: [{ deltas, delayMs: 10 }] },
    });
    runId = started.runId;
    // Let it stream a little, then cancel.
    await new Promise((r) => setTimeout(r, 150));
    const run = await host.request("run/cancel", { runId });
    assert.equal(run.status, "cancelled");
    const completed = await host.waitForCompletion(runId, 5_000);
    assert.equal(completed.payload["status"], "cancelled");
    await new Promise((r) => setTimeout(r, 100));
    const events = runEvents();
    assertSeqsFromOne(events);
    assert.equal(events.filter((e) => e.type === "run.completed").length, 1);
    assert.equal(events.at(-1)?.type, "run.completed", "nothing after run.completed");
    assert.ok(events.filter((e) => e.type === "model.delta").length < 200, "the run was not cut short");

    const controller = new AbortController();
    const t0 = Date.now();
    const sleeping = host.request("server/sleep", { ms: 30_000 }, controller.signal);
    setTimeout(() => controller.abort(), 100);
    await assert.rejects(sleeping, (err: unknown) => {
      assert.ok(err instanceof SidecarError, String(err));
      assert.equal(err.code, -32800);
      assert.equal(err.data?.code, "request.cancelled");
      return true;
    });
    assert.ok(Date.now() - t0 < 5_000);
    // The connection is still fine afterwards.
    assert.ok(await host.request("server/ping", {}));
    await closeHost(host);
  });

  test("catch-up from the journal on a new sidecar over the same store", async () => {
    const store = freshStore();
    const first = await startHost(store);
    const { runId, events } = await scriptedRun(first);
    await closeHost(first);
    const n = events.length;
    const shape = (es: RunEvent[]) => es.map((e) => [e.seq, e.type] as const);

    const second = await startHost(store);
    const replayed: RunEvent[] = [];
    second.onRunEvent((e) => {
      if (e.runId === runId) replayed.push(e);
    });
    const sub = await second.subscribe(runId, 0);
    assert.equal(sub.replayed, n);
    assert.equal(sub.headSeq, n);
    assert.equal(sub.live, false);
    assert.deepEqual(shape(replayed), shape(events));
    assert.deepEqual(
      replayed.map((e) => e.payload),
      events.map((e) => e.payload),
    );

    const k = Math.floor(n / 2);
    replayed.length = 0;
    const partial = await second.subscribe(runId, k);
    assert.equal(partial.replayed, n - k);
    assert.deepEqual(
      replayed.map((e) => e.seq),
      Array.from({ length: n - k }, (_, i) => k + 1 + i),
    );
    assert.equal(second.lastSeq(runId), n);
    await closeHost(second);
  });

  test("run/lagged: the host re-subscribes by itself and delivers every seq once", async () => {
    const host = await startHost(freshStore());
    let runId: string | undefined;
    const runEvents = collect(host, () => runId);
    const lagged: number[] = [];
    host.onRunLagged((l) => lagged.push(l.lastSentSeq));
    const session = await host.request("session/create", { title: "flood" });
    const flood = { rounds: [{ deltas: Array.from({ length: 3000 }, () => "x".repeat(2048)) }] };
    const stdout = host.process.stdout;
    assert.ok(stdout);
    const started = await host.request("run/start", {
      sessionId: session.sessionId,
      userTurn: [{ type: "text", text: "flood" }],
      script: flood,
    });
    runId = started.runId;
    stdout.pause(); // a slow client: stop reading the sidecar
    const deadline = Date.now() + 15_000;
    for (;;) {
      const run = await readRunState(host, runId);
      if (run) break;
      assert.ok(Date.now() < deadline, "flood run did not finish");
      await new Promise((r) => setTimeout(r, 100));
    }
    stdout.resume();
    const completed = await host.waitForCompletion(runId, 20_000);
    assert.equal(completed.payload["status"], "completed");
    assert.ok(lagged.length >= 1, "no run/lagged seen");
    assertSeqsFromOne(runEvents());
    await closeHost(host);
  });

  test("no orphan process after close()", async () => {
    const host = await startHost(freshStore());
    const pid = host.pid;
    assert.ok(pid !== undefined);
    process.kill(pid, 0); // alive
    const info = await host.close();
    hosts.delete(host);
    assert.equal(info.code, 0);
    const deadline = Date.now() + 3_000;
    for (;;) {
      try {
        process.kill(pid, 0);
      } catch (err) {
        assert.equal((err as NodeJS.ErrnoException).code, "ESRCH");
        break;
      }
      assert.ok(Date.now() < deadline, `pid ${pid} still alive 3 s after close()`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await assert.rejects(host.request("server/ping", {}), SidecarError);
  });
});
