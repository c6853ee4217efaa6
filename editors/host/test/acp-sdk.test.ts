// An ACP editor's side, not ours: the official TypeScript SDK (`@agentclientprotocol/sdk`, its
// client app over `ndJsonStream`) driving `$SIDECAR_PYTHON -m sidecar acp --store <fresh dir>`
// with the scripted model (issue 13). Every message the SDK hands us has passed its own schema,
// and the scenario test checks every raw message the agent wrote against that schema (the SDK's
// zod models) unchanged: nothing it does not know, nothing it had to salvage.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

import { client, ndJsonStream, PROTOCOL_VERSION, RequestError } from "@agentclientprotocol/sdk";
import type { ActiveSession, ClientCapabilities, ClientContext, SessionUpdate, Stream } from "@agentclientprotocol/sdk";
import { PYTHON, REPO } from "./repo.js";

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), "sidecar-acp-sdk-"));
const children = new Set<ChildProcess>();

after(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  fs.rmSync(TMP, { recursive: true, force: true });
});

/** `context-sidecar acp` as an editor starts it: a child process, ACP on its stdio. */
function startAgent(
  script: object,
  existingStore?: string,
): { child: ChildProcess; exited: Promise<number | null>; stderr: () => string; store: string } {
  const store = existingStore ?? fs.mkdtempSync(path.join(TMP, "store-"));
  const scriptFile = path.join(TMP, `script-${path.basename(store)}-${Date.now()}.json`);
  fs.writeFileSync(scriptFile, JSON.stringify(script));
  const child = spawn(PYTHON, ["-m", "sidecar", "acp", "--store", store, "--script", scriptFile], {
    cwd: REPO,
    stdio: ["pipe", "pipe", "pipe"],
  });
  children.add(child);
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exited, stderr: () => stderr, store };
}

/** The updates of one prompt turn, up to its stop message. */
async function turn(session: ActiveSession, onUpdate?: (u: SessionUpdate) => void): Promise<[SessionUpdate[], string]> {
  const updates: SessionUpdate[] = [];
  for (;;) {
    const message = await session.nextUpdate();
    if (message.kind === "stop") return [updates, message.stopReason];
    updates.push(message.update);
    onUpdate?.(message.update);
  }
}

/** Prompt a 400-delta answer and cancel at its first chunk: the prompt answers `cancelled`
 * (never an error) with part of the answer streamed. */
async function cancelMidStream(ctx: ClientContext, session: ActiveSession, prompt: string): Promise<void> {
  const streaming = session.prompt(prompt);
  let cancelled = false;
  const [partial, stop] = await turn(session, (u) => {
    if (!cancelled && u.sessionUpdate === "agent_message_chunk") {
      cancelled = true;
      void ctx.notify("session/cancel", { sessionId: session.sessionId });
    }
  });
  assert.equal(stop, "cancelled");
  assert.equal((await streaming).stopReason, "cancelled");
  assert.ok(text(partial).length > 0 && text(partial).length < 400, text(partial));
}

