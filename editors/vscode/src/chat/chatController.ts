// The chat's state and what the user does in it: the session list (new, switch, fork, delete),
// the transcript (`session/read`), prompts as runs streamed into items (RunItems), cancel,
// approvals inside the tool cards, slash commands, "Rewind to here" on a user message, the
// header's model and approval mode. It owns the state; the webview (ChatView) only renders
// what is posted and sends back clicks.
import * as vscode from "vscode";

import { builtinDetail } from "../approvals";
import type { SidecarConnection } from "../connection";
import { describeArguments } from "../format";
import { approvalSummary, type ApprovalRequestParams, type RunEvent, type RunStartParams, type SidecarHost } from "../host";
import { describe, type Logger } from "../logger";
import { modelParams, runStartParams } from "../runParams";
import { writeSetting } from "../settings";
import { APPROVAL_MODES, type ApprovalChoice, type ApprovalMode, type ChatItem, type ChatState, type FromWebview, type ToWebview } from "./protocol";
import type { RewindOutcome } from "./rewind";
import { RunItems } from "./runItems";
import { parseSlash, runSlash } from "./slashCommands";
import { transcriptItems } from "./transcript";

const SESSION_KEY = "contextSidecar.chat.sessionId";
const NEW_TITLE = "New chat";

export interface ChatDeps {
  connection: SidecarConnection;
  logger: Logger;
  /** Where the current session is remembered across window reloads. */
  memento: vscode.Memento;
  /** Posts to the webview (a no-op while it is not resolved). */
  post(message: ToWebview): void;
  /** A proposed write or edit in VS Code's diff editor; resolves with accept ("once") or reject ("deny"). */
  reviewEdit(request: ApprovalRequestParams, signal: AbortSignal): Promise<ApprovalChoice | undefined>;
  /** Closes a diff the chat answered instead. */
  closeReview(callId: string): void;
  /** A script for the scripted model, for a prompt (tests and demos), or undefined. */
  scriptFor(prompt: string): Record<string, unknown> | undefined;
  /** "Rewind to here" on the user message stored at `seq` (diff, choice, restore; RewindReview). */
  rewind(host: SidecarHost, sessionId: string, seq: number, text: string): Promise<RewindOutcome | undefined>;
}

interface Waiting {
  runId: string;
  resolve(choice: ApprovalChoice | undefined): void;
}

export class ChatController {
  private sessionId: string | undefined;
  private items: ChatItem[] = [];
  private run: RunItems | undefined;
  private runSession: string | undefined;
  /** The chat run's user item (shown before it is stored) and the session's head before it. */
  private runPrompt: { itemId: string; text: string; headBefore: number } | undefined;
  private readonly waiting = new Map<string, Waiting>();

  constructor(private readonly deps: ChatDeps) {
    this.sessionId = deps.memento.get<string>(SESSION_KEY);
  }

  get currentSession(): string | undefined {
    return this.sessionId;
  }

  get transcript(): readonly ChatItem[] {
    return this.items;
  }

  get runningRun(): string | undefined {
    return this.run && !this.run.finished ? this.run.runId : undefined;
  }

  /** Whether the chat started `runId` (its approvals are asked in the chat). */
  owns(runId: string): boolean {
    return this.run?.runId === runId;
  }

  async handle(message: FromWebview): Promise<void> {
    switch (message.type) {
      case "ready":
        return this.refresh(true);
      case "send":
        await this.send(message.text);
        return;
      case "cancel":
        return this.cancel();
      case "newSession":
        return this.newSession();
      case "switchSession":
        return this.switchTo(message.sessionId);
      case "forkSession":
        return this.fork();
      case "deleteSession":
        return this.deleteCurrent();
      case "approve":
        this.answer(message.callId, message.choice);
        return;
      case "rewind":
        return this.rewind(message.seq);
      case "reviewEdit": {
        const card = this.run?.card(message.callId);
        if (card?.approval?.edit) await vscode.commands.executeCommand("contextSidecar.reviewEdit", message.callId);
        return;
      }
      case "copy":
        await vscode.env.clipboard.writeText(message.text);
        return;
      case "insert":
        return insertAtCursor(message.text);
      case "showDashboard":
        await vscode.commands.executeCommand("contextSidecar.showDashboard");
        return;
      case "setProfile":
        await writeSetting("profile", message.profileId);
        this.deps.connection.updateSettings({ ...this.deps.connection.settings, profile: message.profileId });
        return;
      case "setMode":
        await writeSetting("builtinTools", message.mode);
        this.deps.connection.updateSettings({ ...this.deps.connection.settings, builtinTools: message.mode });
        return;
    }
  }

