// DOM for each chat item: user turns ("Rewind to here" once stored), answers (markdown; thinking collapsed), tool cards
// (status, arguments, approval buttons, bounded output to expand), the model's todo list (a
// compact checklist), usage lines, notices.
// Elements are built with textContent / setAttribute; markdown is the only HTML, and it is
// rendered with raw HTML off.
import type { ChatItem, PlanItem, ToolCard } from "../chat/protocol";
import { renderMarkdown } from "./markdown";

export type Send = (message: import("../chat/protocol").FromWebview) => void;

export function el(tag: string, attrs: Record<string, string> = {}, text?: string): HTMLElement {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

/** ``text`` with its `code spans` as <code> elements (text nodes only: nothing is parsed as HTML). */
function withCodeSpans(node: HTMLElement, text: string): HTMLElement {
  text.split("`").forEach((piece, i) => {
    if (piece) node.append(i % 2 === 1 ? el("code", {}, piece) : document.createTextNode(piece));
  });
  return node;
}

function button(label: string, testid: string, onClick: () => void, secondary = false): HTMLElement {
  const b = el("vscode-button", { "data-testid": testid, ...(secondary ? { secondary: "" } : {}) }, label);
  b.addEventListener("click", onClick);
  return b;
}

/** Markdown with a copy / insert bar on each code block. */
function markdownBlock(text: string, send: Send): HTMLElement {
  const body = el("div", { class: "markdown" });
  body.innerHTML = renderMarkdown(text);
  for (const pre of Array.from(body.querySelectorAll("pre"))) {
    const code = pre.textContent ?? "";
    const bar = el("div", { class: "code-actions" });
    bar.append(
      button("Copy", "copy-code", () => send({ type: "copy", text: code }), true),
      button("Insert", "insert-code", () => send({ type: "insert", text: code }), true),
    );
    const wrap = el("div", { class: "code-block" });
    pre.replaceWith(wrap);
    wrap.append(bar, pre);
  }
  return body;
}

const STATUS_LABEL: Record<ToolCard["status"], string> = {
  running: "running",
  awaiting: "waiting for you",
  done: "done",
  failed: "failed",
  denied: "denied",
};

function toolCard(card: ToolCard, send: Send): HTMLElement {
  const node = el("div", { class: `tool-card status-${card.status}`, "data-testid": "tool-card", "data-status": card.status, "data-call": card.callId });
  const head = el("div", { class: "tool-head" });
  head.append(withCodeSpans(el("span", { class: "tool-title", title: card.title }), card.title), el("vscode-badge", { "data-testid": "tool-status" }, STATUS_LABEL[card.status]));
  node.append(head, el("div", { class: "tool-args", title: card.args }, `${card.name} ${card.args}`));
  if (card.approval) {
    const box = el("div", { class: "approval", "data-testid": "approval" });
    const summary = el("div", { class: "approval-summary" });
    summary.innerHTML = renderMarkdown(`${card.approval.summary}?`); // `code` as code, HTML escaped
    box.append(summary, el("div", { class: "approval-detail" }, card.approval.detail));
    const actions = el("div", { class: "approval-actions" });
    const choose = (choice: "once" | "session" | "deny") => () => send({ type: "approve", callId: card.callId, choice });
    if (card.approval.edit) actions.append(button("Review diff", "review-diff", () => send({ type: "reviewEdit", callId: card.callId }), true));
    actions.append(
      button(card.approval.edit ? "Accept" : "Allow once", "approve-once", choose("once")),
      button("Allow for this session", "approve-session", choose("session"), true),
      button(card.approval.edit ? "Reject" : "Deny", "approve-deny", choose("deny"), true),
    );
    box.append(actions);
    node.append(box);
  }
  if (card.reason) node.append(el("div", { class: "tool-reason" }, card.reason));
  if (card.output) {
    const details = el("details", { class: "tool-output", "data-testid": "tool-output" });
    const lines = card.output.split("\n").length;
    details.append(el("summary", {}, `output: ${lines} line${lines === 1 ? "" : "s"}${card.outputMore ? ` (+${card.outputMore.toLocaleString("en-US")} characters not shown)` : ""}`));
    details.append(el("pre", {}, card.output));
    node.append(details);
  }
  return node;
}

const STEP_MARK: Record<PlanItem["steps"][number]["status"], string> = {
  completed: "☑",
  in_progress: "◐",
  pending: "☐",
};

function planList(item: PlanItem): HTMLElement {
  const node = el("div", { class: "item plan", "data-testid": "plan" });
  const done = item.steps.filter((s) => s.status === "completed").length;
  node.append(el("div", { class: "plan-head" }, `Plan · ${done}/${item.steps.length} done`));
  const list = el("ul", { class: "plan-steps" });
  for (const step of item.steps) {
    const li = el("li", { class: `plan-step ${step.status} priority-${step.priority}`, "data-testid": "plan-step", "data-status": step.status });
    li.append(el("span", { class: "plan-mark", "aria-label": step.status.replace("_", " ") }, STEP_MARK[step.status]), el("span", { class: "plan-text" }, step.content));
    list.append(li);
  }
  node.append(list);
  return node;
}

export function renderItem(item: ChatItem, send: Send): HTMLElement {
  let node: HTMLElement;
  switch (item.kind) {
    case "user": {
      node = el("div", { class: "item user", "data-testid": "item-user" });
      node.append(el("div", { class: "bubble" }, item.text));
      const seq = item.seq;
      if (seq !== undefined) {
        const bar = el("div", { class: "user-actions" });
        const rewind = button("Rewind to here", "rewind", () => send({ type: "rewind", seq }), true);
        rewind.setAttribute("title", "Put the files and/or the conversation back as they were when this message was sent (shows the diff first)");
        bar.append(rewind);
        node.append(bar);
      }
      break;
    }
    case "assistant": {
      node = el("div", { class: `item assistant${item.streaming ? " streaming" : ""}`, "data-testid": "item-assistant" });
      if (item.thinking) {
        const details = el("details", { class: "thinking", "data-testid": "thinking" });
        details.append(el("summary", {}, item.streaming && !item.text ? "Thinking…" : "Thinking"), el("div", { class: "thinking-text" }, item.thinking));
        node.append(details);
      }
      node.append(markdownBlock(item.text, send));
      if (item.streaming) node.append(el("vscode-progress-ring", { class: "streaming-ring" }));
      break;
    }
    case "tool":
      node = toolCard(item, send);
      break;
    case "plan":
      node = planList(item);
      break;
    case "usage":
      node = el("div", { class: "item usage", "data-testid": "usage" }, item.line);
      break;
    case "notice":
      node = el("div", { class: `item notice ${item.level}`, "data-testid": "notice" });
      node.append(markdownBlock(item.text, send));
      break;
  }
  node.id = `item-${item.id}`;
  return node;
}