function text(updates: SessionUpdate[]): string {
  return updates
    .map((u) => (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text" ? u.content.text : ""))
    .join("");
}

describe("the official ACP TypeScript SDK against `context-sidecar acp`", () => {
  test("initialize, session/new, a streamed answer, a cancel", { timeout: 60_000 }, async () => {
    const agent = startAgent({
      rounds: [{ deltas: ["Hel", "lo ", "from the sidecar"] }, { deltas: Array(400).fill("x"), delayMs: 25 }],
    });
    const workspace = fs.mkdtempSync(path.join(TMP, "ws-"));
    const { stdin, stdout } = agent.child;
    assert.ok(stdin && stdout);
    const stream = ndJsonStream(
      Writable.toWeb(stdin) as WritableStream<Uint8Array>,
      Readable.toWeb(stdout) as ReadableStream<Uint8Array>,
    );
    const app = client({ name: "sdk-node-test" });

    await app.connectWith(stream, async (ctx) => {
      const init = await ctx.request("initialize", {
        protocolVersion: PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: { name: "sdk-node-test", version: "0" },
      });
      assert.equal(init.protocolVersion, 1);
      assert.equal(init.agentInfo?.name, "context-sidecar");
      assert.equal(init.agentCapabilities?.loadSession, true);

      const session = await ctx.buildSession(workspace).start();
      assert.match(session.sessionId, /\S/);

      // a scripted answer: agent_message_chunk per delta, then end_turn
      const answered = session.prompt("hi");
      const [updates, stop] = await turn(session);
      assert.equal(stop, "end_turn");
      assert.equal((await answered).stopReason, "end_turn");
      // the commands are advertised once after session/new (sent after its answer: it may
      // come before or among the prompt's updates); one usage_update per model call
      const kinds = updates.map((u) => u.sessionUpdate);
      assert.equal(kinds.filter((k) => k === "available_commands_update").length, 1);
      assert.deepEqual(
        kinds.filter((k) => k !== "available_commands_update"),
        ["agent_message_chunk", "agent_message_chunk", "agent_message_chunk", "usage_update"],
      );
      assert.equal(text(updates), "Hello from the sidecar");

      // cancel once the answer streams: the prompt answers cancelled, not an error
      await cancelMidStream(ctx, session, "talk for a while");
      session.dispose();
    });
    agent.child.stdin?.end();
    assert.equal(await agent.exited, 0, agent.stderr());
  });
});

// --- the acceptance scenario: one session through every step ------------------------------------

type Zod = { safeParse(value: unknown): { success: boolean; data?: unknown; error?: unknown } };
type Raw = { id?: unknown; method?: string; params?: unknown; result?: unknown; error?: unknown };

/** The SDK's own schema (its zod models; the package exports the types, not the models): the
 * unstable one, a superset of the stable one, because the agent speaks ACP's unstable protocol
 * for `session/fork` (its `sessionCapabilities.fork` is in no stable schema yet). */
async function sdkSchema(): Promise<Record<string, Zod>> {
  const file = path.join(REPO, "editors/host/node_modules/@agentclientprotocol/sdk/dist/v1/unstable/schema/zod.gen.js");
  return (await import(pathToFileURL(file).href)) as Record<string, Zod>;
}

/** A stream for the SDK, with every line each way recorded as parsed JSON. */
function tappedStream(child: ChildProcess, sent: Raw[], received: Raw[]): Stream {
  const { stdin, stdout } = child;
  assert.ok(stdin && stdout);
  const writer = (Writable.toWeb(stdin) as WritableStream<Uint8Array>).getWriter();
  const decoder = new TextDecoder();
  const lines = (into: Raw[]) => {
    let pending = "";
    return (chunk: Uint8Array) => {
      pending += decoder.decode(chunk, { stream: true });
      const parts = pending.split("\n");
      pending = parts.pop() ?? "";
      for (const line of parts) if (line.trim()) into.push(JSON.parse(line) as Raw);
    };
  };
  const recordSent = lines(sent);
  const output = new WritableStream<Uint8Array>({
    async write(chunk) {
      recordSent(chunk);
      await writer.write(chunk);
    },
    async close() {
      await writer.close();
    },
  });
  const [forSdk, forTap] = (Readable.toWeb(stdout) as ReadableStream<Uint8Array>).tee();
  const recordReceived = lines(received);
  void (async () => {
    for await (const chunk of forTap as unknown as AsyncIterable<Uint8Array>) recordReceived(chunk);
  })();
  return ndJsonStream(output, forSdk);
}

/** Everything in `raw` came through the schema unchanged (the schema may add its defaults,
 * such as `auth: {}`; a field it does not know, or salvaged, would be missing or different). */
function keptWhole(raw: unknown, parsed: unknown, where: string): void {
  if (Array.isArray(raw)) {
    assert.ok(Array.isArray(parsed) && parsed.length === raw.length, `${where}: array changed`);
    raw.forEach((item, i) => keptWhole(item, (parsed as unknown[])[i], `${where}[${i}]`));
  } else if (raw !== null && typeof raw === "object") {
    assert.ok(parsed !== null && typeof parsed === "object", `${where}: not an object`);
    for (const [key, value] of Object.entries(raw)) {
      assert.ok(key in parsed, `${where}.${key}: unknown to the schema`);
      keptWhole(value, (parsed as Record<string, unknown>)[key], `${where}.${key}`);
    }
  } else {
    assert.equal(parsed, raw, where);
  }
}

/** Every request/notification the agent sent and every answer it gave, as the schema has it. */
async function assertSchema(sent: Raw[], received: Raw[]): Promise<number> {
  const z = await sdkSchema();
  const params: Record<string, string> = {
    "session/update": "zSessionNotification",
    "session/request_permission": "zRequestPermissionRequest",
    "fs/read_text_file": "zReadTextFileRequest",
    "fs/write_text_file": "zWriteTextFileRequest",
    "terminal/create": "zCreateTerminalRequest",
    "terminal/output": "zTerminalOutputRequest",
    "terminal/wait_for_exit": "zWaitForTerminalExitRequest",
    "terminal/release": "zReleaseTerminalRequest",
    "terminal/kill": "zKillTerminalRequest",
  };
  const results: Record<string, string> = {
    initialize: "zInitializeResponse",
    "session/new": "zNewSessionResponse",
    "session/load": "zLoadSessionResponse",
    "session/prompt": "zPromptResponse",
    "session/set_mode": "zSetSessionModeResponse",
    "session/set_config_option": "zSetSessionConfigOptionResponse",
  };
  const asked = new Map(sent.filter((m) => m.method !== undefined && m.id !== undefined).map((m) => [m.id, m.method]));
  let checked = 0;
  const check = (name: string | undefined, value: unknown, what: string) => {
    assert.ok(name, `no schema for ${what}`);
    const model = z[name];
    assert.ok(model, name);
    const parsed = model.safeParse(value);
    assert.ok(parsed.success, `${what}: ${String(parsed.error)}`);
    keptWhole(value, parsed.data, what);
    checked += 1;
  };
  for (const message of received) {
    if (message.method !== undefined) check(params[message.method], message.params, message.method);
    else if ("result" in message) check(results[String(asked.get(message.id))], message.result, `answer to ${String(asked.get(message.id))}`);
  }
  return checked;
}

function call(name: string, id: string, args: object): object {
  return { toolCalls: [{ name, id, arguments: args }] };
}

function plan(id: string, ...statuses: string[]): object {
  const steps = ["read a.py", "write notes", "run the check", "add the numbers"];
  return call("update_plan", id, { entries: statuses.map((status, i) => ({ content: steps[i], status })) });
}

/** An editor's side of `fs/*`, `terminal/*` and permission requests, over real processes. */
class TestEditor {
  readonly asked: string[] = [];
  readonly reads: string[] = [];
  readonly killed: string[] = [];
  readonly released: string[] = [];
  private readonly terminals = new Map<string, { child: ChildProcess; output: string; exit: Promise<number | null> }>();
  terminalStarted: () => void = () => {};

  constructor(
    private readonly buffers: Map<string, string>,
    private readonly choices: string[],
  ) {}

  app() {
    return client({ name: "sdk-node-editor" })
      .onRequest("session/request_permission", ({ params }) => {
        this.asked.push(params.toolCall.toolCallId);
        const kind = this.choices.shift();
        const option = params.options.find((o) => o.kind === kind);
        assert.ok(option, `no ${kind} option`);
        return { outcome: { outcome: "selected", optionId: option.optionId } };
      })
      .onRequest("fs/read_text_file", ({ params }) => {
        this.reads.push(params.path);
        const buffer = this.buffers.get(params.path);
        if (buffer !== undefined) return { content: buffer };
        if (!fs.existsSync(params.path)) throw RequestError.resourceNotFound(params.path);
        return { content: fs.readFileSync(params.path, "utf8") };
      })
      .onRequest("fs/write_text_file", ({ params }) => {
        fs.writeFileSync(params.path, params.content);
        this.buffers.delete(params.path);
        return {};
      })
      .onRequest("terminal/create", ({ params }) => {
        const child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? undefined, stdio: ["ignore", "pipe", "pipe"] });
        const terminalId = `term-${this.terminals.size + 1}`;
        const entry = { child, output: "", exit: new Promise<number | null>((r) => child.on("exit", (code) => r(code))) };
        child.stdout?.on("data", (d: Buffer) => (entry.output += d.toString()));
        this.terminals.set(terminalId, entry);
        this.terminalStarted();
        return { terminalId };
      })
      .onRequest("terminal/wait_for_exit", async ({ params }) => {
        const entry = this.terminals.get(params.terminalId);
        assert.ok(entry);
        const code = await entry.exit;
        return { exitCode: code, signal: entry.child.signalCode };
      })
      .onRequest("terminal/output", ({ params }) => {
        const entry = this.terminals.get(params.terminalId);
        assert.ok(entry);
        return { output: entry.output, truncated: false, exitStatus: { exitCode: entry.child.exitCode } };
      })
      .onRequest("terminal/kill", ({ params }) => {
        this.killed.push(params.terminalId);
        this.terminals.get(params.terminalId)?.child.kill("SIGKILL");
        return {};
      })
      .onRequest("terminal/release", ({ params }) => {
        this.released.push(params.terminalId);
        return {};
      });
  }
}

