// Tool cards from what a run or the history says about a call: its title, its arguments in a
// line, its output cut to a bound. Pure (no `vscode`), shared by the live stream and the
// transcript read back.
import { describeArguments } from "../format";
import type { ToolCard } from "./protocol";

/** Characters of a result a card carries (the rest is counted, not sent). */
export const OUTPUT_BOUND = 4_000;
const ARGS_BOUND = 160;

/** What the card says a call does when the event gave no title (history, host tools). */
export function toolTitle(name: string, args: Record<string, unknown>): string {
  const path = typeof args["path"] === "string" ? args["path"] : undefined;
  switch (name) {
    case "read_file":
      return path ? `Read ${path}` : "Read";
    case "write_file":
      return path ? `Write ${path}` : "Write";
    case "edit_file":
      return path ? `Edit ${path}` : "Edit";
    case "list_dir":
      return `List ${path ?? "."}`;
    case "glob":
      return `Find ${String(args["pattern"] ?? "")}`;
    case "grep":
      return `Search ${String(args["pattern"] ?? "")}`;
    case "run_command":
      return `Run \`${String(args["command"] ?? "")}\``;
    default:
      return name;
  }
}

export function newCard(callId: string, name: string, args: Record<string, unknown>, title?: string | null): ToolCard {
  return {
    kind: "tool",
    id: `tool:${callId}`,
    callId,
    name,
    title: title || toolTitle(name, args),
    args: describeArguments(args, ARGS_BOUND),
    status: "running",
  };
}

/** The text of result parts (`{type: "text", text}`), images named. */
export function partsText(parts: readonly unknown[]): string {
  return parts
    .map((part) => {
      const p = part as Record<string, unknown> | null;
      if (p?.["type"] === "text" && typeof p["text"] === "string") return p["text"];
      if (p?.["type"] === "image") return "[image]";
      return "";
    })
    .join("");
}

/** `card` with its result: status, the output cut to OUTPUT_BOUND. A result that says the
 *  call was not approved (the sidecar's wording) makes the card "denied". */
export function withResult(card: ToolCard, text: string, isError: boolean): ToolCard {
  const denied = isError && /not approved/.test(text);
  const output = text.length > OUTPUT_BOUND ? text.slice(0, OUTPUT_BOUND) : text;
  const next: ToolCard = { ...card, status: denied ? "denied" : isError ? "failed" : "done", output };
  delete next.approval;
  if (text.length > OUTPUT_BOUND) next.outputMore = text.length - OUTPUT_BOUND;
  if (denied) next.reason = text.replace(/^.*?not approved:?\s*/s, "").trim() || "not approved";
  return next;
}
