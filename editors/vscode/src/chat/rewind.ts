// "Rewind to here" on a user message of the chat: what would change first, in VS Code's diff
// editor (the file now on the left, as the rewind would leave it on the right: a virtual
// document of the `context-sidecar-checkpoint` scheme holding the checkpoint's blob; one file in
// `vscode.diff`, several in the multi-file diff editor, `vscode.changes`), then the choice
// (code / conversation / both) in a quick pick, then `checkpoint/restore` through the host
// library's `rewindTo`. Files changed outside the agent since are conflicts: a modal names them
// and offers to overwrite them ("force"); dismissed, nothing is done. A files rewind is undone by
// *Context Sidecar: Undo Last Rewind* (contextSidecar.undoRewind): the checkpoint the restore
// took first, restored the same way.
import * as path from "node:path";

import * as vscode from "vscode";

import {
  previewRewind,
  readBlobText,
  restoreCheckpoint,
  rewindTo,
  type CheckpointDiffResult,
  type CheckpointRestoreResult,
  type RewindChoice,
  type SidecarHost,
} from "../host";

type FileChange = CheckpointDiffResult["files"][number];

export const CHECKPOINT_SCHEME = "context-sidecar-checkpoint";
/** The modal's button that overwrites files changed outside the agent. */
export const FORCE = "Overwrite them (force)";
/** The diffs shown together, and the text read for them (bytes of unified diff asked for). */
const MAX_DIFF_FILES = 50;
const MAX_DIFF_BYTES = 512 * 1024;

const UNDO: Record<FileChange["change"], string> = { added: "deleted", modified: "put back", deleted: "recreated" };

/** What a rewind did, for the chat: a notice, and the conversation's fork (if one was made). */
export interface RewindOutcome {
  notice: string;
  forkedSessionId?: string;
}

interface Choice extends vscode.QuickPickItem {
  choice: RewindChoice;
}

export class RewindReview implements vscode.TextDocumentContentProvider, vscode.Disposable {
  /** The virtual documents' text by uri path (`/<checkpointId>/<root index>/<path>`). */
  private readonly texts = new Map<string, string>();
  private readonly disposables: vscode.Disposable[];
  /** The last files rewind: its session and the checkpoint that undoes it. */
  private lastUndo: { sessionId: string; checkpointId: string; label: string } | undefined;

  constructor(private readonly host: () => Promise<SidecarHost>) {
    this.disposables = [
      vscode.workspace.registerTextDocumentContentProvider(CHECKPOINT_SCHEME, this),
      vscode.commands.registerCommand("contextSidecar.undoRewind", () => this.undo()),
    ];
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? "";
  }

