// The extension's approval handler with an injected `ask`, on the host library as the extension
// bundles it, against the real sidecar: each answer reaches the run, "allow for this session"
// holds for that session only, and a request the sidecar withdraws (tool timeout) aborts the ask.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";

import { PYTHON, REPO, removeTmp, TMP } from "./vscodeStub";
import { Approvals, REASONS, type ApprovalChoice } from "../approvals";
import { SidecarHost, type ApprovalRequestParams, type RunEvent } from "../host";

const hosts: SidecarHost[] = [];
after(async () => {
  await Promise.all(hosts.map((h) => h.close()));
  removeTmp();
});

const TOOLS = [{ name: "read_file", parameters: { type: "object", properties: { path: { type: "string" } } } }];
const READ = (p: string) => ({ name: "read_file", arguments: { path: p } });

async function setUp(answer: (request: ApprovalRequestParams, signal: AbortSignal) => Promise<ApprovalChoice | undefined>) {
  const host = await SidecarHost.start({
    command: [PYTHON, "-m", "sidecar", "serve"],
    store: fs.mkdtempSync(path.join(TMP, "store-")),
    cwd: REPO,
  });
  hosts.push(host);
  const asked: ApprovalRequestParams[] = [];
  const pendingSeen: number[] = [];
  const approvals = new Approvals({
    ask: (request, signal) => {
      asked.push(request);
      return answer(request, signal);
    },
    sessionOf: async (runId) => (await host.request("run/get", { runId })).sessionId,
    onPendingChanged: (pending) => pendingSeen.push(pending.length),
  });
  host.onApproval((params, signal) => approvals.handle(params, signal));
  const executed: string[] = [];
  host.onToolExecute(({ arguments: args }) => {
    executed.push(String(args["path"]));
    return { content: [{ type: "text", text: `contents of ${String(args["path"])}` }] };
  });
  const events: RunEvent[] = [];
  host.onRunEvent((e) => events.push(e));
  const run = async (sessionId: string, rounds: object[], extra: object = {}) => {
    const { runId } = await host.request("run/start", {
      sessionId,
      userTurn: [{ type: "text", text: "go" }],
      tools: TOOLS,
      approvalRequired: ["read_file"],
      script: { rounds },
      ...extra,
    });
    const completed = await host.waitForCompletion(runId, 30_000);
    const stored = events.filter((e) => e.runId === runId && e.type === "tool.resultStored");
    return { status: completed.payload["status"], errors: stored.map((e) => e.payload["isError"] === true) };
  };
  const session = async () => (await host.request("session/create", { title: "approvals" })).sessionId;
  return { host, approvals, asked, pendingSeen, executed, run, session };
}

test("once, deny and dismiss reach the run; the pending list rises and falls", async () => {
  const answers: (ApprovalChoice | undefined)[] = ["once", "deny", undefined];
  const t = await setUp(async () => answers.shift());
  const sessionId = await t.session();
  const result = await t.run(sessionId, [
    { toolCalls: [READ("a")] },
    { toolCalls: [READ("b")] },
    { toolCalls: [READ("c")] },
    { text: "done" },
  ]);
  assert.equal(result.status, "completed");
  assert.deepEqual(result.errors, [false, true, true]);
  assert.deepEqual(t.executed, ["a"]);
  assert.deepEqual(t.asked.map((r) => r.arguments["path"]), ["a", "b", "c"]);
  assert.deepEqual(t.pendingSeen, [1, 0, 1, 0, 1, 0]);
  const read = await t.host.request("session/read", { sessionId, beforeSeq: 10 ** 6, limit: 10 });
  const text = JSON.stringify(read.entries);
  assert.ok(text.includes(`not approved: ${REASONS.denied}`), text);
  assert.ok(text.includes(`not approved: ${REASONS.dismissed}`), text);
});

test("allow for this session holds in that session, not in another", async () => {
  const t = await setUp(async () => "session");
  const first = await t.session();
  assert.deepEqual((await t.run(first, [{ toolCalls: [READ("a")] }, { toolCalls: [READ("b")] }, { text: "ok" }])).errors, [false, false]);
  assert.deepEqual((await t.run(first, [{ toolCalls: [READ("c")] }, { text: "ok" }])).errors, [false]);
  assert.equal(t.asked.length, 1);
  const other = await t.session();
  await t.run(other, [{ toolCalls: [READ("d")] }, { text: "ok" }]);
  assert.equal(t.asked.length, 2, "another session was not asked");
  assert.ok(t.approvals.allowedForSession(first, "read_file") && t.approvals.allowedForSession(other, "read_file"));
});

test("a request the sidecar withdraws (tool timeout) aborts the ask and clears the pending list", async () => {
  let aborted = false;
  const t = await setUp(
    (_request, signal) =>
      new Promise((resolve) => {
        signal.addEventListener("abort", () => {
          aborted = true;
          resolve(undefined);
        });
      }),
  );
  const sessionId = await t.session();
  const result = await t.run(sessionId, [{ toolCalls: [READ("a")] }, { text: "gave up" }], { toolTimeoutMs: 500 });
  assert.equal(result.status, "completed");
  assert.deepEqual(result.errors, [true]);
  assert.ok(aborted, "the ask's signal did not abort");
  assert.deepEqual(t.approvals.pending, []);
  assert.deepEqual(t.executed, []);
});
