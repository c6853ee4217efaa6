// The chat's pure parts, without a sidecar: the transcript of stored entries, a run's items
// from its events, the usage line, the webview message check, slash command parsing, the
// numbered read of a buffer.
import { test } from "node:test";
import assert from "node:assert/strict";

import "./vscodeStub";
import { OUTPUT_BOUND, withResult, newCard } from "../chat/cards";
import { isFromWebview, type ToolCard } from "../chat/protocol";
import { RunItems } from "../chat/runItems";
import { parseSlash } from "../chat/slashCommands";
import { transcriptItems } from "../chat/transcript";
import { turnUsageLine } from "../format";
import type { Entry, RunEvent } from "../host";
import { numberLines } from "../tools";

const entry = (seq: number, role: "user" | "assistant", content: unknown[]): Entry =>
  ({ kind: "message", role, content, seq, id: `ent_${seq}`, time: "", hash: "" }) as Entry;

test("transcriptItems: turns, answers with thinking, cards with their results", () => {
  const items = transcriptItems([
    entry(1, "user", [{ type: "text", text: "read it" }]),
    entry(2, "assistant", [{ type: "reasoning", text: "hm" }, { type: "text", text: "ok" }, { type: "toolCall", callId: "c1", name: "read_file", arguments: { path: "a.py" } }]),
    entry(3, "user", [{ type: "toolResult", callId: "c1", content: [{ type: "text", text: "1\tx" }] }]),
    entry(4, "assistant", [{ type: "toolCall", callId: "c2", name: "run_command", arguments: { command: "ls" } }]),
    entry(5, "user", [{ type: "toolResult", callId: "c2", content: [{ type: "text", text: "not approved: denied by the user" }], isError: true }]),
  ]);
  assert.deepEqual(items.map((i) => i.kind), ["user", "assistant", "tool", "tool"]);
  const [, answer, c1, c2] = items as [unknown, { thinking: string; text: string }, ToolCard, ToolCard];
  assert.deepEqual([answer.text, answer.thinking], ["ok", "hm"]);
  assert.deepEqual([c1.title, c1.status, c1.output], ["Read a.py", "done", "1\tx"]);
  assert.deepEqual([c2.title, c2.status, c2.reason], ["Run `ls`", "denied", "denied by the user"]);
});

test("RunItems: the todo list is one checklist per run, replaced by each plan.updated; a failed call is a card", () => {
  const run = new RunItems("run_1");
  const ev = (seq: number, type: string, payload: Record<string, unknown>): RunEvent => ({ runId: "run_1", sessionId: "s", seq, time: "", type, payload });
  const first = [{ content: "read", status: "in_progress", priority: "high" }, { content: "fix", status: "pending", priority: "medium" }];
  assert.deepEqual(run.apply(ev(1, "tool.callRequested", { callId: "p1", name: "update_plan", arguments: { entries: first }, builtin: true })), []);
  assert.deepEqual(run.apply(ev(2, "plan.updated", { callId: "p1", entries: first })), [{ kind: "plan", id: "run_1:plan", steps: first }]);
  assert.deepEqual(run.apply(ev(3, "tool.resultStored", { callId: "p1", isError: false, seq: 4, content: [{ type: "text", text: "plan updated (2 entries)" }] })), []);
  const [again] = run.apply(ev(4, "plan.updated", { callId: "p2", entries: [{ content: "read", status: "completed", priority: "high" }] }));
  assert.deepEqual(again, { kind: "plan", id: "run_1:plan", steps: [{ content: "read", status: "completed", priority: "high" }] });
  run.apply(ev(5, "tool.callRequested", { callId: "p3", name: "update_plan", arguments: { entries: [{}] }, builtin: true }));
  const [bad] = run.apply(ev(6, "tool.resultStored", { callId: "p3", isError: true, seq: 8, content: [{ type: "text", text: "malformed plan entries" }] })) as [ToolCard];
  assert.deepEqual([bad.kind, bad.status], ["tool", "failed"]);
  const end = run.apply(ev(7, "run.completed", { status: "completed" }));
  assert.deepEqual(end.map((i) => i.kind), ["usage"]);
});

test("transcriptItems: a turn's update_plan calls are one checklist, the last one's", () => {
  const call = (callId: string, entries: unknown) => ({ type: "toolCall", callId, name: "update_plan", arguments: { entries } });
  const items = transcriptItems([
    entry(1, "user", [{ type: "text", text: "fix it" }]),
    entry(2, "assistant", [call("p1", [{ content: "fix", status: "pending" }])]),
    entry(3, "user", [{ type: "toolResult", callId: "p1", content: [{ type: "text", text: "plan updated (1 entries)" }] }]),
    entry(4, "assistant", [call("p2", [{ content: "fix", status: "completed" }]), { type: "text", text: "done" }]),
    entry(5, "user", [{ type: "toolResult", callId: "p2", content: [{ type: "text", text: "plan updated (1 entries)" }] }]),
    entry(6, "user", [{ type: "text", text: "again" }]),
    entry(7, "assistant", [call("p3", [{ content: "redo", status: "in_progress", priority: "low" }])]),
  ]);
  assert.deepEqual(items.map((i) => i.kind), ["user", "plan", "assistant", "user", "plan"]);
  assert.deepEqual(items[1], { kind: "plan", id: "plan:p1", steps: [{ content: "fix", status: "completed", priority: "medium" }] });
  assert.deepEqual(items[4], { kind: "plan", id: "plan:p3", steps: [{ content: "redo", status: "in_progress", priority: "low" }] });
});

test("a card's output is bounded and says how much was left out", () => {
  const card = withResult(newCard("c", "grep", { pattern: "x" }), "y".repeat(OUTPUT_BOUND + 10), false);
  assert.equal(card.output?.length, OUTPUT_BOUND);
  assert.equal(card.outputMore, 10);
});

