// What the chat view's tests share: the bundled extension activated on the stub `vscode`, its
// chat view resolved and ready, the host's run events collected; waiting for a condition; the
// items the webview shows; a prompt sent and its run awaited.
import assert from "node:assert/strict";
import path from "node:path";

import { memento, resolveView, type StubWebview } from "./vscodeStub";
import type { ContextSidecarApi } from "../extension";
import type { ChatItem, ChatState } from "../chat/protocol";
import type { RunEvent, SidecarHost } from "../host";

const BUNDLE = path.resolve(__dirname, "..", "extension.js");
export const extension = require(BUNDLE) as typeof import("../extension");

export interface OpenChat {
  api: ContextSidecarApi;
  view: StubWebview;
  host: SidecarHost;
  /** Every run event the host has seen, in order. */
  events: RunEvent[];
}

/** Polls ``get`` every 20 ms until it gives a value, failing after ``ms`` with ``what``. */
export async function until<T>(what: string, get: () => T | undefined | false, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = get();
    if (value) return value;
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Activates the extension, resolves its chat view and waits for the view's first state. */
export async function openChat(workspaceState = memento()): Promise<OpenChat> {
  const api = extension.activate({ subscriptions: [], extensionUri: { fsPath: path.resolve(__dirname, "..", "..") }, workspaceState } as never);
  const view = resolveView("contextSidecar.chat");
  view.send({ type: "ready" });
  const host = await api.host();
  const events: RunEvent[] = [];
  host.onRunEvent((e) => events.push(e));
  await until("the first state", () => view.posted.some((m) => m.type === "state"));
  return { api, view, host, events };
}

/** The latest version of each item the webview was sent (state, then upserts). */
export function shownItems(view: StubWebview): ChatItem[] {
  const items = new Map<string, ChatItem>();
  for (const m of view.posted) {
    if (m.type === "state") {
      items.clear();
      for (const item of (m["state"] as ChatState).items) items.set(item.id, item);
    } else if (m.type === "item") {
      const item = m["item"] as ChatItem;
      items.set(item.id, item);
    }
  }
  return [...items.values()];
}

/** Sends ``prompt`` from the composer and waits for its run (not a sub-agent's) to end. */
export function sendAndWait(chat: OpenChat, prompt: string, ms?: number): Promise<RunEvent> {
  const before = chat.events.length;
  chat.view.send({ type: "send", text: prompt });
  return until(
    `the run of "${prompt}"`,
    () => chat.events.slice(before).find((e) => e.type === "run.completed" && e.payload["agent"] === undefined),
    ms,
  );
}
