// An extension author's client, not this package: vscode-jsonrpc's own MessageConnection over the
// stdio of `$SIDECAR_PYTHON -m sidecar serve --store <fresh temp dir>`, with hand-written types, as
// someone who only read the protocol reference (docs/protocol/) would write it (issue 11, item 13).
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import rpc from "vscode-jsonrpc/node";
import type { MessageConnection } from "vscode-jsonrpc/node";
import { PYTHON, REPO } from "./repo.js";

const { createMessageConnection, StreamMessageReader, StreamMessageWriter, ResponseError } = rpc;

interface RunEvent {
  runId: string;
  sessionId: string;
  seq: number;
  type: string;
  payload: Record<string, unknown>;
}
/** A run event, and whether the answer to the run/start that created its run had arrived first. */
type Seen = RunEvent & { afterAnswer: boolean };
interface ToolExecuteParams {
  runId: string;
  callId: string;
  name: string;
  arguments: { path?: string };
}

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), "sidecar-vscode-jsonrpc-"));
const MESSAGE_TYPE_ERROR = 1; // LSP MessageType.Error
const children = new Set<ChildProcess>();

after(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  fs.rmSync(TMP, { recursive: true, force: true });
});

/** What the author's extension keeps about one sidecar. */
class Author {
  readonly child: ChildProcess;
  readonly connection: MessageConnection;
  readonly events: Seen[] = [];
  readonly toolCalls: ToolExecuteParams[] = [];
  readonly shown: Array<{ type: number; message: string }> = [];
  readonly answered = new Set<string>();
  readonly exited: Promise<number | null>;
  stderr = "";

  constructor() {
    const store = fs.mkdtempSync(path.join(TMP, "store-"));
    this.child = spawn(PYTHON, ["-m", "sidecar", "serve", "--store", store], {
      cwd: REPO,
      stdio: ["pipe", "pipe", "pipe"],
    });
    children.add(this.child);
    this.child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.child.on("exit", (code) => resolve(code)));
    const { stdout, stdin } = this.child;
    assert.ok(stdout && stdin);
    this.connection = createMessageConnection(new StreamMessageReader(stdout), new StreamMessageWriter(stdin));
    this.connection.onNotification("run/event", (event: RunEvent) => {
      this.events.push({ ...event, afterAnswer: this.answered.has(event.runId) });
    });
    this.connection.onRequest("tool/execute", async (params: ToolExecuteParams) => {
      this.toolCalls.push(params);
      return { content: [{ type: "text", text: `contents of ${params.arguments.path}` }] };
    });
    const show = (params: { type: number; message: string }): void => {
      this.shown.push(params);
    };
    this.connection.onNotification("window/showMessage", show);
    this.connection.onNotification("window/logMessage", show);
    this.connection.listen();
  }

  /** A request that fails, rather than hangs, when the sidecar dies before answering it. */
  request<R = any>(method: string, params?: object): Promise<R> {
    const died = this.exited.then((code) => {
      throw new Error(`the sidecar exited (code ${code}) before answering ${method}; stderr:\n${this.stderr}`);
    });
    return Promise.race([this.connection.sendRequest<R>(method, params), died]);
  }

  /** run/start; the run id is known from the moment its answer is read. */
  async startRun(params: object): Promise<string> {
    const started = await this.request<{ runId: string }>("run/start", params);
    this.answered.add(started.runId);
    return started.runId;
  }

  of(runId: string): Seen[] {
    return this.events.filter((e) => e.runId === runId);
  }

  async completed(runId: string): Promise<Seen[]> {
    await until(() => this.of(runId).some((e) => e.type === "run.completed"));
    return this.of(runId);
  }

  async shutdown(): Promise<number | null> {
    await this.request("shutdown");
    await this.connection.sendNotification("exit");
    const code = await this.exited;
    this.connection.dispose();
    return code;
  }
}

