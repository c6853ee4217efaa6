// The chat view of the bundled extension (dist/extension.js) with a stub `vscode`, against the
// real sidecar, scripted-model runs (the $CONTEXT_SIDECAR_CHAT_SCRIPTS hook): its page and CSP;
// a streamed answer with its thinking and its usage line; tool cards with approvals inside
// (allow once, for this session, deny); a proposed edit in the diff editor, accepted (written)
// and rejected (not); a cancel mid-stream; sessions new / switch / fork / delete; the transcript
// read back after a reload; the slash commands; copy / insert / dashboard; the header's model
// and approval mode; read_file seeing an unsaved editor.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";

import { REPO, TMP, changeSetting, memento, removeTmp, ui, type StubWebview } from "./vscodeStub";
import { extension, openChat, sendAndWait as sendAndWaitIn, shownItems, until, type OpenChat } from "./chatKit";
import type { ContextSidecarApi } from "../extension";
import type { ChatItem, ChatState, ToolCard } from "../chat/protocol";
import type { RunEvent, SidecarHost } from "../host";

const SCRIPTS = path.join(TMP, "chat-scripts.json");
process.env["CONTEXT_SIDECAR_CHAT_SCRIPTS"] = SCRIPTS;
const scripts: Record<string, unknown> = {};
function script(prompt: string, rounds: object[]): string {
  scripts[prompt] = { rounds };
  fs.writeFileSync(SCRIPTS, JSON.stringify(scripts));
  return prompt;
}

const workspaceState = memento();
let chat: OpenChat;
let api: ContextSidecarApi;
let view: StubWebview;
let host: SidecarHost;
let events: RunEvent[];
const shown = (): ChatItem[] => shownItems(view);
const cards = (): ToolCard[] => shown().filter((i): i is ToolCard => i.kind === "tool");
const card = (callId: string): ToolCard | undefined => cards().find((c) => c.callId === callId);
/** The card of `callId` once `ready` holds for it. */
const cardWhen = (callId: string, ready: (c: ToolCard) => boolean): ToolCard | undefined => {
  const c = card(callId);
  return c && ready(c) ? c : undefined;
};
/** Wait for the end of the run that made call `callId`. */
const runEnd = (callId: string) =>
  until(`the run of ${callId}`, () => events.find((e) => e.type === "run.completed" && e.runId === events.find((x) => x.payload["callId"] === callId)?.runId));
/** A command registered by the extension, called with arguments. */
const command = (id: string) => ui.commands.get(id) as unknown as (...args: unknown[]) => Promise<unknown>;
const lastState = (): ChatState => (view.posted.filter((m) => m.type === "state").at(-1)!["state"] as ChatState);

const sendAndWait = (prompt: string): Promise<RunEvent> => sendAndWaitIn(chat, prompt);

before(async () => {
  ui.settings["builtinTools"] = "off";
  chat = await openChat(workspaceState);
  ({ api, view, host, events } = chat);
});

after(async () => {
  await extension.deactivate();
  removeTmp();
});