const EDITOR_CAPABILITIES: ClientCapabilities = { fs: { readTextFile: true, writeTextFile: true }, terminal: true };

async function initializeEditor(ctx: ClientContext): Promise<void> {
  const init = await ctx.request("initialize", {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: EDITOR_CAPABILITIES,
    clientInfo: { name: "sdk-node-editor", version: "0" },
  });
  assert.equal(init.protocolVersion, 1);
}

describe("the acceptance scenario through the official TypeScript SDK", () => {
  test("MCP, unsaved buffer, writes allowed and rejected, terminal, plan, cancels, /context, load", { timeout: 120_000 }, async () => {
    const workspace = fs.mkdtempSync(path.join(TMP, "ws-"));
    const aPy = path.join(workspace, "a.py");
    fs.writeFileSync(aPy, "on disk\n");
    const pidFile = path.join(TMP, `calc-${path.basename(workspace)}.pid`);
    const calc = { name: "calc", command: PYTHON, args: [path.join(REPO, "tests/data/mcp_calc_server.py"), pidFile], env: [] };
    const script = {
      rounds: [
        plan("p1", "in_progress", "pending", "pending", "pending"),
        call("read_file", "r1", { path: "a.py" }),
        call("write_file", "w1", { path: "notes.md", content: "read it\n" }),
        call("write_file", "w2", { path: "a.py", content: "clobbered\n" }),
        call("run_command", "t1", { command: "echo from-terminal" }),
        call("calc__add", "m1", { a: 19, b: 23 }),
        plan("p2", "completed", "completed", "completed", "completed"),
        { text: "all done" },
        { deltas: Array(400).fill("x"), delayMs: 25 },
        call("run_command", "t2", { command: "exec sleep 60" }),
      ],
    };
    const agent = startAgent(script);
    const store = agent.store;
    const editor = new TestEditor(new Map([[aPy, "unsaved buffer\n"]]), ["allow_once", "reject_once", "allow_once", "allow_once", "allow_once"]);
    const sent: Raw[] = [];
    const received: Raw[] = [];

    const sessionId = await editor.app().connectWith(tappedStream(agent.child, sent, received), async (ctx) => {
      await initializeEditor(ctx);
      const session = await ctx.buildSession({ cwd: workspace, mcpServers: [calc] }).start();
      const created = session.newSessionResponse;
      assert.deepEqual(
        (created.configOptions ?? []).map((o) => [o.id, o.currentValue]),
        [["model", "default"], ["approval", "ask"]],
      );
      assert.equal(session.modes?.currentModeId, "ask");

      // one prompt: plan, read the unsaved buffer, write twice (allowed, rejected), a command,
      // the MCP tool, the finished plan, the answer
      const answered = session.prompt("do the task");
      const [live, stop] = await turn(session);
      assert.equal(stop, "end_turn");
      assert.equal((await answered).stopReason, "end_turn");
      const plans = live.flatMap((u) => (u.sessionUpdate === "plan" ? [u.entries.map((e) => e.status)] : []));
      assert.deepEqual(plans, [["in_progress", "pending", "pending", "pending"], Array(4).fill("completed")]);
      const started = live.flatMap((u) => (u.sessionUpdate === "tool_call" ? [u.toolCallId] : []));
      assert.deepEqual(started, ["r1", "w1", "w2", "t1", "m1"]);
      const finals = new Map<string, SessionUpdate & { sessionUpdate: "tool_call_update" }>();
      for (const u of live) if (u.sessionUpdate === "tool_call_update" && u.status !== "in_progress") finals.set(u.toolCallId, u);
      const textOf = (id: string) =>
        (finals.get(id)?.content ?? []).map((c) => (c.type === "content" && c.content.type === "text" ? c.content.text : "")).join("");
      assert.equal(textOf("r1"), "```python\n1\tunsaved buffer\n```"); // the editor's buffer, not the disk; fenced for the editor
      assert.deepEqual(editor.reads.slice(0, 1), [aPy]);
      assert.deepEqual(editor.asked, ["w1", "w2", "t1", "m1"]);
      assert.equal(fs.readFileSync(path.join(workspace, "notes.md"), "utf8"), "read it\n");
      assert.equal(fs.readFileSync(aPy, "utf8"), "on disk\n");
      assert.equal(finals.get("w2")?.status, "failed");
      assert.match(textOf("w2"), /the user rejected it/);
      assert.equal(finals.get("t1")?.status, "completed");
      assert.deepEqual(editor.released, ["term-1"]);
      assert.equal(textOf("m1"), "42");
      assert.equal(text(live), "all done");

      // the approval mode, as a config option
      const changed = await ctx.request("session/set_config_option", { sessionId: session.sessionId, configId: "approval", value: "ask" });
      assert.deepEqual(changed.configOptions.map((o) => [o.id, o.currentValue]), [["model", "default"], ["approval", "ask"]]);

      // cancel mid-stream: cancelled, never an error
      await cancelMidStream(ctx, session, "talk");

      // cancel while a command runs: the terminal is killed, then released
      const commandStarted = new Promise<void>((resolve) => (editor.terminalStarted = resolve));
      const waiting = session.prompt("wait");
      await commandStarted;
      await ctx.notify("session/cancel", { sessionId: session.sessionId });
      const [, waitStop] = await turn(session);
      assert.equal(waitStop, "cancelled");
      assert.equal((await waiting).stopReason, "cancelled");
      assert.deepEqual(editor.killed, ["term-2"]);
      assert.deepEqual(editor.released, ["term-1", "term-2"]);

      // /context: the dashboard as markdown in the chat
      const shown = session.prompt("/context");
      const [dashboard, contextStop] = await turn(session);
      assert.equal(contextStop, "end_turn");
      await shown;
      assert.match(text(dashboard), /\| transcript \|/);
      session.dispose();
      return session.sessionId;
    });
    agent.child.stdin?.end();
    assert.equal(await agent.exited, 0, agent.stderr());
    assert.ok((await assertSchema(sent, received)) > 30);

    // a new process: session/load replays the history before it answers
    const again = startAgent({ rounds: [] }, store);
    const replay: SessionUpdate[] = [];
    const loader = client({ name: "sdk-node-loader" }).onNotification("session/update", ({ params }) => {
      if (params.sessionId === sessionId) replay.push(params.update);
    });
    const sent2: Raw[] = [];
    const received2: Raw[] = [];
    await loader.connectWith(tappedStream(again.child, sent2, received2), async (ctx) => {
      await initializeEditor(ctx);
      const loaded = await ctx.request("session/load", { sessionId, cwd: workspace, mcpServers: [] });
      assert.equal(loaded.modes?.currentModeId, "ask");
    });
    again.child.stdin?.end();
    assert.equal(await again.exited, 0, again.stderr());
    await assertSchema(sent2, received2);
    const users = replay.flatMap((u) => (u.sessionUpdate === "user_message_chunk" && u.content.type === "text" ? [u.content.text] : []));
    assert.deepEqual(users, ["do the task", "talk", "wait"]);
    const replayedPlans = replay.filter((u) => u.sessionUpdate === "plan").length;
    assert.equal(replayedPlans, 2);
    const replayedCalls = replay.flatMap((u) => (u.sessionUpdate === "tool_call" ? [u.toolCallId] : []));
    assert.deepEqual(replayedCalls, ["r1", "w1", "w2", "t1", "m1", "t2"]);
    assert.equal(text(replay.filter((u) => u.sessionUpdate === "agent_message_chunk")), "all done");
  });
});
