// The chat webview: header (sessions: new, switch, fork, delete; model; approval mode; the
// dashboard), the transcript, the composer (send, cancel). It renders what the extension posts
// and sends back what the user does; it keeps no state the extension does not have.
import "@vscode-elements/elements/dist/vscode-badge/index.js";
import "@vscode-elements/elements/dist/vscode-button/index.js";
import "@vscode-elements/elements/dist/vscode-option/index.js";
import "@vscode-elements/elements/dist/vscode-progress-ring/index.js";
import "@vscode-elements/elements/dist/vscode-single-select/index.js";
import "@vscode-elements/elements/dist/vscode-textarea/index.js";

import { APPROVAL_MODES, SLASH_COMMANDS, type ChatItem, type ChatState, type FromWebview, type ToWebview } from "../chat/protocol";
import { el, renderItem } from "./render";

declare function acquireVsCodeApi(): { postMessage(message: unknown): void };
const vscode = acquireVsCodeApi();
const send = (message: FromWebview): void => vscode.postMessage(message);

const MODE_LABELS: Record<string, string> = {
  ask: "Ask before edits and commands",
  accept_edits: "Accept edits",
  auto: "Auto (commands in a sandbox)",
  plan: "Plan (read only, plan first)",
  read_only: "Read only",
  allow_all: "Allow all",
  off: "Extension's read_file only",
};

const app = document.getElementById("app")!;
const header = el("div", { class: "header" });
const sessionRow = el("div", { class: "row" });
const sessionSelect = el("vscode-single-select", { "data-testid": "session-select", class: "grow" }) as HTMLElement & { value: string };
const settingsRow = el("div", { class: "row" });
const modelSelect = el("vscode-single-select", { "data-testid": "model-select", class: "grow", title: "Model (stored profile)" }) as HTMLElement & { value: string };
const modeSelect = el("vscode-single-select", { "data-testid": "mode-select", class: "grow", title: "Approval mode" }) as HTMLElement & { value: string };
const transcript = el("div", { class: "transcript", "data-testid": "transcript" });
const empty = el("div", { class: "empty" }, `Ask about this workspace. Commands: ${SLASH_COMMANDS.join(" ")} PATH`);
const composer = el("div", { class: "composer" });
const prompt = el("vscode-textarea", { "data-testid": "prompt", rows: "3", placeholder: "Ask, or /context /compact /pin PATH /snapshot (Enter sends, Shift+Enter breaks the line)" }) as HTMLElement & { value: string };
const actions = el("div", { class: "row end" });

function headerButton(label: string, testid: string, message: FromWebview, title: string): HTMLElement {
  const b = el("vscode-button", { "data-testid": testid, secondary: "", title }, label);
  b.addEventListener("click", () => send(message));
  return b;
}

sessionRow.append(
  sessionSelect,
  headerButton("New", "new-session", { type: "newSession" }, "New session"),
  headerButton("Fork", "fork-session", { type: "forkSession" }, "Fork this session"),
  headerButton("Delete", "delete-session", { type: "deleteSession" }, "Delete this session (moved to the store's trash)"),
);
settingsRow.append(modelSelect, modeSelect, headerButton("Dashboard", "show-dashboard", { type: "showDashboard" }, "Context dashboard"));
header.append(sessionRow, settingsRow);
const sendButton = el("vscode-button", { "data-testid": "send" }, "Send");
const cancelButton = el("vscode-button", { "data-testid": "cancel", secondary: "", hidden: "" }, "Cancel");
actions.append(cancelButton, sendButton);
composer.append(prompt, actions);
app.append(header, transcript, composer);

let renderingSelects = false;
sessionSelect.addEventListener("change", () => {
  if (!renderingSelects && sessionSelect.value) send({ type: "switchSession", sessionId: sessionSelect.value });
});
modelSelect.addEventListener("change", () => {
  if (!renderingSelects) send({ type: "setProfile", profileId: modelSelect.value });
});
modeSelect.addEventListener("change", () => {
  if (!renderingSelects) send({ type: "setMode", mode: modeSelect.value as ChatState["mode"] });
});

function submit(): void {
  const text = prompt.value.trim();
  if (!text) return;
  send({ type: "send", text });
  prompt.value = "";
}
sendButton.addEventListener("click", submit);
cancelButton.addEventListener("click", () => send({ type: "cancel" }));
prompt.addEventListener("keydown", (event: Event) => {
  const e = event as KeyboardEvent;
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    submit();
  }
});

function options(select: HTMLElement & { value: string }, list: { value: string; label: string }[], selected: string): void {
  select.replaceChildren(...list.map((o) => el("vscode-option", { value: o.value, ...(o.value === selected ? { selected: "" } : {}) }, o.label)));
  select.value = selected;
}

function setRunning(running: boolean): void {
  cancelButton.toggleAttribute("hidden", !running);
  sendButton.toggleAttribute("disabled", running);
  app.classList.toggle("running", running);
}

function nearBottom(): boolean {
  return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 80;
}

function upsert(item: ChatItem): void {
  const follow = nearBottom();
  const node = renderItem(item, send);
  const old = document.getElementById(node.id);
  // a user turn shown on send is replaced by the stored one on a re-read; keep one
  if (old) {
    const details = old.querySelectorAll("details");
    const open = Array.from(details).map((d) => d.open);
    node.querySelectorAll("details").forEach((d, i) => (d.open = open[i] ?? d.open));
    old.replaceWith(node);
  } else transcript.append(node);
  empty.remove();
  if (follow) transcript.scrollTop = transcript.scrollHeight;
}

function renderState(state: ChatState): void {
  renderingSelects = true;
  try {
    const sessions = state.sessions.map((s) => ({ value: s.sessionId, label: s.title }));
    if (state.sessionId && !sessions.some((s) => s.value === state.sessionId)) sessions.unshift({ value: state.sessionId, label: state.sessionId });
    if (!state.sessionId) sessions.unshift({ value: "", label: "(no session yet)" });
    options(sessionSelect, sessions, state.sessionId ?? "");
    options(modelSelect, [{ value: "", label: "Default model (settings)" }, ...state.profiles.map((p) => ({ value: p.id, label: p.label }))], state.profileId);
    options(modeSelect, APPROVAL_MODES.map((m) => ({ value: m, label: MODE_LABELS[m] ?? m })), state.mode);
  } finally {
    renderingSelects = false;
  }
  transcript.replaceChildren();
  if (state.items.length === 0) transcript.append(empty);
  for (const item of state.items) upsert(item);
  setRunning(state.running);
  transcript.scrollTop = transcript.scrollHeight;
}

window.addEventListener("message", (event: MessageEvent) => {
  const message = event.data as ToWebview;
  switch (message.type) {
    case "state":
      renderState(message.state);
      break;
    case "item":
      upsert(message.item);
      break;
    case "running":
      setRunning(message.running);
      break;
    case "focusInput":
      prompt.focus();
      break;
    case "setPrompt":
      prompt.value = message.text;
      prompt.focus();
      break;
  }
});

send({ type: "ready" });
