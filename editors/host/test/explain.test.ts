// recoverableItems / assemblyDiff on real context/assemble answers: a session whose old tool
// results are masked (a small masking profile), assembled twice (the cache prediction then reads
// from the previous request), a masked result recovered, and the next assembly shows it again.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { SidecarHost, assemblyDiff, recoverableItems, type EntryInput } from "../src/index.js";
import { PYTHON, REPO } from "./repo.js";

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), "sidecar-host-explain-"));
let host: SidecarHost | undefined;

after(async () => {
  await host?.close();
  fs.rmSync(TMP, { recursive: true, force: true });
});

/** `n` turns, each reading a file through a tool call whose result is ~800 tokens. */
function toolTurns(n: number): EntryInput[] {
  const entries: EntryInput[] = [];
  for (let i = 0; i < n; i++) {
    entries.push(
      { kind: "message", role: "user", content: [{ type: "text", text: `step ${i}` }] },
      {
        kind: "message",
        role: "assistant",
        content: [{ type: "toolCall", callId: `c${i}`, name: "read_file", arguments: { path: `src/m${i}.py` } }],
      },
      {
        kind: "message",
        role: "user",
        content: [{ type: "toolResult", callId: `c${i}`, content: [{ type: "text", text: "code ".repeat(800) }] }],
      },
      { kind: "message", role: "assistant", content: [{ type: "text", text: `done ${i}` }] },
    );
  }
  return entries;
}

describe("what an assembly explains", () => {
  test("masked items are recoverable; a recover shows up in the next assembly's diff", async () => {
    host = await SidecarHost.start({ command: [PYTHON, "-m", "sidecar", "serve"], store: TMP, cwd: REPO });
    const { sessionId } = await host.request("session/create", { workspaceRoots: [REPO] });
    await host.request("session/append", { sessionId, entries: toolTurns(8) });
    const params = {
      sessionId,
      userTurn: [{ type: "text" as const, text: "next?" }],
      date: "2026-11-30",
      profile: { masking: { protectTokens: 2000, batchTokens: 1000 } },
    };
    const first = await host.request("context/assemble", params);
    const second = await host.request("context/assemble", params);
    assert.equal(first.cache?.againstPrevious, false);
    assert.equal(second.cache?.againstPrevious, true);
    assert.ok((second.cache?.readTokens ?? 0) > 0);

    const recoverable = recoverableItems(second.ledger);
    const masked = second.ledger.filter((i) => i.visibility === "masked");
    assert.equal(recoverable.length, masked.length);
    assert.equal(recoverable.length, second.dashboard.masking?.maskedResults);
    assert.deepEqual(recoverable.map((i) => i.fromSeq), [...recoverable.map((i) => i.fromSeq)].sort((a, b) => a! - b!));
    assert.deepEqual(assemblyDiff(first, second).ledgerChanges, []);

    const target = recoverable[0]!;
    await host.request("session/recover", { sessionId, target: { kind: "item", itemId: target.itemId } });
    const third = await host.request("context/assemble", params);
    const diff = assemblyDiff(second, third);
    // the masked result's own item stays in the ledger, now visible (shown whole)
    const changed = diff.ledgerChanges.find((c) => c.itemId === target.itemId);
    assert.deepEqual(changed && [changed.before, changed.after], ["masked", "visible"]);
    assert.ok(!recoverableItems(third.ledger).some((i) => i.itemId === target.itemId));
    const whole = (result: typeof third): boolean => {
      const message = result.messages.find((m) => m.provenance.some((p) => p.fromSeq === target.fromSeq));
      return message !== undefined && JSON.stringify(message.content).includes("code ".repeat(800));
    };
    assert.ok(!whole(second) && whole(third), `seq ${target.fromSeq} is not shown whole after the recover`);
    assert.ok(diff.totalTokensAfter > diff.totalTokensBefore, "the recovered result is shown whole");
  });
});