  /** A prompt: a slash command answered here, or a run in the current session (created if none). */
  async send(text: string, extra: Partial<RunStartParams> = {}): Promise<string | undefined> {
    const prompt = text.trim();
    if (!prompt) return undefined;
    const host = await this.deps.connection.ensure();
    const { sessionId, headSeq } = await this.ensureSession(host, prompt);
    const itemId = `pending:${Date.now()}`;
    this.upsert({ kind: "user", id: itemId, text: prompt });
    const slash = parseSlash(prompt);
    if (slash) {
      const answer = await runSlash(slash.name, slash.argument, {
        host,
        sessionId,
        root: roots()[0],
        assembly: this.deps.connection.settings.assembly,
        model: modelParams(this.deps.connection.settings),
        ...withScript(this.deps.scriptFor(prompt)),
      }).catch((err: unknown) => `\`/${slash.name}\` failed: ${describe(err)}`);
      this.upsert({ kind: "notice", id: `slash:${Date.now()}`, level: "info", text: answer });
      return undefined;
    }
    const script = this.deps.scriptFor(prompt);
    const params = { ...runStartParams(this.deps.connection.settings, sessionId, prompt, roots()), ...withScript(script), ...extra };
    const { runId } = await host.request("run/start", params);
    this.run = new RunItems(runId);
    this.runSession = sessionId;
    this.runPrompt = { itemId, text: prompt, headBefore: headSeq };
    this.deps.post({ type: "running", running: true });
    this.deps.logger.info(`chat run ${runId} started`);
    return runId;
  }

  /** Fed every run/event. */
  onRunEvent(event: RunEvent): void {
    const run = this.run;
    if (!run || event.runId !== run.runId) return;
    const changed = run.apply(event);
    if (event.sessionId === this.sessionId) for (const item of changed) this.upsert(item);
    if (event.type === "tool.resultStored" && event.payload["agent"] === undefined && !Array.isArray(event.payload["content"])) {
      void this.readResult(run, event);
    }
    if (event.type === "run.completed" && event.payload["agent"] === undefined) {
      this.deps.post({ type: "running", running: false });
      void this.storedPrompt(event.sessionId).then(() => this.refreshSessions());
    }
  }

  /** Asks about a call of a chat run in its card (and, for a write or an edit, in the diff editor). */
  ask(request: ApprovalRequestParams, signal: AbortSignal): Promise<ApprovalChoice | undefined> {
    const run = this.run;
    if (!run || run.runId !== request.runId) return Promise.resolve(undefined);
    const detail = request.builtin ? builtinDetail(request) : describeArguments(request.arguments, 400);
    const summary = request.builtin ? approvalSummary(request) : `Call ${request.name}`;
    this.show(run, run.awaiting(request, summary, detail));
    const review = new AbortController();
    return new Promise<ApprovalChoice | undefined>((resolve) => {
      const settle = (choice: ApprovalChoice | undefined): void => {
        if (!this.waiting.has(request.callId)) return;
        this.waiting.delete(request.callId);
        review.abort();
        this.deps.closeReview(request.callId);
        const approved = choice === "once" || choice === "session";
        const card = run.settled(request.callId, approved && !signal.aborted, signal.aborted ? "withdrawn" : choice === "deny" ? "denied by the user" : undefined);
        if (card) this.show(run, card);
        resolve(choice);
      };
      this.waiting.set(request.callId, { runId: request.runId, resolve: settle });
      signal.addEventListener("abort", () => settle(undefined), { once: true });
      if (request.change && !request.change.omitted) {
        void this.deps.reviewEdit(request, review.signal).then((choice) => {
          if (choice !== undefined) settle(choice);
        });
      }
    });
  }

