// The tools this editor offers to runs, and their execution for `tool/execute`: `read_file`,
// answered from VS Code's open document when there is one (unsaved changes included), else from
// disk, as a numbered window shaped as the sidecar's built-in read_file shapes it. With the
// built-in tools on, this read_file takes the built-in one's place (runParams.ts), so a run reads
// what the user sees in the editor, as the ACP face's `fs/read_text_file` gives it.
import * as path from "node:path";
import * as vscode from "vscode";

import type { ToolDefinition, ToolExecuteParams, ToolExecuteResult } from "./host";

const MAX_BYTES = 20 * 1024 * 1024;
const READ_LINES = 2_000;
const LINE_CHARS = 2_000;
/** ~10k tokens at 3 characters a token: the built-in tools' default bound. */
const MAX_CHARS = 30_000;

export const READ_FILE: ToolDefinition = {
  name: "read_file",
  description:
    "Read a text file of the workspace (path relative to the workspace root) as the editor has it, unsaved changes included: " +
    "numbered lines, 2,000 from `offset` (1-based); the last line says which offset reads on.",
  parameters: {
    type: "object",
    properties: { path: { type: "string" }, offset: { type: "integer", minimum: 1 }, limit: { type: "integer", minimum: 1 } },
    required: ["path"],
  },
};

export const TOOLS: ToolDefinition[] = [READ_FILE];

function failure(text: string): ToolExecuteResult {
  return { content: [{ type: "text", text }], isError: true };
}

function positive(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value > 0 ? value : undefined;
}

/** `text` as a numbered window (`cat -n`), bounded as the sidecar's `number_lines` bounds it. */
export function numberLines(text: string, shown: string, offset?: number, limit?: number): string {
  const lines = text.replace(/^\ufeff/, "").split(/\r?\n/);
  if (lines.at(-1) === "") lines.pop();
  const total = lines.length;
  const start = Math.max(1, offset ?? 1);
  const count = limit ?? READ_LINES;
  if (total && start > total) throw new Error(`${shown} has ${total} lines; offset ${start} is past the end`);
  const last = Math.min(total, start + count - 1);
  const width = String(last || 1).length;
  const out: string[] = [];
  let used = 0;
  let end = start - 1;
  for (let n = start; n <= last; n++) {
    const raw = lines[n - 1]!;
    const line = `${String(n).padStart(width)}\t${raw.length > LINE_CHARS ? `${raw.slice(0, LINE_CHARS)}…` : raw}`;
    if (used + line.length + 1 > MAX_CHARS && out.length > 0) break;
    out.push(line);
    used += line.length + 1;
    end = n;
  }
  if (!total) out.push(`(${shown} is empty)`);
  else if (end < total) out.push(`[lines ${start}-${end} of ${total} shown; read on with offset=${end + 1} (or grep for what you need)]`);
  return out.join("\n");
}

/** The text of `file` as VS Code has it: the open document's (dirty or not), else undefined. */
export function openDocumentText(file: string): string | undefined {
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === file);
  return doc?.getText();
}

export async function executeTool(params: ToolExecuteParams, signal: AbortSignal): Promise<ToolExecuteResult> {
  if (params.name !== "read_file") return failure(`unknown tool ${params.name}`);
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!root) return failure("no workspace folder is open");
  const rel = params.arguments["path"];
  if (typeof rel !== "string" || rel === "") return failure("read_file needs a `path` string");
  const resolved = path.resolve(root.fsPath, rel);
  const relative = path.relative(root.fsPath, resolved);
  if (relative.startsWith("..") || path.isAbsolute(relative)) return failure(`${rel} is outside the workspace`);
  try {
    let text = openDocumentText(resolved);
    if (text === undefined) {
      const bytes = await vscode.workspace.fs.readFile(vscode.Uri.file(resolved));
      if (bytes.length > MAX_BYTES) return failure(`${rel} is larger than 20 MiB; not read`);
      if (bytes.subarray(0, 8192).includes(0)) return failure(`${rel} is a binary file (${bytes.length} bytes); not read`);
      text = new TextDecoder().decode(bytes);
    }
    if (signal.aborted) return failure("cancelled");
    return { content: [{ type: "text", text: numberLines(text, relative, positive(params.arguments["offset"]), positive(params.arguments["limit"])) }] };
  } catch (err) {
    return failure(`cannot read ${rel}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