async function until(predicate: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    assert.ok(Date.now() < deadline, `condition not met within ${timeoutMs} ms: ${predicate}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function seqs(events: RunEvent[]): number[] {
  return events.map((e) => e.seq);
}

function oneTo(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i + 1);
}

const READ_FILE = {
  name: "read_file",
  description: "Read a workspace file.",
  parameters: { type: "object", properties: { path: { type: "string" } } },
};

describe("vscode-jsonrpc, used directly, against the real sidecar", () => {
  test("a tool run, a re-subscription with afterSeq and a cancel", { timeout: 30_000 }, async () => {
    const author = new Author();
    const init = await author.request("initialize", {
      processId: process.pid,
      clientInfo: { name: "vscode-jsonrpc-author" },
      capabilities: {},
    });
    assert.equal(typeof init.capabilities.experimental.contextSidecar.protocolVersion, "number");
    await author.connection.sendNotification("initialized", {});
    const session = await author.request("session/create", { title: "outside author" });

    // 1. a scripted run whose model calls a host tool
    const first = await author.startRun({
      sessionId: session.sessionId,
      userTurn: [{ type: "text", text: "What does a.py do?" }],
      tools: [READ_FILE],
      script: {
        rounds: [
          {
            deltas: ["Let me read ", "a.py."],
            toolCalls: [{ id: "call_1", name: "read_file", arguments: { path: "a.py" } }],
          },
          { text: "a.py prints hello." },
        ],
      },
    });
    let events = await author.completed(first);
    assert.deepEqual(
      author.toolCalls.map((c) => [c.callId, c.name, c.arguments]),
      [["call_1", "read_file", { path: "a.py" }]],
    );
    assert.deepEqual(seqs(events), oneTo(events.length));
    assert.deepEqual(events.at(-1)?.payload, { status: "completed" });
    assert.equal(events.filter((e) => e.type === "tool.resultStored").length, 1);
    assert.deepEqual(
      events.filter((e) => e.type === "model.delta").map((e) => e.payload["text"]),
      ["Let me read ", "a.py.", "a.py prints hello."],
    );

    // 2. a slow run: leave it, come back with afterSeq, then cancel it mid-way
    const runId = await author.startRun({
      sessionId: session.sessionId,
      userTurn: [{ type: "text", text: "Talk for a while." }],
      script: { rounds: [{ deltas: Array.from({ length: 400 }, (_, i) => `w${i} `), delayMs: 25 }] },
    });
    await until(() => author.of(runId).filter((e) => e.type === "model.delta").length >= 2);
    await author.request("run/unsubscribe", { runId });
    const lastSeen = Math.max(...seqs(author.of(runId)));
    // the journal moves on while nobody listens (polled, not timed)
    while ((await author.request("run/get", { runId })).headSeq < lastSeen + 3) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const again = await author.request("run/subscribe", { runId, afterSeq: lastSeen });
    assert.equal(again.live, true);
    assert.ok(again.replayed >= 3, `replayed ${again.replayed}`);
    await until(() => Math.max(...seqs(author.of(runId))) > again.headSeq);
    const cancelled = await author.request("run/cancel", { runId });
    assert.equal(cancelled.status, "cancelled");
    events = await author.completed(runId);
    assert.deepEqual(seqs(events), oneTo(events.length), "every event exactly once, in order");
    assert.equal(events.at(-1)?.type, "run.completed");
    assert.deepEqual(events.at(-1)?.payload, { status: "cancelled" });

    // a domain error is a JSON-RPC error with a dotted data.code, no traceback
    await assert.rejects(author.request("run/get", { runId: "run_nope" }), (err: unknown) => {
      assert.ok(err instanceof ResponseError, String(err));
      assert.equal(err.code, -32000);
      assert.equal((err.data as { code: string }).code, "run.not_found");
      assert.ok(!JSON.stringify(err.data).includes("Traceback"));
      return true;
    });

    // an author who registers a run's listener once run/start answered misses nothing (item 9)
    assert.deepEqual(
      author.events.filter((e) => !e.afterAnswer).map((e) => [e.seq, e.type]),
      [],
      "run events arrived before the run/start answer",
    );
    assert.equal(await author.shutdown(), 0);
    assert.deepEqual(author.shown.filter((m) => m.type === MESSAGE_TYPE_ERROR), []);
    // at the default log level a normal session writes nothing to stderr (item 11)
    assert.equal(author.stderr, "");
  });

  test("what other clients send on their own is ignored quietly, loaded or not (issue 20)", { timeout: 30_000 }, async () => {
    const author = new Author();
    const init = await author.request("initialize", { processId: process.pid, capabilities: {} });
    // only what a client can call is listed, nothing the server sends (item 4)
    const methods: string[] = init.capabilities.experimental.contextSidecar.methods;
    assert.ok(methods.includes("run/start"));
    for (const m of ["run/event", "run/lagged", "tool/execute", "assembly/request", "approval/request"]) {
      assert.ok(!methods.includes(m), `methods lists the server-to-client ${m}`);
    }
    const chatter = async (): Promise<void> => {
      await author.connection.sendNotification("initialized"); // no params (item 1)
      await author.connection.sendNotification("$/cancelRequest");
      await author.connection.sendNotification("workspace/didChangeConfiguration", {});
      await author.connection.sendNotification("textDocument/didSave", { uri: "x" });
      await author.connection.sendNotification("$/progress", { x: 1 });
      // pygls' document handlers, for features the sidecar does not advertise (item 2)
      await author.connection.sendNotification("textDocument/didChange", {
        textDocument: { uri: "file:///x", version: 2 },
        contentChanges: [{ text: "a" }],
      });
      await author.connection.sendNotification("window/workDoneProgress/cancel", { token: "t" });
    };
    await chatter(); // right after initialize: the early dispatch meets them
    await author.request("session/create", { title: "loaded" });
    await author.request("run/list", {}); // only the full server answers run/*: it has loaded
    await chatter();
    // no execute-command capability: a method the sidecar does not have (item 3)
    await assert.rejects(author.request("workspace/executeCommand", { command: "x" }), (err: unknown) => {
      assert.ok(err instanceof ResponseError, String(err));
      assert.equal(err.code, -32601);
      assert.equal((err.data as { code: string }).code, "method.not_found");
      return true;
    });
    assert.equal(typeof (await author.request("server/ping", {})).time, "string");
    assert.equal(await author.shutdown(), 0);
    assert.deepEqual(author.shown, []);
    const loud = author.stderr.split("\n").filter((l) => /Traceback|ERROR|WARNING/.test(l));
    assert.deepEqual(loud, [], author.stderr);
    assert.equal(author.stderr, "");
  });

  test("a raw-JSON host's initialize: only capabilities, no processId (item 7)", { timeout: 30_000 }, async () => {
    const author = new Author();
    const init = await author.request("initialize", { capabilities: {} });
    assert.equal(typeof init.capabilities.experimental.contextSidecar.protocolVersion, "number");
    await author.connection.sendNotification("initialized", {});
    assert.equal(typeof (await author.request("server/ping", {})).time, "string");
    assert.equal(author.child.exitCode, null, "the sidecar died after answering initialize");
    assert.equal(await author.shutdown(), 0);
    assert.equal(author.stderr, "");
  });
});