  /** The answer to a waiting call (a card's button, or the diff editor's accept / reject). */
  answer(callId: string, choice: ApprovalChoice): boolean {
    const waiting = this.waiting.get(callId);
    waiting?.resolve(choice);
    return waiting !== undefined;
  }

  async cancel(): Promise<void> {
    const runId = this.runningRun;
    const host = this.deps.connection.current;
    if (!runId || !host) return;
    await host.request("run/cancel", { runId });
  }

  async newSession(): Promise<void> {
    const host = await this.deps.connection.ensure();
    const session = await host.request("session/create", { title: NEW_TITLE, workspaceRoots: roots() });
    await this.select(session.sessionId, []);
  }

  async switchTo(sessionId: string): Promise<void> {
    if (sessionId === this.sessionId) return;
    const host = await this.deps.connection.ensure();
    await this.select(sessionId, await readAll(host, sessionId));
  }

  async fork(): Promise<void> {
    if (!this.sessionId) return;
    const host = await this.deps.connection.ensure();
    const source = await host.request("session/get", { sessionId: this.sessionId });
    const fork = await host.request("session/fork", { sessionId: this.sessionId, title: `${source.title} (fork)` });
    await this.select(fork.sessionId, await readAll(host, fork.sessionId));
  }

  async deleteCurrent(): Promise<void> {
    const sessionId = this.sessionId;
    if (!sessionId) return;
    const host = await this.deps.connection.ensure();
    await host.request("session/delete", { sessionId });
    const { sessions } = await host.request("session/list", { limit: 1 });
    const next = sessions[0]?.sessionId;
    await this.select(next, next ? await readAll(host, next) : []);
  }

  /** The whole state to the webview (on `ready`: the current session read back first). */
  async refresh(reread = false): Promise<void> {
    const host = await this.deps.connection.ensure();
    if (reread && this.sessionId) {
      try {
        this.items = await readAll(host, this.sessionId);
      } catch (err) {
        this.deps.logger.warn(`chat: session ${this.sessionId} could not be read: ${describe(err)}`);
        this.sessionId = undefined;
        this.items = [];
      }
    }
    this.deps.post({ type: "state", state: await this.state(host) });
  }

  private async state(host: SidecarHost): Promise<ChatState> {
    const [{ sessions }, { profiles }] = await Promise.all([host.request("session/list", { limit: 50 }), host.request("profile/list", {})]);
    const settings = this.deps.connection.settings;
    return {
      sessions: sessions.map((s) => ({ sessionId: s.sessionId, title: s.title || s.sessionId, updatedAt: s.updatedAt })),
      sessionId: this.sessionId,
      items: this.items,
      running: this.runningRun !== undefined && this.runSession === this.sessionId,
      profiles: profiles.map((p) => ({ id: p.profileId, label: p.name || p.profileId })),
      profileId: settings.profile,
      mode: (APPROVAL_MODES as readonly string[]).includes(settings.builtinTools) ? (settings.builtinTools as ApprovalMode) : "ask",
    };
  }

  private async refreshSessions(): Promise<void> {
    try {
      await this.refresh(false);
    } catch (err) {
      this.deps.logger.warn(`chat: ${describe(err)}`);
    }
  }

  private async select(sessionId: string | undefined, items: ChatItem[]): Promise<void> {
    this.sessionId = sessionId;
    this.items = items;
    await this.deps.memento.update(SESSION_KEY, sessionId);
    await this.refresh(false);
  }

  private async ensureSession(host: SidecarHost, prompt: string): Promise<{ sessionId: string; headSeq: number }> {
    if (this.sessionId) {
      const session = await host.request("session/get", { sessionId: this.sessionId }).catch(() => undefined);
      if (session) {
        if (session.title === NEW_TITLE && session.headSeq === 0 && !parseSlash(prompt)) {
          await host.request("session/rename", { sessionId: session.sessionId, title: titleOf(prompt) });
        }
        return { sessionId: session.sessionId, headSeq: session.headSeq };
      }
    }
    const session = await host.request("session/create", { title: parseSlash(prompt) ? NEW_TITLE : titleOf(prompt), workspaceRoots: roots() });
    await this.select(session.sessionId, []);
    return { sessionId: session.sessionId, headSeq: session.headSeq };
  }

