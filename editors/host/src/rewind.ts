// Rewind, as every TypeScript front end does it: typed calls for `checkpoint/list`, `/diff` and
// `/restore`, the checkpoint that holds the workspace as it was when a user message was sent, a
// rewind "to here" (files, conversation or both) from a message, and a whole blob's text (the
// file as a checkpoint holds it, for a diff editor).
//
// Decision: the files "at" user message `seq` are those of the oldest checkpoint (in time: the
// list's order) taken after the message was stored. A checkpoint's `seq` is the entry it stands
// before: an `edit`, `command` or `restore` checkpoint was taken when the head was `seq - 1`
// (after the message when `seq > message`), a `turn` checkpoint stands before its own user
// message (`seq == turnSeq`) but is taken after it, when its run starts. Every change the
// sidecar makes (a mutating call, a restore) comes after a checkpoint, so nothing changed the
// files between the message and that checkpoint (but a hand edit: a conflict). A message with
// no checkpoint of its own (appended without a run) has the next one's files, and its
// conversation is forked here with `session/fork {atSeq: seq - 1}` (what `checkpoint/restore`
// does for a turn's own checkpoint). No checkpoint after the message at all: nothing changed
// since, and a files rewind has nothing to do.
import { SidecarError, type SidecarHost } from "./client.js";
import type {
  Checkpoint,
  CheckpointDiffResult,
  CheckpointListResult,
  CheckpointRestoreResult,
} from "./types.js";

/** What a rewind restores: the files (`code`), the conversation (a fork before the message), both. */
export type RewindChoice = "code" | "conversation" | "both";
export const REWIND_CHOICES: readonly RewindChoice[] = ["code", "conversation", "both"];

/** `checkpoint/restore`'s `files` and `conversation` for a choice. */
export function restoreFlags(choice: RewindChoice): { files: boolean; conversation: boolean } {
  return { files: choice !== "conversation", conversation: choice !== "code" };
}

/** `checkpoint/list`: the session's checkpoints, newest first. */
export function listCheckpoints(host: SidecarHost, sessionId: string, limit = 100, signal?: AbortSignal): Promise<CheckpointListResult> {
  return host.request("checkpoint/list", { sessionId, limit }, signal);
}

/** `checkpoint/diff`: per file, what changed from the checkpoint to now (restoring undoes it). */
export function diffCheckpoint(host: SidecarHost, sessionId: string, checkpointId: string, maxBytes?: number, signal?: AbortSignal): Promise<CheckpointDiffResult> {
  return host.request("checkpoint/diff", { sessionId, checkpointId, ...(maxBytes === undefined ? {} : { maxBytes }) }, signal);
}

/** `checkpoint/restore`: with conflicts and no `force`, nothing is done (`status: "conflicts"`). */
export function restoreCheckpoint(
  host: SidecarHost,
  sessionId: string,
  checkpointId: string,
  choice: RewindChoice,
  force = false,
  signal?: AbortSignal,
): Promise<CheckpointRestoreResult> {
  return host.request("checkpoint/restore", { sessionId, checkpointId, ...restoreFlags(choice), force }, signal);
}

/** Whether `checkpoint` was taken after user message `seq` was stored (see above). */
export function takenAfter(checkpoint: Checkpoint, seq: number): boolean {
  return checkpoint.reason === "turn" ? checkpoint.seq >= seq : checkpoint.seq > seq;
}

/** The checkpoint holding the files as they were when user message `seq` was sent (see above),
 *  from a `checkpoint/list` answer (newest first); undefined when none was taken since. */
export function checkpointAt(checkpoints: readonly Checkpoint[], seq: number): Checkpoint | undefined {
  let found: Checkpoint | undefined;
  for (const checkpoint of checkpoints) if (takenAfter(checkpoint, seq)) found = checkpoint; // the last is the oldest
  return found;
}

