import { test } from "node:test";
import assert from "node:assert/strict";

import {
  approvalWaiting,
  cacheLines,
  cachedShare,
  contextUsage,
  describeArguments,
  formatCost,
  formatTokens,
  maskingLine,
  recoverPickItem,
  usageTooltip,
  windowLine,
} from "../format";
import type { CacheAccounting } from "../host";

test("formatTokens", () => {
  assert.equal(formatTokens(950), "950");
  assert.equal(formatTokens(12_345), "12.3k");
  assert.equal(formatTokens(2_000), "2k");
  assert.equal(formatTokens(167_000), "167k");
  assert.equal(formatTokens(1_250_000), "1.25M");
});

test("contextUsage is the status bar text", () => {
  const dashboard = { window: 200_000, reservedOutput: 33_000, availableInput: 167_000, used: 12_300, free: 154_700, categories: {}, summary: "" };
  assert.equal(contextUsage(dashboard), "ctx 12.3k/167k");
  assert.equal(contextUsage(dashboard, null), "ctx 12.3k/167k");
  assert.equal(contextUsage(dashboard, CACHE), "ctx 12.3k/167k · 96% cached · $0.0056");
});

const CACHE: CacheAccounting = {
  provider: "anthropic",
  model: "claude-sonnet-4-5",
  againstPrevious: true,
  inputTokens: 12_300,
  readTokens: 11_900,
  writeTokens: 400,
  uncachedTokens: 0,
  firstChange: "message 34",
  rulesVersion: "2026-12-02",
  cost: { input: 0, cacheWrite: 0.0015, cacheRead: 0.00357, total: 0.00507 + 0.0005, currency: "USD", pricesAsOf: "2026-12-02" },
};

test("the cache prediction: share read, cost, lines", () => {
  assert.equal(cachedShare(CACHE), 96);
  assert.equal(cachedShare({ ...CACHE, inputTokens: 0, readTokens: 0 }), 0);
  assert.equal(formatCost(0.00123), "$0.0012");
  assert.equal(formatCost(12.345), "$12.35");
  assert.deepEqual(cacheLines(CACHE), [
    "cache: read 11,900 · write 400 · uncached 0 of 12,300 tokens · $0.0056 ($0.0000 input + $0.0015 write + $0.0036 read; prices of 2026-12-02)",
    "first change: message 34",
  ]);
  assert.deepEqual(cacheLines({ ...CACHE, againstPrevious: false, firstChange: null, cost: null })[1], "first request of the session: nothing to read yet");
  assert.match(cacheLines({ ...CACHE, cost: null })[0]!, /cost unknown/);
  assert.deepEqual(cacheLines(null), ["cache: no prediction"]);
});

test("masking and the history window in one line each", () => {
  const masking = { maskedResults: 4, maskedTokens: 3220, protectTokens: 2000, batchTokens: 1000, toolTokens: 6440, nextMoveIn: 560 };
  assert.equal(maskingLine(masking), "masking: 4 tool results masked (3,220 tokens); newest 2,000 kept; next move after 560 tokens of tool output");
  assert.equal(maskingLine(null), "masking: off");
  const window = { startSeq: 12, boundBy: "maxMessages" as const, unit: "messages" as const, limit: 50, quantum: 25, roomLeft: 7 };
  assert.equal(windowLine(window), "window: starts at seq 12; moves after 7 messages (by 25, maxMessages)");
  assert.match(windowLine({ ...window, startSeq: null }), /^window: whole history;/);
  const dashboard = { window: 1, reservedOutput: 0, availableInput: 1, used: 1, free: 0, categories: {}, summary: "S", masking, historyWindow: window };
  assert.deepEqual(usageTooltip(dashboard, CACHE).split("\n").slice(0, 1), ["S"]);
  assert.equal(usageTooltip(dashboard).split("\n").length, 3);
  assert.equal(usageTooltip(dashboard, CACHE).split("\n").length, 5);
});

test("recoverPickItem names where the item is, what it is and why", () => {
  const item = recoverPickItem({ itemId: "ctx_transcript_0123", kind: "transcript", visibility: "masked", reason: "old tool output", tokens: 805, fromSeq: 5, throughSeq: 5 });
  assert.deepEqual(item, {
    label: "$(eye-closed) seq 5",
    description: "masked transcript · 805 tokens · ctx_transcript_0123",
    detail: "old tool output",
    itemId: "ctx_transcript_0123",
  });
  assert.equal(recoverPickItem({ itemId: "x", kind: "instruction", visibility: "dropped", reason: "", tokens: 1, locator: "AGENTS.md" }).label, "$(circle-slash) AGENTS.md");
});

test("describeArguments is one line, cut to the limit", () => {
  assert.equal(describeArguments({ path: "Makefile" }, 100), '{"path":"Makefile"}');
  assert.equal(describeArguments({ path: "x".repeat(50) }, 20), '{"path":"xxxxxxxxxx…');
  assert.equal(describeArguments({ path: "x".repeat(50) }, 20).length, 20);
});

test("approvalWaiting names the first tool waiting and counts the rest", () => {
  assert.equal(approvalWaiting([]), "");
  assert.equal(approvalWaiting([{ name: "read_file" }]), "approve read_file?");
  assert.equal(approvalWaiting([{ name: "read_file" }, { name: "grep" }, { name: "x" }]), "approve read_file? (+2)");
});
