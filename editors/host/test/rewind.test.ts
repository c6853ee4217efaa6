// Rewind from the host library against the real sidecar (issue 44): two turns with the built-in
// tools change a workspace (an edit, a new file, a command that deletes an untracked file);
// the checkpoint "at" the second user message is found, its diff previewed, a file edited by
// hand is a conflict (nothing written) until `force`, the files come back byte for byte, the
// undo checkpoint puts the hand edit back, and a conversation rewind forks before the message.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import {
  SidecarHost,
  checkpointAt,
  listCheckpoints,
  previewRewind,
  readBlobText,
  restoreCheckpoint,
  restoreFlags,
  rewindTo,
  type RunEvent,
} from "../src/index.js";
import { PYTHON, REPO } from "./repo.js";

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), "sidecar-rewind-test-"));
after(() => fs.rmSync(TMP, { recursive: true, force: true }));

const call = (name: string, id: string, args: Record<string, unknown> = {}) => ({ toolCalls: [{ id, name, arguments: args }] });

test("restoreFlags and checkpointAt", () => {
  assert.deepEqual(restoreFlags("code"), { files: true, conversation: false });
  assert.deepEqual(restoreFlags("conversation"), { files: false, conversation: true });
  assert.deepEqual(restoreFlags("both"), { files: true, conversation: true });
  type Reason = "turn" | "edit" | "command" | "restore";
  const at = (id: string, seq: number, turnSeq: number | null, reason: Reason) => ({
    checkpointId: id, sessionId: "s", seq, turnSeq, createdAt: "t", reason, files: 1, notCaptured: 0, changedFiles: 0,
  });
  // turn 1 (message 1): its turn checkpoint, an edit; turn 2 (message 4): its turn checkpoint;
  // a restore at head 6; message 7 changes nothing; a restore at head 8
  const newestFirst = [at("r9", 9, 4, "restore"), at("r7", 7, 1, "restore"), at("t4", 4, 4, "turn"), at("e3", 3, 1, "edit"), at("t1", 1, 1, "turn")];
  assert.equal(checkpointAt(newestFirst, 1)?.checkpointId, "t1");
  assert.equal(checkpointAt(newestFirst, 4)?.checkpointId, "t4");
  assert.equal(checkpointAt(newestFirst, 6)?.checkpointId, "r7"); // the restore after it, at head 6
  assert.equal(checkpointAt(newestFirst, 7)?.checkpointId, "r9"); // not r7: taken before message 7
  assert.equal(checkpointAt(newestFirst, 9), undefined);
});