/** The `data.code`s of a session whose files cannot be rewound at all (its conversation can). */
export const NO_FILE_REWIND: ReadonlySet<string> = new Set(["checkpoint.no_roots", "checkpoint.too_large"]);

/** The session's checkpoints (newest first), or why its files cannot be rewound. */
async function checkpointsOf(host: SidecarHost, sessionId: string): Promise<{ checkpoints: Checkpoint[]; unavailable?: SidecarError }> {
  try {
    return { checkpoints: (await listCheckpoints(host, sessionId, 1000)).checkpoints };
  } catch (err) {
    if (err instanceof SidecarError && NO_FILE_REWIND.has(err.dataCode ?? "")) return { checkpoints: [], unavailable: err };
    throw err;
  }
}

/** What rewinding to a user message would do: its checkpoint and the diff (none: no file
 *  changed); `unavailable`: why the files cannot be rewound (no workspace root, too large). */
export interface RewindPreview {
  checkpoint: Checkpoint | undefined;
  diff: CheckpointDiffResult | undefined;
  unavailable?: string;
}

export async function previewRewind(host: SidecarHost, sessionId: string, seq: number, maxBytes?: number): Promise<RewindPreview> {
  const { checkpoints, unavailable } = await checkpointsOf(host, sessionId);
  if (unavailable) return { checkpoint: undefined, diff: undefined, unavailable: unavailable.message };
  const checkpoint = checkpointAt(checkpoints, seq);
  const diff = checkpoint ? await diffCheckpoint(host, sessionId, checkpoint.checkpointId, maxBytes) : undefined;
  return { checkpoint, diff };
}

/** A rewind to user message `seq`: `checkpoint/restore` of its checkpoint, and the
 *  conversation forked before the message (by the restore when the checkpoint is the message's
 *  own turn's, else by `session/fork`). With conflicts and no `force`, nothing is done. A
 *  session whose files cannot be rewound (`NO_FILE_REWIND`) rejects `code` and `both` with
 *  that error; its conversation is forked. */
export async function rewindTo(
  host: SidecarHost,
  sessionId: string,
  seq: number,
  choice: RewindChoice,
  force = false,
): Promise<CheckpointRestoreResult & { checkpointId: string | null }> {
  const { checkpoints, unavailable } = await checkpointsOf(host, sessionId);
  const checkpoint = checkpointAt(checkpoints, seq);
  const { files, conversation } = restoreFlags(choice);
  if (unavailable && files) throw unavailable;
  // the restore forks before the checkpoint it restores: before the message for its own turn's
  const own = checkpoint !== undefined && checkpoint.reason === "turn" && checkpoint.turnSeq === seq;
  let result: CheckpointRestoreResult = { status: "restored", restored: [], conflicts: [], notRestored: [], undoCheckpointId: null, forkedSessionId: null };
  if (checkpoint && (files || (conversation && own))) {
    const restoreChoice: RewindChoice = files && conversation && own ? "both" : files ? "code" : "conversation";
    result = await restoreCheckpoint(host, sessionId, checkpoint.checkpointId, restoreChoice, force);
    if (result.status === "conflicts") return { ...result, checkpointId: checkpoint.checkpointId };
  }
  if (conversation && !own) {
    const fork = await host.request("session/fork", { sessionId, atSeq: seq - 1 });
    result = { ...result, forkedSessionId: fork.sessionId };
  }
  return { ...result, checkpointId: checkpoint?.checkpointId ?? null };
}

/** A blob's whole content as text (`blob/read` page by page): a file as a checkpoint holds it. */
export async function readBlobText(host: SidecarHost, blob: string, signal?: AbortSignal): Promise<string> {
  const parts: string[] = [];
  let offset = 0;
  for (;;) {
    const page = await host.request("blob/read", { blob, offset, length: 1024 * 1024, encoding: "utf-8" }, signal);
    parts.push(page.data);
    if (page.eof || page.length === 0) return parts.join("");
    offset = page.offset + page.length;
  }
}
