import { test } from "node:test";
import assert from "node:assert/strict";

import { approvalWaiting, contextUsage, describeArguments, formatTokens } from "../format";

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
