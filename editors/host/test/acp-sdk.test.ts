// An ACP editor's side, not ours: the official TypeScript SDK (`@agentclientprotocol/sdk`, its
// client app over `ndJsonStream`) driving `$SIDECAR_PYTHON -m sidecar acp --store <fresh dir>`
// with the scripted model (issue 13). Every message the SDK hands us has passed its own schema.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";

import { client, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";
import type { ActiveSession, SessionUpdate } from "@agentclientprotocol/sdk";
import { PYTHON, REPO } from "./repo.js";

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), "sidecar-acp-sdk-"));
const children = new Set<ChildProcess>();

after(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  fs.rmSync(TMP, { recursive: true, force: true });
});

/** `context-sidecar acp` as an editor starts it: a child process, ACP on its stdio. */
function startAgent(script: object): { child: ChildProcess; exited: Promise<number | null>; stderr: () => string } {
  const store = fs.mkdtempSync(path.join(TMP, "store-"));
  const scriptFile = path.join(store, "..", `script-${path.basename(store)}.json`);
  fs.writeFileSync(scriptFile, JSON.stringify(script));
  const child = spawn(PYTHON, ["-m", "sidecar", "acp", "--store", store, "--script", scriptFile], {
    cwd: REPO,
    stdio: ["pipe", "pipe", "pipe"],
  });
  children.add(child);
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exited, stderr: () => stderr };
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
      const streaming = session.prompt("talk for a while");
      let cancelled = false;
      const [partial, cancelStop] = await turn(session, (u) => {
        if (!cancelled && u.sessionUpdate === "agent_message_chunk") {
          cancelled = true;
          void ctx.notify("session/cancel", { sessionId: session.sessionId });
        }
      });
      assert.equal(cancelStop, "cancelled");
      assert.equal((await streaming).stopReason, "cancelled");
      assert.ok(text(partial).length > 0 && text(partial).length < 400, text(partial));
      session.dispose();
    });
    agent.child.stdin?.end();
    assert.equal(await agent.exited, 0, agent.stderr());
  });
});
