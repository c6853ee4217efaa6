// "Rewind to here" in the chat view of the bundled extension (dist/extension.js) with a stub
// `vscode`, against the real sidecar, on a workspace folder of its own: two scripted turns with
// the built-in tools change files; each stored user message offers the rewind; the diff editor
// shows the files now against the checkpoint's (virtual documents read from its blobs); a file
// edited by hand is a conflict (the modal dismissed: nothing done; "force": done); the files
// come back, the conversation is forked before the message and its prompt is put back in the
// composer; the source session is kept.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";

import { TMP, removeTmp, ui, type StubUri, type StubWebview } from "./vscodeStub";
import { extension, openChat, sendAndWait as sendAndWaitIn, shownItems, until, type OpenChat } from "./chatKit";
import type { ContextSidecarApi } from "../extension";
import type { ChatItem, UserItem } from "../chat/protocol";
import type { SidecarHost } from "../host";

const WS = path.join(TMP, "ws");
const file = (rel: string) => path.join(WS, rel);
const SCRIPTS = path.join(TMP, "chat-scripts.json");
process.env["CONTEXT_SIDECAR_CHAT_SCRIPTS"] = SCRIPTS;
const call = (name: string, id: string, args: Record<string, unknown>) => ({ toolCalls: [{ id, name, arguments: args }] });
const FIRST = "make it two";
const SECOND = "make it three and tidy up";
fs.writeFileSync(
  SCRIPTS,
  JSON.stringify({
    [FIRST]: { rounds: [call("write_file", "w1", { path: "a.txt", content: "two\n" }), { text: "done one" }] },
    [SECOND]: {
      rounds: [
        call("edit_file", "e2", { path: "a.txt", old_text: "two", new_text: "three" }),
        call("write_file", "w2", { path: "b.txt", content: "new b\n" }),
        call("run_command", "c2", { command: "rm notes.txt" }),
        { text: "done two" },
      ],
    },
  }),
);

let chat: OpenChat;
let api: ContextSidecarApi;
let view: StubWebview;
let host: SidecarHost;

const shown = (): ChatItem[] => shownItems(view);
const user = (text: string) => shown().find((i): i is UserItem => i.kind === "user" && i.text === text);
const notices = () => shown().flatMap((i) => (i.kind === "notice" ? [i.text] : []));

async function sendAndWait(prompt: string): Promise<void> {
  const done = await sendAndWaitIn(chat, prompt);
  assert.equal(done.payload["status"], "completed");
}

before(async () => {
  fs.mkdirSync(WS);
  fs.writeFileSync(file("a.txt"), "one\n");
  fs.writeFileSync(file("notes.txt"), "untracked notes\n");
  ui.folders = [WS];
  ui.settings["builtinTools"] = "allow_all";
  chat = await openChat();
  ({ api, view, host } = chat);
});

after(async () => {
  await extension.deactivate();
  removeTmp();
});

