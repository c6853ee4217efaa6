// The packaged extension's code, dist/extension.js (esbuild's bundle of the extension and the
// host library), activated with a stub `vscode` module against the real sidecar: the commands
// register, assemble fills the status bar, and a scripted run's approval/request is answered
// through the extension's approval handler with each choice of its quick pick; on a session whose
// old tool results are masked (a small masking profile in `contextSidecar.assembly`), the status
// bar and the dashboard webview show the cache prediction, masking, the window and the diff, and
// *Recover* (its quick pick, and the page's button) brings a masked result back.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";

import { REPO as REPO_ROOT, changeSetting, removeTmp, ui, type QuickPickCall } from "./vscodeStub";
import { extension, until } from "./chatKit";
import type { ContextSidecarApi } from "../extension";
import {
  recoverableItems,
  type AssemblyDiff,
  type CacheAccounting,
  type ContextAssembleResult,
  type EntryInput,
  type RunEvent,
  type SidecarHost,
  type SnapshotDiff,
} from "../host";

// The bundle itself, not a fresh compile of the sources: what the .vsix ships.

const READ = (p: string) => ({ name: "read_file", arguments: { path: p } });
let api: ContextSidecarApi;
let host: SidecarHost;
const events: RunEvent[] = [];

/** `n` turns, each reading a file through a tool call whose result is ~800 tokens. */
function toolTurns(n: number): EntryInput[] {
  const entries: EntryInput[] = [];
  for (let i = 0; i < n; i++) {
    const callId = `masked_${i}`;
    entries.push(
      { kind: "message", role: "user", content: [{ type: "text", text: `step ${i}` }] },
      { kind: "message", role: "assistant", content: [{ type: "toolCall", callId, name: "read_file", arguments: { path: `src/m${i}.py` } }] },
      { kind: "message", role: "user", content: [{ type: "toolResult", callId, content: [{ type: "text", text: "code ".repeat(800) }] }] },
      { kind: "message", role: "assistant", content: [{ type: "text", text: `done ${i}` }] },
    );
  }
  return entries;
}

/** Whether the prompt shows a placeholder for the tool result of ledger item `itemId` (the
 *  placeholder names the id that brings it back). */
function placeholderIn(result: ContextAssembleResult, itemId: string): boolean {
  return JSON.stringify(result.messages).includes(itemId);
}

before(() => {
  // old tool results are masked once the newest 2,000 tokens of tool output are passed
  ui.settings["assembly"] = { masking: { protectTokens: 2000, batchTokens: 1000 } };
  // the extension's own read_file first (host tools, approvalRequired); built-in tools later
  ui.settings["builtinTools"] = "off";
  api = extension.activate({ subscriptions: [], extensionUri: { fsPath: path.resolve(__dirname, "..", "..") } } as never);
});

after(async () => {
  await extension.deactivate();
  removeTmp();
});

/** Answer every quick pick with the item whose label is `label`. */
function pick(label: string): void {
  ui.answerQuickPick = async (call) => call.items.find((item) => item.label === label);
}

/** Run a script through the extension's Run path; the run's tool results (isError) and texts. */
async function run(script: Record<string, unknown>): Promise<{ runId: string; status: unknown; results: boolean[]; texts: string[] }> {
  const runId = await api.startRun("what does the Makefile offer?", { script });
  const completed = await host.waitForCompletion(runId, 30_000);
  const mine = events.filter((e) => e.runId === runId);
  const results = mine.filter((e) => e.type === "tool.resultStored").map((e) => e.payload["isError"] === true);
  const seqs = mine.filter((e) => e.type === "tool.resultStored").map((e) => e.payload["seq"] as number);
  const texts: string[] = [];
  for (const seq of seqs) {
    const read = await host.request("session/read", { sessionId: mine[0]!.sessionId, afterSeq: seq - 1, limit: 1 });
    texts.push(JSON.stringify(read.entries[0]));
  }
  return { runId, status: completed.payload["status"], results, texts };
}

