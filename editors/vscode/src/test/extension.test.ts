// The packaged extension's code, dist/extension.js (esbuild's bundle of the extension and the
// host library), activated with a stub `vscode` module against the real sidecar: the commands
// register, assemble fills the status bar, and a scripted run's approval/request is answered
// through the extension's approval handler with each choice of its quick pick.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";

import { removeTmp, ui, type QuickPickCall } from "./vscodeStub";
import type { ContextSidecarApi } from "../extension";
import type { RunEvent, SidecarHost } from "../host";

// The bundle itself, not a fresh compile of the sources: what the .vsix ships.
const BUNDLE = path.resolve(__dirname, "..", "extension.js");
const extension = require(BUNDLE) as typeof import("../extension");

const READ = (p: string) => ({ name: "read_file", arguments: { path: p } });
let api: ContextSidecarApi;
let host: SidecarHost;
const events: RunEvent[] = [];

before(() => {
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
async function run(script: Record<string, unknown>): Promise<{ status: unknown; results: boolean[]; texts: string[] }> {
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
  return { status: completed.payload["status"], results, texts };
}

describe("the bundled extension against the real sidecar", () => {
  test("activate registers every command and assemble shows the context usage", async () => {
    for (const id of ["start", "stop", "newSession", "assemble", "run", "showDashboard", "showSnapshot", "cancelRun"]) {
      assert.ok(ui.commands.has(`contextSidecar.${id}`), `contextSidecar.${id} not registered`);
    }
    await ui.commands.get("contextSidecar.assemble")!();
    assert.deepEqual(ui.errors, []);
    assert.match(ui.statusItem.text, /^ctx \d+(\.\d)?k?\/\d+(\.\d+)?[kM]?$/);
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
  });

  test("stop: the status bar says so and the sidecar is gone", async () => {
    const pid = host.pid!;
    await ui.commands.get("contextSidecar.stop")!();
    assert.equal(ui.statusItem.text, "ctx (stopped)");
    assert.throws(() => process.kill(pid, 0), /ESRCH/);
    assert.deepEqual(ui.errors, []);
  });
});
