// The messages between the extension and the chat webview, typed once for both sides (the
// webview bundle imports this file too: no `vscode` import here). The extension owns the state;
// the webview renders it and sends back what the user did.

/** One row of the session list. */
export interface SessionRow {
  sessionId: string;
  title: string;
  updatedAt: string;
}

export type ApprovalChoice = "once" | "session" | "deny";

export type ToolStatus = "running" | "awaiting" | "done" | "failed" | "denied";

/** A tool call as a card: what, its arguments in a line, its status, its output (bounded). */
export interface ToolCard {
  kind: "tool";
  id: string;
  callId: string;
  name: string;
  /** "Read calc/add.py", "Run `pytest -q`", or the tool's name. */
  title: string;
  /** The arguments on one line, cut. */
  args: string;
  status: ToolStatus;
  /** The result's text as the model read it, cut to a bound; `outputMore` says how much was cut. */
  output?: string;
  outputMore?: number;
  /** Why the call was denied or refused. */
  reason?: string;
  /** Set while the call waits on the user. */
  approval?: {
    summary: string;
    detail: string;
    /** A write or an edit: the card offers the diff editor, and accept / reject. */
    edit: boolean;
  };
}

export interface UserItem {
  kind: "user";
  id: string;
  text: string;
  /** The stored message's seq (once stored): the turn offers "Rewind to here". */
  seq?: number;
}

export interface AssistantItem {
  kind: "assistant";
  id: string;
  /** Markdown. */
  text: string;
  /** The model's reasoning ("thinking"), shown collapsed. */
  thinking: string;
  streaming: boolean;
}

/** The turn's tokens, cache read share and cost, under its last answer. */
export interface UsageItem {
  kind: "usage";
  id: string;
  line: string;
}

/** A slash command's answer (markdown), a run failure, a compaction. */
export interface NoticeItem {
  kind: "notice";
  id: string;
  text: string;
  level: "info" | "error";
}

/** One step of the model's todo list. */
export interface PlanStep {
  content: string;
  status: "pending" | "in_progress" | "completed";
  priority: "high" | "medium" | "low";
}

/** The model's todo list (`update_plan`): a compact checklist, replaced by each update. */
export interface PlanItem {
  kind: "plan";
  id: string;
  steps: PlanStep[];
}

export type ChatItem = UserItem | AssistantItem | ToolCard | UsageItem | NoticeItem | PlanItem;

export interface ProfileOption {
  id: string;
  label: string;
}

export const APPROVAL_MODES = ["ask", "accept_edits", "auto", "plan", "read_only", "allow_all", "off"] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];

/** The whole view: sent on `ready`, on a session switch and when the header changes. */
export interface ChatState {
  sessions: SessionRow[];
  sessionId: string | undefined;
  items: ChatItem[];
  running: boolean;
  profiles: ProfileOption[];
  /** "" for the settings' default (`contextSidecar.assembly`). */
  profileId: string;
  mode: ApprovalMode;
}

/** Extension -> webview. */
export type ToWebview =
  | { type: "state"; state: ChatState }
  /** Insert or replace an item (by id) of the current session's transcript. */
  | { type: "item"; item: ChatItem }
  | { type: "running"; running: boolean }
  | { type: "focusInput" }
  /** Put `text` in the composer, to edit and send again (a conversation rewound before it). */
  | { type: "setPrompt"; text: string };

/** Webview -> extension. */
export type FromWebview =
  | { type: "ready" }
  | { type: "send"; text: string }
  | { type: "cancel" }
  | { type: "newSession" }
  | { type: "switchSession"; sessionId: string }
  | { type: "forkSession" }
  | { type: "deleteSession" }
  | { type: "approve"; callId: string; choice: ApprovalChoice }
  | { type: "reviewEdit"; callId: string }
  /** "Rewind to here" on the user message stored at `seq`. */
  | { type: "rewind"; seq: number }
  | { type: "copy"; text: string }
  | { type: "insert"; text: string }
  | { type: "showDashboard" }
  | { type: "setProfile"; profileId: string }
  | { type: "setMode"; mode: ApprovalMode };

/** The slash commands, as the ACP face has them. */
export const SLASH_COMMANDS = ["/context", "/compact", "/pin", "/snapshot"] as const;

/** Whether `message` is one the webview may send (the extension checks before it acts). */
export function isFromWebview(message: unknown): message is FromWebview {
  if (message === null || typeof message !== "object") return false;
  const m = message as Record<string, unknown>;
  switch (m["type"]) {
    case "ready":
    case "cancel":
    case "newSession":
    case "forkSession":
    case "deleteSession":
    case "showDashboard":
      return true;
    case "send":
    case "copy":
    case "insert":
      return typeof m["text"] === "string";
    case "switchSession":
      return typeof m["sessionId"] === "string";
    case "approve":
      return typeof m["callId"] === "string" && ["once", "session", "deny"].includes(String(m["choice"]));
    case "reviewEdit":
      return typeof m["callId"] === "string";
    case "rewind":
      return Number.isInteger(m["seq"]) && Number(m["seq"]) > 0;
    case "setProfile":
      return typeof m["profileId"] === "string";
    case "setMode":
      return (APPROVAL_MODES as readonly string[]).includes(String(m["mode"]));
    default:
      return false;
  }
}