test("rewind a workspace and a conversation from the host library", { timeout: 60_000 }, async () => {
  const ws = path.join(TMP, "ws");
  fs.mkdirSync(ws);
  const file = (rel: string) => path.join(ws, rel);
  fs.writeFileSync(file("a.txt"), "one\n");
  fs.writeFileSync(file("notes.txt"), "untracked notes\n");
  fs.writeFileSync(file("run.sh"), "#!/bin/sh\necho hi\n", { mode: 0o755 });
  const host = await SidecarHost.start({ command: [PYTHON, "-m", "sidecar", "serve"], store: fs.mkdtempSync(path.join(TMP, "store-")), cwd: REPO, stderr: "pipe" });
  try {
    host.onApproval(() => ({ approved: true }));
    const { sessionId } = await host.request("session/create", { title: "rewind", workspaceRoots: [ws] });
    const turn = async (text: string, rounds: unknown[]): Promise<void> => {
      let done!: () => void;
      const finished = new Promise<void>((resolve) => (done = resolve));
      const sub = host.onRunEvent((e: RunEvent) => e.type === "run.completed" && done());
      await host.request("run/start", { sessionId, userTurn: [{ type: "text", text }], builtinTools: {}, script: { rounds } as Record<string, unknown> });
      await finished;
      sub.dispose();
    };
    await turn("make it two", [call("write_file", "w1", { path: "a.txt", content: "two\n" }), { text: "done" }]);
    await turn("make it three and tidy up", [
      call("edit_file", "e2", { path: "a.txt", old_text: "two", new_text: "three" }),
      call("write_file", "w2", { path: "b.txt", content: "new b\n" }),
      call("run_command", "c2", { command: "rm notes.txt && chmod 644 run.sh" }),
      { text: "done" },
    ]);
    const read = await host.request("session/read", { sessionId, afterSeq: 0, limit: 100 });
    const users = read.entries
      .filter((e) => e.kind === "message" && e.role === "user" && e.content.some((p) => p.type === "text"))
      .map((e) => e.seq);
    assert.equal(users.length, 2);
    const second = users[1]!;

    // the checkpoint at the second message, and what restoring it would change
    const listed = await listCheckpoints(host, sessionId);
    assert.ok(listed.total >= 3 && listed.checkpoints.length === listed.total, JSON.stringify(listed));
    const checkpoint = checkpointAt(listed.checkpoints, second)!;
    assert.ok(checkpoint, "a checkpoint after the second message");
    assert.equal(checkpoint.turnSeq, second);
    const { diff } = await previewRewind(host, sessionId, second);
    const changes = Object.fromEntries(diff!.files.map((f) => [f.path, f]));
    assert.deepEqual(Object.keys(changes).sort(), ["a.txt", "b.txt", "notes.txt", "run.sh"]);
    assert.equal(changes["a.txt"]!.change, "modified");
    assert.equal(changes["b.txt"]!.change, "added");
    assert.equal(changes["notes.txt"]!.change, "deleted");
    assert.deepEqual([changes["run.sh"]!.beforeMode, changes["run.sh"]!.afterMode], ["100755", "100644"]);
    assert.match(changes["a.txt"]!.diff ?? "", /-two\n\+three/);
    // the file as the checkpoint holds it, for a diff editor's left side
    assert.equal(await readBlobText(host, changes["a.txt"]!.before!), "two\n");
    assert.equal(await readBlobText(host, changes["notes.txt"]!.before!), "untracked notes\n");

    // edited by hand since: a conflict, nothing written, no fork
    fs.writeFileSync(file("a.txt"), "by hand\n");
    const refused = await rewindTo(host, sessionId, second, "both");
    assert.equal(refused.status, "conflicts");
    assert.deepEqual((refused.conflicts ?? []).map((c) => c.path), ["a.txt"]);
    assert.ok(!refused.forkedSessionId, "no fork");
    assert.equal(fs.readFileSync(file("a.txt"), "utf8"), "by hand\n");
    assert.ok(fs.existsSync(file("b.txt")));

    // forced: the files as they were when the message was sent, and the conversation before it
    const done = await rewindTo(host, sessionId, second, "both", true);
    assert.equal(done.status, "restored");
    assert.equal(fs.readFileSync(file("a.txt"), "utf8"), "two\n");
    assert.equal(fs.readFileSync(file("notes.txt"), "utf8"), "untracked notes\n");
    assert.equal(fs.existsSync(file("b.txt")), false);
    assert.equal(fs.statSync(file("run.sh")).mode & 0o777, 0o755);
    assert.ok(done.undoCheckpointId);
    const fork = done.forkedSessionId!;
    const forked = await host.request("session/read", { sessionId: fork, afterSeq: 0, limit: 100 });
    assert.equal(forked.headSeq, second - 1);
    assert.equal((await host.request("session/get", { sessionId })).headSeq, read.headSeq); // the source intact

    // the undo: the checkpoint taken before the restore puts the hand edit back
    const undone = await restoreCheckpoint(host, sessionId, done.undoCheckpointId!, "code");
    assert.equal(undone.status, "restored");
    assert.equal(fs.readFileSync(file("a.txt"), "utf8"), "by hand\n");
    assert.ok(fs.existsSync(file("b.txt")));

    // a conversation rewind to the first message: a fork before it, the files untouched
    const first = await rewindTo(host, sessionId, users[0]!, "conversation");
    assert.equal(first.status, "restored");
    assert.deepEqual(first.restored, []);
    assert.equal((await host.request("session/get", { sessionId: first.forkedSessionId! })).headSeq, users[0]! - 1);
    assert.equal(fs.readFileSync(file("a.txt"), "utf8"), "by hand\n");

    // a turn with no checkpoint (appended, no run): its conversation is forked by session/fork,
    // and its files have nothing to put back
    const appended = await host.request("session/append", {
      sessionId,
      entries: [
        { kind: "message", role: "user", content: [{ type: "text", text: "just talk" }] },
        { kind: "message", role: "assistant", content: [{ type: "text", text: "ok" }] },
      ],
    });
    const talk = appended.appended[0]!.seq;
    assert.equal(checkpointAt((await listCheckpoints(host, sessionId)).checkpoints, talk), undefined);
    const talked = await rewindTo(host, sessionId, talk, "both");
    assert.equal(talked.status, "restored");
    assert.deepEqual([talked.restored, talked.checkpointId], [[], null]);
    const talkFork = await host.request("session/get", { sessionId: talked.forkedSessionId! });
    assert.deepEqual([talkFork.headSeq, talkFork.forkedFrom?.sessionId], [talk - 1, sessionId]);

    // a session with no workspace root has no checkpoint: no files to put back, its conversation forks
    const bare = await host.request("session/create", { title: "no roots" });
    await host.request("session/append", { sessionId: bare.sessionId, entries: [{ kind: "message", role: "user", content: [{ type: "text", text: "hi" }] }] });
    assert.deepEqual(await previewRewind(host, bare.sessionId, 1), { checkpoint: undefined, diff: undefined });
    const bareFork = await rewindTo(host, bare.sessionId, 1, "both");
    assert.deepEqual(bareFork.restored, []);
    assert.equal((await host.request("session/get", { sessionId: bareFork.forkedSessionId! })).headSeq, 0);
  } finally {
    await host.close();
  }
});