  /** The chat run's prompt, once stored: its user item gets its seq (and "Rewind to here"). */
  private async storedPrompt(sessionId: string): Promise<void> {
    const pending = this.runPrompt;
    const host = this.deps.connection.current;
    this.runPrompt = undefined;
    if (!pending || !host) return;
    try {
      const read = await host.request("session/read", { sessionId, afterSeq: pending.headBefore, limit: 20 });
      const stored = read.entries.find((e) => e.kind === "message" && e.role === "user" && e.content.some((p) => p.type === "text"));
      const item = this.items.find((i) => i.id === pending.itemId);
      if (stored && item?.kind === "user" && sessionId === this.sessionId) this.upsert({ ...item, seq: stored.seq });
    } catch (err) {
      this.deps.logger.debug(`chat: the stored prompt: ${describe(err)}`);
    }
  }

  /** "Rewind to here": the diff, the choice, the restore; a notice says what was done, and a
   *  forked conversation is opened with the message in the composer. */
  async rewind(seq: number): Promise<void> {
    const sessionId = this.sessionId;
    if (!sessionId) return;
    if (this.runningRun !== undefined && this.runSession === sessionId) {
      void vscode.window.showWarningMessage("Context Sidecar: cancel the run before rewinding.");
      return;
    }
    const host = await this.deps.connection.ensure();
    const message = this.items.find((i) => i.kind === "user" && i.seq === seq);
    const text = message?.kind === "user" ? message.text : "";
    const outcome = await this.deps.rewind(host, sessionId, seq, text);
    if (!outcome) return;
    if (outcome.forkedSessionId) {
      await this.select(outcome.forkedSessionId, await readAll(host, outcome.forkedSessionId));
      this.deps.post({ type: "setPrompt", text });
    }
    this.upsert({ kind: "notice", id: `rewind:${Date.now()}`, level: "info", text: outcome.notice });
  }

  /** A host tool's result (the event does not carry it): read back from history. */
  private async readResult(run: RunItems, event: RunEvent): Promise<void> {
    const seq = event.payload["seq"];
    const callId = String(event.payload["callId"]);
    const host = this.deps.connection.current;
    if (typeof seq !== "number" || !host) return;
    try {
      const read = await host.request("session/read", { sessionId: event.sessionId, afterSeq: seq - 1, limit: 1 });
      const entry = read.entries[0];
      if (entry?.kind !== "message") return;
      for (const part of entry.content) {
        if (part.type !== "toolResult" || part.callId !== callId) continue;
        const text = part.content.map((c) => (c.type === "text" ? c.text : "[image]")).join("");
        const card = run.resultText(callId, text, part.isError === true);
        if (card) this.show(run, card);
      }
    } catch (err) {
      this.deps.logger.debug(`chat: result of ${callId}: ${describe(err)}`);
    }
  }

  private show(run: RunItems, item: ChatItem): void {
    if (this.runSession === this.sessionId && run === this.run) this.upsert(item);
  }

  private upsert(item: ChatItem): void {
    const at = this.items.findIndex((i) => i.id === item.id);
    if (at >= 0) this.items[at] = { ...item };
    else this.items.push({ ...item });
    this.deps.post({ type: "item", item });
  }
}

function roots(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
}

function titleOf(prompt: string): string {
  const line = prompt.split("\n")[0]!.trim();
  return line.length > 48 ? `${line.slice(0, 47)}…` : line;
}

function withScript(script: Record<string, unknown> | undefined): { script?: Record<string, unknown> } {
  return script ? { script } : {};
}

async function readAll(host: SidecarHost, sessionId: string): Promise<ChatItem[]> {
  const entries = [];
  let after = 0;
  for (;;) {
    const page = await host.request("session/read", { sessionId, afterSeq: after, limit: 200 });
    entries.push(...page.entries);
    if (!page.hasMore || page.entries.length === 0) break;
    after = page.entries.at(-1)!.seq;
  }
  return transcriptItems(entries);
}

async function insertAtCursor(text: string): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    void vscode.window.showInformationMessage("Context Sidecar: no editor to insert into");
    return;
  }
  await editor.edit((edit) => {
    for (const selection of editor.selections) edit.replace(selection, text);
  });
}