  /** The rewind to the user message stored at `seq` (`text`: the message, for the titles);
   *  undefined when the user dismissed it. */
  async rewind(host: SidecarHost, sessionId: string, seq: number, text: string): Promise<RewindOutcome | undefined> {
    const { checkpoint, diff, unavailable } = await previewRewind(host, sessionId, seq, MAX_DIFF_BYTES);
    const files = diff?.files ?? [];
    const label = `"${firstLine(text)}"`;
    if (checkpoint && files.length > 0) await this.showDiff(host, checkpoint.checkpointId, files, label);
    const changed = files.length === 0 ? "no file changed since" : `${files.length} file${files.length === 1 ? "" : "s"} changed since: ${files.map((f) => f.path).slice(0, 6).join(", ")}${files.length > 6 ? ", …" : ""}`;
    const conversation: Choice = { choice: "conversation", label: "Conversation", detail: "Fork the conversation before this message, to edit it and send it again; the files stay as they are" };
    // files that cannot be rewound (too large a workspace): the conversation only, and why
    const items: Choice[] = unavailable
      ? [{ ...conversation, description: `files: ${unavailable}` }]
      : [
          { choice: "both", label: "Code and conversation", detail: `Put the files back (${changed}) and fork the conversation before this message` },
          { choice: "code", label: "Code", detail: `Put the files back as they were when this message was sent (${changed}); the conversation goes on` },
          conversation,
        ];
    const picked = await vscode.window.showQuickPick(items, { title: `Rewind to before ${label}`, placeHolder: "What to rewind (the diff shows what the files would become)" });
    if (!picked) return undefined;
    const result = await withForce(
      (force) => rewindTo(host, sessionId, seq, picked.choice, force),
      "nothing was rewound",
    );
    if (result.status === "conflicts") {
      const conflicts = (result.conflicts ?? []).map((c) => `- \`${c.path}\`: ${c.reason}`);
      return { notice: `**Not rewound**: changed outside the agent since:\n\n${conflicts.join("\n")}` };
    }
    await this.closeDiffs();
    const lines = [`**Rewound** to before ${label} (${picked.label.toLowerCase()}).`];
    if (picked.choice !== "conversation") {
      const restored = result.restored ?? [];
      lines.push(restored.length === 0 ? "The files were already as they were then." : `Files: ${restored.map((r) => `\`${r.path}\` ${r.action}`).join(", ")}.`);
      for (const n of result.notRestored ?? []) lines.push(`Not restored: \`${n.path}\` (${n.reason}).`);
      if (result.undoCheckpointId && restored.length > 0) {
        this.lastUndo = { sessionId, checkpointId: result.undoCheckpointId, label };
        lines.push(`Undo with *Context Sidecar: Undo Last Rewind* (checkpoint \`${result.undoCheckpointId}\`, taken before rewinding).`);
      }
    }
    if (result.forkedSessionId) lines.push(`The conversation before it is a new session (this one is kept); its prompt is in the box to edit and send again.`);
    return { notice: lines.join("\n\n"), ...(result.forkedSessionId ? { forkedSessionId: result.forkedSessionId } : {}) };
  }

  private async showDiff(host: SidecarHost, checkpointId: string, files: readonly FileChange[], label: string): Promise<void> {
    const shown = files.filter((f) => !f.binary && !f.notCaptured).slice(0, MAX_DIFF_FILES);
    const roots = [...new Set(files.map((f) => f.root))];
    const pairs: [vscode.Uri, vscode.Uri, vscode.Uri][] = [];
    for (const file of shown) {
      const key = `/${checkpointId}/${roots.indexOf(file.root)}/${file.path}`;
      const onDisk = vscode.Uri.file(path.join(file.root, ...file.path.split("/")));
      const now = file.change === "deleted" ? vscode.Uri.from({ scheme: CHECKPOINT_SCHEME, path: `${key}.now` }) : onDisk;
      const then = vscode.Uri.from({ scheme: CHECKPOINT_SCHEME, path: key });
      this.texts.set(`${key}.now`, "");
      this.texts.set(key, file.before ? await readBlobText(host, file.before) : "");
      pairs.push([onDisk, now, then]);
    }
    if (pairs.length === 1) {
      const [, now, then] = pairs[0]!;
      const file = shown[0]!;
      await vscode.commands.executeCommand("vscode.diff", now, then, `${file.path}: now ↔ rewound (${file.change} since, would be ${UNDO[file.change]})`, { preview: true });
    } else if (pairs.length > 1) {
      await vscode.commands.executeCommand("vscode.changes", `Rewind to before ${label}: now ↔ rewound`, pairs);
    }
  }

  /** contextSidecar.undoRewind: the files back as they were before the last files rewind. */
  async undo(): Promise<CheckpointRestoreResult | undefined> {
    const last = this.lastUndo;
    if (!last) {
      void vscode.window.showInformationMessage("Context Sidecar: no rewind to undo in this window.");
      return undefined;
    }
    const host = await this.host();
    const result = await withForce((force) => restoreCheckpoint(host, last.sessionId, last.checkpointId, "code", force), "nothing was undone");
    if (result.status === "conflicts") return result;
    this.lastUndo = undefined;
    const restored = result.restored ?? [];
    void vscode.window.showInformationMessage(`Context Sidecar: rewind to before ${last.label} undone (${restored.length} file${restored.length === 1 ? "" : "s"}).`);
    return result;
  }

  /** Close the diff editors of checkpoints (after a rewind they show what is done). */
  private async closeDiffs(): Promise<void> {
    const groups = vscode.window.tabGroups;
    if (!groups) return;
    const ours = (uri: unknown): boolean => (uri as vscode.Uri | undefined)?.scheme === CHECKPOINT_SCHEME;
    const tabs = groups.all
      .flatMap((g) => g.tabs)
      .filter((tab) => {
        const input = tab.input as { modified?: unknown; textDiffs?: { modified?: unknown }[] } | undefined;
        return ours(input?.modified) || (input?.textDiffs ?? []).some((d) => ours(d.modified));
      });
    if (tabs.length > 0) await groups.close(tabs);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

/** `restore(false)`; on conflicts a modal names them and offers FORCE: `restore(true)`, else
 *  the conflicts (nothing was done). */
async function withForce(restore: (force: boolean) => Promise<CheckpointRestoreResult>, refused: string): Promise<CheckpointRestoreResult> {
  const result = await restore(false);
  if (result.status !== "conflicts") return result;
  const conflicts = result.conflicts ?? [];
  const names = conflicts.map((c) => `${c.path}: ${c.reason}`).join("\n");
  const answer = await vscode.window.showWarningMessage(
    `${conflicts.length} file${conflicts.length === 1 ? " was" : "s were"} changed outside the agent since; ${refused}.`,
    { modal: true, detail: `${names}\n\nOverwrite them with the checkpoint's content?` },
    FORCE,
  );
  return answer === FORCE ? restore(true) : result;
}

function firstLine(text: string): string {
  const line = text.split("\n")[0]!.trim();
  return line.length > 48 ? `${line.slice(0, 47)}…` : line;
}