test("Rewind to here: the diff first, a conflict, force, the files and the conversation back", { timeout: 90_000 }, async () => {
  await sendAndWait(FIRST);
  await sendAndWait(SECOND);
  assert.deepEqual([fs.readFileSync(file("a.txt"), "utf8"), fs.existsSync(file("notes.txt")), fs.existsSync(file("b.txt"))], ["three\n", false, true]);
  // each stored user message offers the rewind (its seq, once stored)
  const second = await until("the second message's seq", () => user(SECOND)?.seq !== undefined && user(SECOND));
  assert.ok((user(FIRST)?.seq ?? 0) > 0 && user(FIRST)!.seq! < second.seq!);
  const source = api.chat.currentSession!;

  // a hand edit since; the choice is "both"; the conflict's modal is dismissed: nothing done
  fs.writeFileSync(file("a.txt"), "by hand\n");
  ui.answerQuickPick = async (call) => call.items.find((i) => i.choice === "both");
  const warned: string[][] = [];
  ui.answerWarning = async (_message, items) => (warned.push(items), undefined);
  view.send({ type: "rewind", seq: second.seq });
  await until("the refusal", () => notices().some((n) => n.startsWith("**Not rewound**")));
  assert.match(notices().at(-1)!, /`a\.txt`/);
  assert.deepEqual(warned, [["Overwrite them (force)"]]);
  assert.equal(fs.readFileSync(file("a.txt"), "utf8"), "by hand\n");
  assert.equal(api.chat.currentSession, source);

  // the diff editor showed every change: the file now against the checkpoint's content
  const opened = ui.executed.filter((c) => c.id === "vscode.changes");
  assert.equal(opened.length, 1);
  const pairs = opened[0]!.args[1] as [StubUri, StubUri, StubUri][];
  const provider = ui.contentProviders.get("context-sidecar-checkpoint")!;
  const byName = new Map(pairs.map(([resource, now, then]) => [path.basename(resource.path), { now, then }]));
  assert.deepEqual([...byName.keys()].sort(), ["a.txt", "b.txt", "notes.txt"]);
  assert.equal(byName.get("a.txt")!.now.scheme, "file"); // the file itself on the left
  assert.equal(provider.provideTextDocumentContent(byName.get("a.txt")!.then), "two\n");
  assert.equal(provider.provideTextDocumentContent(byName.get("notes.txt")!.then), "untracked notes\n");
  assert.equal(provider.provideTextDocumentContent(byName.get("notes.txt")!.now), ""); // deleted since
  assert.equal(provider.provideTextDocumentContent(byName.get("b.txt")!.then), ""); // would be deleted
  const pick = ui.quickPicks.at(-1)!;
  assert.deepEqual(pick.items.map((i) => i.choice), ["both", "code", "conversation"]);
  assert.match(pick.options.title ?? "", /make it three and tidy up/);

  // again, "force": the files as they were, a fork before the message, its prompt in the box
  ui.answerWarning = async (_message, items) => items[0];
  view.send({ type: "rewind", seq: second.seq });
  await until("the rewind", () => notices().some((n) => n.startsWith("**Rewound**")));
  assert.deepEqual([fs.readFileSync(file("a.txt"), "utf8"), fs.readFileSync(file("notes.txt"), "utf8"), fs.existsSync(file("b.txt"))], ["two\n", "untracked notes\n", false]);
  const fork = api.chat.currentSession!;
  assert.notEqual(fork, source);
  assert.equal((await host.request("session/get", { sessionId: fork })).headSeq, second.seq! - 1);
  assert.ok((await host.request("session/get", { sessionId: source })).headSeq > second.seq!, "the source was cut");
  assert.ok(user(FIRST) && !user(SECOND), "the fork shows the first turn only");
  assert.equal(view.posted.filter((m) => m.type === "setPrompt").at(-1)?.["text"], SECOND);
  assert.match(notices().at(-1)!, /Undo with \*Context Sidecar: Undo Last Rewind\*/);
  assert.equal(ui.executed.filter((c) => c.id === "vscode.changes").length, 2, "the second rewind showed its diff too");

  // a conversation rewind to the first message of the fork: files untouched, another fork
  ui.answerQuickPick = async (call) => call.items.find((i) => i.choice === "conversation");
  const first = user(FIRST)!;
  view.send({ type: "rewind", seq: first.seq });
  await until("the second fork", () => api.chat.currentSession !== fork && api.chat.currentSession);
  assert.equal(fs.readFileSync(file("a.txt"), "utf8"), "two\n");
  assert.equal(user(FIRST), undefined);
  assert.equal(view.posted.filter((m) => m.type === "setPrompt").at(-1)?.["text"], FIRST);

  // Undo Last Rewind: the files as they were before the forced rewind (the hand edit back)
  const undo = ui.commands.get("contextSidecar.undoRewind") as unknown as () => Promise<{ status: string } | undefined>;
  const undone = await undo();
  assert.equal(undone?.status, "restored");
  assert.deepEqual([fs.readFileSync(file("a.txt"), "utf8"), fs.existsSync(file("notes.txt")), fs.existsSync(file("b.txt"))], ["by hand\n", false, true]);
  assert.match(ui.infos.at(-1) ?? "", /undone \(3 files\)/);
  assert.equal(await undo(), undefined, "undone once");
});