test("RunItems: deltas per round, a card, its approval, the usage line", () => {
  const run = new RunItems("run_1");
  const ev = (seq: number, type: string, payload: Record<string, unknown>): RunEvent => ({ runId: "run_1", sessionId: "s", seq, time: "", type, payload });
  run.apply(ev(1, "model.delta", { round: 1, reasoning: "think" }));
  const [answer] = run.apply(ev(2, "model.delta", { round: 1, text: "Hi" }));
  assert.deepEqual(answer, { kind: "assistant", id: "run_1:r1", text: "Hi", thinking: "think", streaming: true });
  run.apply(ev(3, "model.completed", { round: 1, usage: { inputTokens: 2000, outputTokens: 10, cacheReadTokens: 1500 }, predictedCache: { inputTokens: 2000, readTokens: 0, cost: { total: 0.01 } } }));
  run.apply(ev(4, "tool.callRequested", { callId: "c1", name: "write_file", arguments: { path: "a" }, builtin: true, title: "Write a" }));
  const waiting = run.awaiting({ runId: "run_1", callId: "c1", name: "write_file", arguments: {}, change: { path: "a", oldText: "", newText: "x" } } as never, "Write a", "+1 -0");
  assert.deepEqual([waiting.status, waiting.approval?.edit], ["awaiting", true]);
  assert.equal(run.settled("c1", false, "denied by the user")?.status, "denied");
  const end = run.apply(ev(5, "run.completed", { status: "completed" }));
  assert.deepEqual(end.at(-1), { kind: "usage", id: "run_1:usage", line: "2k in · 10 out · 75% cache read · $0.0100" });
  assert.equal(run.finished, true);
});

test("turnUsageLine: the provider's figures, else the prediction's; cost unknown", () => {
  const base = { inputTokens: 0, outputTokens: 5, cacheReadTokens: 0, predictedInputTokens: 1000, predictedReadTokens: 900, cost: null };
  assert.equal(turnUsageLine(base), "1k in · 5 out · 90% cache read (predicted) · cost unknown");
});

test("RunItems: the usage line compares the turn's calls with keep-everything, and the session's", () => {
  const run = new RunItems("run_1");
  const ev = (seq: number, type: string, payload: Record<string, unknown>): RunEvent => ({ runId: "run_1", sessionId: "s", seq, time: "", type, payload });
  const call = (cost: number, ownCost: number, calls: number, sessionCost: number, sessionOwnCost: number) => ({
    cost, tokens: 1000, ownCost, ownTokens: 800, at: 0, session: { calls, cost: sessionCost, ownCost: sessionOwnCost },
  });
  const usage = { inputTokens: 1000, outputTokens: 10, cacheReadTokens: 900 };
  run.apply(ev(1, "model.completed", { round: 1, usage, keepEverything: call(0.4, 0.3, 3, 1.0, 0.9) }));
  run.apply(ev(2, "model.completed", { round: 2, usage, keepEverything: call(0.21, 0.12, 4, 1.21, 1.02) }));
  run.apply(ev(3, "model.completed", { round: 3, agent: "a1", usage, keepEverything: call(9, 9, 9, 9, 9) })); // a sub-agent's: not the turn's
  const [line] = run.apply(ev(4, "run.completed", { status: "completed" })).filter((i) => i.kind === "usage") as { line: string }[];
  // the turn: 0.61 kept vs 0.42 as sent = -31%; the session: 1.02 / 1.21 = -16%
  assert.equal(line!.line, "2k in · 20 out · 90% cache read · cost unknown · keep-everything $0.6100 vs $0.4200 (\u221231%; session \u221216%)");
  const first = new RunItems("run_2");
  first.apply({ ...ev(1, "model.completed", { round: 1, usage, keepEverything: call(0.1, 0.125, 1, 0.1, 0.125) }), runId: "run_2" });
  const [only] = first.apply({ ...ev(2, "run.completed", { status: "completed" }), runId: "run_2" }).filter((i) => i.kind === "usage") as { line: string }[];
  assert.match(only!.line, / · keep-everything \$0\.1000 vs \$0\.1250 \(\+25%\)$/); // dearer; no session part on its first turn
  assert.equal(turnUsageLine({ ...usage, predictedInputTokens: 0, predictedReadTokens: 0, cost: 0.5 }), "1k in · 10 out · 90% cache read · $0.5000");
});

test("isFromWebview accepts the protocol's messages only", () => {
  assert.ok(isFromWebview({ type: "send", text: "hi" }));
  assert.ok(isFromWebview({ type: "approve", callId: "c", choice: "session" }));
  assert.ok(!isFromWebview({ type: "approve", callId: "c", choice: "always" }));
  assert.ok(!isFromWebview({ type: "setMode", mode: "yolo" }));
  assert.ok(!isFromWebview({ type: "eval", code: "x" }));
  assert.ok(!isFromWebview(null));
});

test("parseSlash: the ACP face's four commands, with an argument", () => {
  assert.deepEqual(parseSlash("/pin src/a.py"), { name: "pin", argument: "src/a.py" });
  assert.deepEqual(parseSlash(" /context "), { name: "context", argument: "" });
  assert.equal(parseSlash("/contextual"), undefined);
  assert.equal(parseSlash("please /compact"), undefined);
});

test("numberLines: cat -n from an offset, says how to read on", () => {
  assert.equal(numberLines("a\nb\nc\n", "f", 2, 1), "2\tb\n[lines 2-2 of 3 shown; read on with offset=3 (or grep for what you need)]");
  assert.equal(numberLines("", "f"), "(f is empty)");
  assert.throws(() => numberLines("a\n", "f", 5), /offset 5 is past the end/);
});