describe("the chat view", () => {
  test("its page: the bundled script under a nonce, a CSP with no inline script", () => {
    const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(view.html)?.[1] ?? "";
    const nonce = /script-src 'nonce-([A-Za-z0-9]+)'/.exec(csp)?.[1];
    assert.ok(nonce, csp);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.match(csp, /default-src 'none'/);
    const scripts = [...view.html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.equal(scripts.length, 1);
    assert.match(scripts[0]![1]!, new RegExp(`nonce="${nonce}" src="vscode-resource:.*dist/webview\\.js"`));
    assert.equal(scripts[0]![2]!.trim(), "", "an inline script");
    assert.ok(fs.existsSync(path.resolve(__dirname, "..", "webview.js")), "dist/webview.js was not bundled");
  });

  test("a prompt streams its answer, thinking apart, then the turn's tokens, cache read share and cost", async () => {
    const prompt = script("hello there", [{ reasoning: "Let me think.", deltas: ["Hello", ", ", "**world**"], usage: { inputTokens: 1000, outputTokens: 20, cacheReadTokens: 800 } }]);
    const done = await sendAndWait(prompt);
    assert.equal(done.payload["status"], "completed");
    const deltas = view.posted.filter((m) => m.type === "item" && (m["item"] as ChatItem).kind === "assistant");
    assert.ok(deltas.length >= 3, "the answer was not streamed");
    const answer = shown().find((i) => i.kind === "assistant")!;
    assert.deepEqual([answer.kind === "assistant" && answer.text, answer.kind === "assistant" && answer.thinking, answer.kind === "assistant" && answer.streaming], ["Hello, **world**", "Let me think.", false]);
    assert.ok(shown().some((i) => i.kind === "user" && i.text === prompt));
    const usage = await until("the usage line", () => shown().find((i) => i.kind === "usage"));
    assert.match(usage.kind === "usage" ? usage.line : "", /^1k in · 20 out · 80% cache read · (\$\d+\.\d{4}|cost unknown)$/);
    assert.equal(lastState().sessions[0]?.title, prompt, "the session is titled by its first prompt");
  });

  test("a tool call is a card; its approval is inside it (allow once), then its output", async () => {
    const prompt = script("read the makefile", [{ toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "Makefile" } }] }, { text: "done" }]);
    view.send({ type: "send", text: prompt });
    const waiting = await until("the card's approval", () => cardWhen("r1", (c) => Boolean(c.approval)));
    assert.equal(waiting.status, "awaiting");
    assert.equal(waiting.args, 'read_file {"path":"Makefile"}'.slice("read_file ".length));
    assert.match(waiting.approval!.detail, /"path":"Makefile"/);
    assert.equal(ui.quickPicks.length, 0, "asked with a quick pick, not in the card");
    view.send({ type: "approve", callId: "r1", choice: "once" });
    const done = await until("the card's output", () => cardWhen("r1", (c) => Boolean(c.output)));
    assert.equal(done.status, "done");
    assert.match(done.output!, /host-test/);
    assert.equal(done.approval, undefined);
    await runEnd("r1");
  });

  test("deny: the card says so; allow for this session: asked once in the session", async () => {
    const denied = script("deny it", [{ toolCalls: [{ id: "d1", name: "read_file", arguments: { path: "Makefile" } }] }, { text: "ok" }]);
    view.send({ type: "send", text: denied });
    await until("d1 waiting", () => card("d1")?.approval);
    view.send({ type: "approve", callId: "d1", choice: "deny" });
    const d1 = await until("d1 denied", () => cardWhen("d1", (c) => c.status === "denied"));
    assert.match(d1.reason ?? "", /denied by the user/);
    await runEnd("d1");

    const twice = script("read twice", [{ toolCalls: [{ id: "s1", name: "read_file", arguments: { path: "README.md" } }] }, { toolCalls: [{ id: "s2", name: "read_file", arguments: { path: "pyproject.toml" } }] }, { text: "ok" }]);
    view.send({ type: "send", text: twice });
    await until("s1 waiting", () => card("s1")?.approval);
    view.send({ type: "approve", callId: "s1", choice: "session" });
    const s2 = await until("s2 done", () => cardWhen("s2", (c) => c.status === "done"));
    assert.equal(s2.approval, undefined);
    assert.ok(!view.posted.some((m) => m.type === "item" && (m["item"] as ToolCard).callId === "s2" && (m["item"] as ToolCard).status === "awaiting"), "s2 was asked");
    await runEnd("s2");
  });

  test("a proposed edit opens in the diff editor: accept writes the file, reject does not", async () => {
    changeSetting("builtinTools", "ask");
    const file = "chat-test-edit.txt";
    const target = path.join(REPO, file);
    fs.writeFileSync(target, "one\ntwo\n");
    try {
      const prompt = script("edit the file", [{ toolCalls: [{ id: "e1", name: "edit_file", arguments: { path: file, old_text: "two", new_text: "TWO" } }] }, { text: "edited" }]);
      view.send({ type: "send", text: prompt });
      const waiting = await until("e1 waiting", () => cardWhen("e1", (c) => Boolean(c.approval)));
      assert.equal(waiting.approval!.edit, true);
      assert.equal(waiting.title, `Edit ${file}`);
      const diff = await until("the diff editor", () => ui.diffs.find((d) => d.right.path.startsWith("/e1/")));
      const provider = ui.contentProviders.get("context-sidecar-proposed")!;
      assert.equal(provider.provideTextDocumentContent(diff.left), "one\ntwo\n");
      assert.equal(provider.provideTextDocumentContent(diff.right), "one\nTWO\n");
      assert.match(diff.title, /chat-test-edit\.txt: proposed edit/);
      await command("contextSidecar.acceptEdit")(diff.right);
      await until("e1 done", () => card("e1")?.status === "done");
      await runEnd("e1");
      assert.equal(fs.readFileSync(target, "utf8"), "one\nTWO\n");

      const rejected = script("edit again", [{ toolCalls: [{ id: "e2", name: "write_file", arguments: { path: file, content: "gone\n" } }] }, { text: "ok" }]);
      view.send({ type: "send", text: rejected });
      const second = await until("the second diff", () => ui.diffs.find((d) => d.right.path.startsWith("/e2/")));
      await command("contextSidecar.rejectEdit")(second.right);
      const e2 = await until("e2 denied", () => cardWhen("e2", (c) => c.status === "denied"));
      assert.match(e2.reason ?? "", /denied/);
      await runEnd("e2");
      assert.equal(fs.readFileSync(target, "utf8"), "one\nTWO\n", "a rejected write wrote");
    } finally {
      fs.rmSync(target, { force: true });
      changeSetting("builtinTools", "off");
    }
  });

  test("read_file reads what the editor has, unsaved changes included", async () => {
    changeSetting("builtinTools", "ask");
    const file = path.join(REPO, "pyproject.toml");
    ui.textDocuments.push({ uri: { fsPath: file, path: file, scheme: "file", toString: () => `file://${file}` }, getText: () => "UNSAVED BUFFER\nline two\n", isDirty: true });
    try {
      const prompt = script("read the buffer", [{ toolCalls: [{ id: "b1", name: "read_file", arguments: { path: "pyproject.toml" } }] }, { text: "ok" }]);
      await sendAndWait(prompt);
      const b1 = await until("b1's output", () => cardWhen("b1", (c) => Boolean(c.output)));
      assert.equal(b1.output, "1\tUNSAVED BUFFER\n2\tline two");
      assert.ok(!ui.diffs.some((d) => d.right.path.startsWith("/b1/")), "a read asked");
    } finally {
      ui.textDocuments.length = 0;
      changeSetting("builtinTools", "off");
    }
  });

  test("cancel mid-stream: the run stops, the answer so far stays, the usage line says cancelled", async () => {
    const prompt = script("a long answer", [{ deltas: Array.from({ length: 50 }, (_, i) => `word${i} `), delayMs: 100 }]);
    const before = events.length;
    view.send({ type: "send", text: prompt });
    await until("the first words", () => events.slice(before).some((e) => e.type === "model.delta"));
    assert.equal(view.posted.filter((m) => m.type === "running").at(-1)?.["running"], true);
    view.send({ type: "cancel" });
    const done = await until("the cancel", () => events.slice(before).find((e) => e.type === "run.completed"));
    assert.equal(done.payload["status"], "cancelled");
    const usage = await until("the usage line", () => shown().find((i) => i.kind === "usage" && i.id === `${done.runId}:usage`));
    assert.match(usage.kind === "usage" ? usage.line : "", /cancelled$/);
    const answer = shown().find((i) => i.id === `${done.runId}:r1`);
    assert.ok(answer?.kind === "assistant" && answer.text.startsWith("word0") && !answer.text.includes("word49"), JSON.stringify(answer));
    assert.equal(view.posted.filter((m) => m.type === "running").at(-1)?.["running"], false);
  });

  test("after a reload the transcript is read back: turns, answers, cards with their outputs", async () => {
    const sessionId = api.chat.currentSession!;
    const again = extension; // the same bundle: a new webview asks with `ready`
    view.posted.length = 0;
    view.send({ type: "ready" });
    const state = await until("the state", () => view.posted.find((m) => m.type === "state")?.["state"] as ChatState | undefined);
    assert.equal(state.sessionId, sessionId);
    assert.equal(workspaceState.get("contextSidecar.chat.sessionId"), sessionId);
    const kinds = state.items.map((i) => i.kind);
    assert.ok(kinds.includes("user") && kinds.includes("assistant") && kinds.includes("tool"), kinds.join());
    const r1 = state.items.find((i): i is ToolCard => i.kind === "tool" && i.callId === "r1")!;
    assert.equal(r1.status, "done");
    assert.match(r1.output ?? "", /host-test/);
    const d1 = state.items.find((i): i is ToolCard => i.kind === "tool" && i.callId === "d1")!;
    assert.equal(d1.status, "denied");
    assert.ok(state.items.some((i) => i.kind === "assistant" && i.text === "Hello, **world**" && i.thinking === "Let me think."));
    assert.ok(again);
  });

  test("slash commands: /context, /pin, /snapshot, /compact answer in the chat", async () => {
    const notices = () => shown().filter((i) => i.kind === "notice").map((i) => (i.kind === "notice" ? i.text : ""));
    const count = notices().length;
    view.send({ type: "send", text: "/context" });
    await until("/context", () => notices().length > count);
    assert.match(notices().at(-1)!, /^\*\*Context\*\* .* tokens/);
    assert.match(notices().at(-1)!, /\| transcript \|/);
    view.send({ type: "send", text: "/pin Makefile" });
    await until("/pin", () => notices().length > count + 1);
    assert.match(notices().at(-1)!, /^\*\*Pinned\*\* `Makefile`/);
    view.send({ type: "send", text: "/snapshot" });
    await until("/snapshot", () => notices().length > count + 2);
    assert.match(notices().at(-1)!, /^\*\*Snapshot\*\* `/);
    script("/compact", [{ text: "Goal: test the chat. Progress: done." }]);
    view.send({ type: "send", text: "/compact" });
    await until("/compact", () => notices().length > count + 3);
    assert.match(notices().at(-1)!, /^\*\*Compacted\*\* history through seq \d+/);
    assert.match(notices().at(-1)!, /Goal: test the chat/);
    const { sessions } = await host.request("session/list", { limit: 50 });
    assert.ok(!sessions.some((s) => s.title === "compact (temporary)"), "the summary's fork was left behind");
  });

  test("sessions: new, switch, fork, delete", async () => {
    const first = api.chat.currentSession!;
    view.send({ type: "newSession" });
    const fresh = await until("a new session", () => api.chat.currentSession !== first && api.chat.currentSession);
    assert.deepEqual(lastState().items, []);
    view.send({ type: "switchSession", sessionId: first });
    await until("the switch", () => api.chat.currentSession === first && lastState().sessionId === first);
    assert.ok(lastState().items.length > 0);
    view.send({ type: "forkSession" });
    const fork = await until("the fork", () => api.chat.currentSession !== first && api.chat.currentSession);
    const forked = await host.request("session/get", { sessionId: fork });
    assert.equal(forked.forkedFrom?.sessionId, first);
    assert.equal(lastState().items.length, api.chat.transcript.length);
    assert.ok(lastState().items.some((i) => i.kind === "tool"));
    view.send({ type: "deleteSession" });
    await until("the delete", () => api.chat.currentSession !== fork);
    const { sessions } = await host.request("session/list", { limit: 50 });
    assert.ok(!sessions.some((s) => s.sessionId === fork));
    assert.ok(sessions.some((s) => s.sessionId === fresh));
  });

  test("code blocks copy and insert at the cursor; the dashboard is a click away", async () => {
    view.send({ type: "copy", text: "make test" });
    view.send({ type: "insert", text: "inserted()" });
    view.send({ type: "showDashboard" });
    await until("the clipboard", () => ui.clipboard === "make test");
    await until("the insert", () => ui.inserted.includes("inserted()"));
    await until("the dashboard", () => ui.executed.some((c) => c.id === "contextSidecar.showDashboard"));
  });

  test("the header's model (stored profiles) and approval mode are the settings", async () => {
    const profile = await host.request("profile/create", { name: "scripted test model", modelBinding: { provider: "scripted", modelId: "test" } });
    view.send({ type: "ready" });
    await until("the profile in the header", () => lastState().profiles.some((p) => p.id === profile.profileId && p.label === "scripted test model"));
    view.send({ type: "setProfile", profileId: profile.profileId });
    view.send({ type: "setMode", mode: "accept_edits" });
    await until("the settings", () => ui.settings["profile"] === profile.profileId && ui.settings["builtinTools"] === "accept_edits");
    const done = await sendAndWait(script("with the profile", [{ text: "ok" }]));
    const run = await host.request("run/get", { runId: done.runId });
    assert.equal(run.settings?.profileId, profile.profileId);
    view.send({ type: "setProfile", profileId: "" });
    view.send({ type: "setMode", mode: "off" });
    await until("back to the defaults", () => ui.settings["profile"] === "" && ui.settings["builtinTools"] === "off");
    assert.deepEqual(ui.errors, []);
  });
});