describe("the bundled extension against the real sidecar", () => {
  test("activate registers every command and assemble shows the context usage", async () => {
    for (const id of ["start", "stop", "newSession", "assemble", "run", "showDashboard", "showSnapshot", "cancelRun", "recover"]) {
      assert.ok(ui.commands.has(`contextSidecar.${id}`), `contextSidecar.${id} not registered`);
    }
    await ui.commands.get("contextSidecar.assemble")!();
    assert.deepEqual(ui.errors, []);
    // the session's first assembly: nothing can be read from the cache yet
    assert.match(ui.statusItem.text, /^ctx \d+(\.\d)?k?\/\d+(\.\d+)?[kM]? · 0% cached · \$\d+\.\d{4}$/);
    assert.equal(api.dashboard.cache?.againstPrevious, false);
    assert.equal(api.dashboard.diff, null);
    host = await api.host();
    host.onRunEvent((e) => events.push(e));
  });

  test("allow once: the quick pick names the tool and its arguments, the status bar shows the wait", async () => {
    pick("Allow once");
    ui.quickPicks.length = 0;
    const { status, results, texts } = await run({ rounds: [{ toolCalls: [READ("Makefile")] }, { text: "done" }] });
    assert.equal(status, "completed");
    assert.equal(ui.quickPicks.length, 1);
    const [call] = ui.quickPicks as [QuickPickCall];
    assert.match(call.options.title ?? "", /read_file/);
    assert.ok(call.items[0]?.detail?.includes('"path":"Makefile"'), JSON.stringify(call.items));
    assert.deepEqual(call.items.map((i) => i.label), ["Allow once", "Allow for this session", "Deny"]);
    assert.equal(call.statusText, "$(shield) approve read_file?");
    assert.deepEqual(results, [false]);
    assert.ok(texts[0]?.includes("host-test"), `the extension's read_file did not run: ${texts[0]}`);
    assert.doesNotMatch(ui.statusItem.text, /approve/);
  });

  test("deny: the tool does not run and the model is told why", async () => {
    pick("Deny");
    const { status, results, texts } = await run({ rounds: [{ toolCalls: [READ("Makefile")] }, { text: "ok" }] });
    assert.equal(status, "completed");
    assert.deepEqual(results, [true]);
    assert.ok(texts[0]?.includes("not approved: denied by the user"), texts[0]);
  });

  test("a cancel while asking withdraws the quick pick ($/cancelRequest cancels its token)", async () => {
    let shown!: () => void;
    const asked = new Promise<void>((resolve) => (shown = resolve));
    ui.quickPicks.length = 0;
    ui.answerQuickPick = (call) =>
      new Promise((resolve) => {
        call.token.onCancellationRequested(() => resolve(undefined));
        shown();
      });
    const runId = await api.startRun("wait for me", { script: { rounds: [{ toolCalls: [READ("Makefile")] }, { text: "never" }] } });
    await asked;
    assert.equal(api.approvals.pending.length, 1);
    assert.equal(ui.statusItem.text, "$(shield) approve read_file?");
    await ui.commands.get("contextSidecar.cancelRun")!();
    const completed = await host.waitForCompletion(runId, 30_000);
    assert.equal(completed.payload["status"], "cancelled");
    const [call] = ui.quickPicks as [QuickPickCall];
    const deadline = Date.now() + 10_000;
    while (!call.token.isCancellationRequested || api.approvals.pending.length > 0) {
      assert.ok(Date.now() < deadline, "the quick pick was not withdrawn");
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.doesNotMatch(ui.statusItem.text, /approve/);
  });

  test("allow for this session: asked once, then every call of the tool in the session runs", async () => {
    pick("Allow for this session");
    ui.quickPicks.length = 0;
    const first = await run({ rounds: [{ toolCalls: [READ("Makefile")] }, { toolCalls: [READ("README.md")] }, { text: "ok" }] });
    assert.deepEqual(first.results, [false, false]);
    const second = await run({ rounds: [{ toolCalls: [READ("pyproject.toml")] }, { text: "ok" }] });
    assert.deepEqual(second.results, [false]);
    assert.equal(ui.quickPicks.length, 1, "asked again in the same session");
    assert.ok(second.texts[0]?.includes("[project]"), second.texts[0]);

    // a run's last snapshot in the dashboard: its cache prediction (model.completed) and its diff
    const runEvents = events.filter((e) => e.runId === second.runId);
    const snapshotId = runEvents.filter((e) => e.type === "context.assembled").at(-1)!.payload["snapshotId"];
    const predicted = runEvents.filter((e) => e.type === "model.completed").at(-1)!.payload["predictedCache"] as CacheAccounting;
    await until("the run's snapshot diff", () => (api.dashboard.diff as SnapshotDiff | null)?.toSnapshot === snapshotId);
    const diff = api.dashboard.diff as SnapshotDiff;
    assert.ok(diff.fromSnapshot, "the run's second round has a snapshot before it");
    assert.deepEqual(api.dashboard.cache, predicted);
    assert.equal(predicted.againstPrevious, true);
    assert.match(ui.statusItem.text, /^ctx \S+\/\S+ · \d+% cached · \$\d+\.\d{4}$/);
  });

  test("status bar and webview show the cache prediction, masking, the window; Recover brings a masked result back", async () => {
    const sessionId = await api.session();
    await host.request("session/append", { sessionId, entries: toolTurns(8) });
    await ui.commands.get("contextSidecar.assemble")!();
    await ui.commands.get("contextSidecar.assemble")!(); // the same turn again: read from the cache
    assert.deepEqual(ui.errors, []);
    const cache = api.dashboard.cache!;
    assert.equal(cache.againstPrevious, true);
    assert.ok(cache.readTokens > 0 && cache.cost !== null && cache.cost !== undefined, JSON.stringify(cache));
    const share = Math.floor((cache.readTokens / cache.inputTokens) * 100);
    assert.match(ui.statusItem.text, new RegExp(`^ctx \\S+/\\S+ · ${share}% cached · \\$\\d+\\.\\d{4}$`));
    const shown = api.dashboard.snapshot as ContextAssembleResult;
    const masked = recoverableItems(shown.ledger);
    assert.ok(masked.length >= 4 && masked.every((i) => i.visibility === "masked"), JSON.stringify(masked));
    assert.equal(masked.length, shown.dashboard.masking?.maskedResults);
    const tooltip = ui.statusItem.tooltip;
    assert.ok(tooltip.includes(`cache: read ${cache.readTokens.toLocaleString("en-US")} · write`), tooltip);
    assert.ok(tooltip.includes(`masking: ${masked.length} tool results masked`), tooltip);
    assert.match(tooltip, /\nwindow: whole history; moves after [\d,]+ tokens/);
    assert.deepEqual((api.dashboard.diff as AssemblyDiff).ledgerChanges, []);

    // the webview is fed the same model
    await ui.commands.get("contextSidecar.showDashboard")!();
    const webview = ui.webview!;
    const last = (type: string): unknown => webview.posted.filter((m) => m.type === type).at(-1)?.data;
    assert.ok(webview.html.includes('data-testid="cache"') && webview.html.includes('"data-testid": "masked-row"'));
    assert.deepEqual(last("cache"), cache);
    assert.deepEqual(last("diff"), api.dashboard.diff);
    assert.equal((last("snapshot") as ContextAssembleResult).ledger.length, shown.ledger.length);

    // *Recover*: a quick pick of the masked results; the picked one is shown whole again
    ui.quickPicks.length = 0;
    ui.answerQuickPick = async (call) => call.items[0];
    await ui.commands.get("contextSidecar.recover")!();
    assert.deepEqual(ui.errors, []);
    const [call] = ui.quickPicks as [QuickPickCall];
    assert.deepEqual(call.items.map((i) => i.itemId), masked.map((i) => i.itemId));
    assert.match(call.items[0]!.label, /seq \d+/);
    const picked = masked[0]!;
    const after = api.dashboard.snapshot as ContextAssembleResult;
    assert.ok(!recoverableItems(after.ledger).some((i) => i.itemId === picked.itemId), "the recovered result is still masked");
    assert.equal(after.ledger.find((i) => i.itemId === picked.itemId)?.visibility, "visible");
    assert.ok(placeholderIn(shown, picked.itemId), `seq ${picked.fromSeq} was not masked`);
    assert.ok(!placeholderIn(after, picked.itemId), `seq ${picked.fromSeq} is still a placeholder`);
    const change = (api.dashboard.diff as AssemblyDiff).ledgerChanges.find((c) => c.itemId === picked.itemId);
    assert.deepEqual([change?.before, change?.after], ["masked", "visible"]);
    assert.ok(last("snapshot") === api.dashboard.snapshot, "the webview did not get the new assembly");

    // the page's recover button sends {type: "recover", itemId}
    const next = recoverableItems(after.ledger)[0]!;
    webview.send({ type: "recover", itemId: next.itemId });
    assert.ok(placeholderIn(after, next.itemId));
    await until("the page's recover", () => !placeholderIn(api.dashboard.snapshot as ContextAssembleResult, next.itemId));
    assert.deepEqual(ui.errors, []);
  });

  test("built-in tools: a listing runs unasked, a write asks with what it would do; denied, nothing is written", async () => {
    changeSetting("builtinTools", "ask");
    pick("Deny");
    ui.quickPicks.length = 0;
    const target = path.join(REPO_ROOT, "never-written-by-the-test.txt");
    const { status, runId } = await run({
      rounds: [
        { toolCalls: [{ id: "l1", name: "list_dir", arguments: { depth: 1 } }] },
        { toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "never-written-by-the-test.txt", content: "x\n" } }] },
        { text: "ok" },
      ],
    });
    changeSetting("builtinTools", "off");
    assert.equal(status, "completed");
    assert.equal(ui.quickPicks.length, 1, "only the write was asked");
    const [call] = ui.quickPicks as [QuickPickCall];
    assert.equal(call.options.title, "Context Sidecar: Create never-written-by-the-test.txt?");
    assert.equal(call.items[0]?.detail, "new file never-written-by-the-test.txt: +1 -0 lines");
    assert.ok(!fs.existsSync(target), "a denied write wrote nothing");
    const mine = events.filter((e) => e.runId === runId);
    const titles = mine.filter((e) => e.type === "tool.callRequested").map((e) => e.payload["title"]);
    assert.deepEqual(titles, ["List .", "Write never-written-by-the-test.txt"]);
    const approval = mine.find((e) => e.type === "tool.approval")!.payload;
    assert.deepEqual([approval["verdict"], approval["approved"]], ["ask", false]);
    const listing = mine.find((e) => e.type === "tool.resultStored" && e.payload["callId"] === "l1")!.payload;
    assert.match(JSON.stringify(listing["content"]), /sidecar\//);
    // the run output shows the built-in calls, their approval and their results
    const output = ui.outputLines.join("\n");
    assert.match(output, /\[List \.\]/);
    assert.match(output, /\[write_file: asked \(ask mode\), not approved: denied by the user\]/);
  });

  test("stop: the status bar says so and the sidecar is gone", async () => {
    const pid = host.pid!;
    await ui.commands.get("contextSidecar.stop")!();
    assert.equal(ui.statusItem.text, "ctx (stopped)");
    assert.throws(() => process.kill(pid, 0), /ESRCH/);
    assert.deepEqual(ui.errors, []);
  });
});
