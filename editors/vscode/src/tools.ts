// The tools this editor offers to runs, and their execution for `tool/execute`.
import * as path from "node:path";
import * as vscode from "vscode";

import type { ToolDefinition, ToolExecuteParams, ToolExecuteResult } from "./host";

const MAX_BYTES = 256 * 1024;

export const TOOLS: ToolDefinition[] = [
  {
    name: "read_file",
    description: "Read a text file of the workspace (path relative to the workspace root).",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
];

function failure(text: string): ToolExecuteResult {
  return { content: [{ type: "text", text }], isError: true };
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
    const bytes = await vscode.workspace.fs.readFile(vscode.Uri.file(resolved));
    if (signal.aborted) return failure("cancelled");
    const text = new TextDecoder().decode(bytes.subarray(0, MAX_BYTES));
    return { content: [{ type: "text", text: bytes.length > MAX_BYTES ? `${text}\n[truncated]` : text }] };
  } catch (err) {
    return failure(`cannot read ${rel}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
