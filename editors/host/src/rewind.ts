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
import type { SidecarHost } from "./client.js";
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

/** What rewinding to a user message would do: its checkpoint and the diff (none: no file changed). */
export interface RewindPreview {
  checkpoint: Checkpoint | undefined;
  diff: CheckpointDiffResult | undefined;
}

export async function previewRewind(host: SidecarHost, sessionId: string, seq: number, maxBytes?: number): Promise<RewindPreview> {
  const { checkpoints } = await listCheckpoints(host, sessionId, 1000);
  const checkpoint = checkpointAt(checkpoints, seq);
  const diff = checkpoint ? await diffCheckpoint(host, sessionId, checkpoint.checkpointId, maxBytes) : undefined;
  return { checkpoint, diff };
}

/** A rewind to user message `seq`: `checkpoint/restore` of its checkpoint, and the
 *  conversation forked before the message (by the restore when the checkpoint is the message's
 *  own turn's, else by `session/fork`). With conflicts and no `force`, nothing is done. */
export async function rewindTo(
  host: SidecarHost,
  sessionId: string,
  seq: number,
  choice: RewindChoice,
  force = false,
): Promise<CheckpointRestoreResult & { checkpointId: string | null }> {
  const { checkpoints } = await listCheckpoints(host, sessionId, 1000);
  const checkpoint = checkpointAt(checkpoints, seq);
  const { files, conversation } = restoreFlags(choice);
  const own = checkpoint !== undefined && checkpoint.turnSeq === seq;
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
