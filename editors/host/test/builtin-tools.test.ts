// Issue 18, acceptance (c): a scripted coding task through `serve` with the built-in tools,
// driven from this library against the real sidecar. A repository with a bug and a failing
// test: the model lists, greps (a .gitignore'd copy is not found), reads, edits and runs the
// tests — green at the end. The look-around calls ask nothing; the edit and the command come
// as `approval/request` with the diff and the command; every call's events show it.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import {
  SidecarHost,
  approvalSummary,
  planUpdated,
  toolApproval,
  toolCall,
  toolResult,
  type ApprovalRequestParams,
  type RunEvent,
} from "../src/index.js";
import { PYTHON, REPO } from "./repo.js";

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), "sidecar-builtin-test-"));
after(() => fs.rmSync(TMP, { recursive: true, force: true }));

function fixtureRepo(root: string): void {
  const write = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  };
  write("calc/__init__.py", "");
  write("calc/add.py", "def add(a, b):\n    return a - b\n");
  write("tests/test_add.py", "from calc.add import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n");
  write("build/calc/add.py", "def add(a, b):\n    return a - b\n");
  write(".gitignore", "build/\n");
  write("big.py", Array.from({ length: 5000 }, (_, i) => `x_${i} = ${i}  # TODO\n`).join(""));
  write("many.txt", Array.from({ length: 20000 }, (_, i) => `needle ${i}\n`).join(""));
}

const call = (name: string, id: string, args: Record<string, unknown> = {}) => ({
  toolCalls: [{ id, name, arguments: args }],
});
const PLAN = [
  { content: "find the bug", status: "in_progress", priority: "high" },
  { content: "fix it and run the tests", status: "pending" },
];
const textOf = (content: { [k: string]: unknown }[] | null | undefined) =>
  (content ?? []).map((p) => String(p["text"] ?? "")).join("");

test("a coding task with the built-in tools, from the host library", async () => {
  const repo = path.join(TMP, "repo");
  fixtureRepo(repo);
  const host = await SidecarHost.start({
    command: [PYTHON, "-m", "sidecar", "serve"],
    store: fs.mkdtempSync(path.join(TMP, "store-")),
    cwd: REPO,
    stderr: "pipe",
  });
  try {
    const asked: ApprovalRequestParams[] = [];
    host.onApproval((params) => {
      asked.push(params);
      return { approved: true };
    });
    host.onToolExecute(() => ({ content: [{ type: "text", text: "no host tools here" }], isError: true }));
    const events: RunEvent[] = [];
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    host.onRunEvent((e) => {
      events.push(e);
      if (e.type === "run.completed") done();
    });
    const testCmd = `${PYTHON} -m pytest -q -p no:cacheprovider tests`;
    const session = await host.request("session/create", { title: "fix add", workspaceRoots: [repo] });
    await host.request("run/start", {
      sessionId: session.sessionId,
      userTurn: [{ type: "text", text: "fix the failing test" }],
      builtinTools: {},
      maxRounds: 20,
      script: {
        rounds: [
          call("update_plan", "p1", { entries: PLAN }),
          call("list_dir", "l1"),
          call("grep", "g1", { pattern: "return a - b" }),
          call("read_file", "r1", { path: "calc/add.py" }),
          call("edit_file", "e1", { path: "calc/add.py", old_text: "a - b", new_text: "a + b" }),
          call("run_command", "c1", { command: testCmd }),
          call("read_file", "r2", { path: "big.py" }),
          call("grep", "g2", { pattern: "needle" }),
          { text: "fixed" },
        ],
      },
    });
    await finished;
    assert.equal(events.at(-1)?.payload["status"], "completed");

    // the edit and the command were asked, with what they would do; nothing else was
    assert.deepEqual(asked.map((a) => a.callId), ["e1", "c1"]);
    assert.equal(approvalSummary(asked[0]!), "Edit calc/add.py");
    assert.equal(asked[0]!.change?.newText, "def add(a, b):\n    return a + b\n");
    assert.equal(approvalSummary(asked[1]!), `Run \`${testCmd}\` in .`);

    const calls = events.flatMap((e) => toolCall(e) ?? []);
    const approvals = events.flatMap((e) => toolApproval(e) ?? []);
    const results = new Map(events.flatMap((e) => toolResult(e) ?? []).map((r) => [r.callId, r]));
    assert.deepEqual(calls.map((c) => [c.callId, c.builtin, c.effect]), [
      ["p1", true, "read"],
      ["l1", true, "read"],
      ["g1", true, "read"],
      ["r1", true, "read"],
      ["e1", true, "edit"],
      ["c1", true, "execute"],
      ["r2", true, "read"],
      ["g2", true, "read"],
    ]);
    assert.deepEqual(approvals.map((a) => [a.callId, a.verdict, a.approved]), [
      ["e1", "ask", true],
      ["c1", "ask", true],
    ]);
    // the todo list: an event with the whole list, typed, so no host parses tool arguments
    const plans = events.flatMap((e) => planUpdated(e) ?? []);
    assert.deepEqual(plans, [{ callId: "p1", entries: [PLAN[0], { ...PLAN[1], priority: "medium" }] }]);
    assert.equal(textOf(results.get("p1")?.content), "plan updated (2 entries)");
    const listing = textOf(results.get("l1")?.content);
    assert.ok(listing.includes("calc/") && !listing.includes("build"), listing);
    assert.deepEqual(textOf(results.get("g1")?.content).split("\n"), [
      "1 match in 1 file",
      "calc/add.py: 1 match",
      "  2:     return a - b",
    ]);
    assert.equal(results.get("c1")?.exitCode, 0);
    assert.match(textOf(results.get("c1")?.content), /1 passed/);
    assert.equal(fs.readFileSync(path.join(repo, "calc/add.py"), "utf8"), "def add(a, b):\n    return a + b\n");
    // bounded, and saying how to go on
    assert.equal(results.get("r2")?.truncated, true);
    assert.match(textOf(results.get("r2")?.content), /of 5000 shown; read on with offset=/);
    assert.equal(results.get("g2")?.truncated, true);
    assert.match(textOf(results.get("g2")?.content), /^20000 matches in 1 file/);
  } finally {
    await host.close();
  }
});
