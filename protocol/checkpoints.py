"""Checkpoints of a session's workspace on the wire: list, diff, restore, and what they hold.

A checkpoint is a git tree of every file under the session's roots that is not ignored, written
into the store's object database before a run's first change to the workspace and before every
mutating tool call.  Restoring one puts the files back (per file: a temporary file, then a
rename) and/or forks the conversation before the checkpoint's turn.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from protocol._base import NonEmptyStr, SeqNumber, Timestamp, WireModel

__all__ = [
    "Checkpoint",
    "CheckpointDiffParams",
    "CheckpointDiffResult",
    "CheckpointListParams",
    "CheckpointListResult",
    "CheckpointReason",
    "CheckpointRestoreParams",
    "CheckpointRestoreResult",
    "CheckpointStats",
    "FileChange",
    "RestoreConflict",
    "RestoredFile",
    "StoreStatsResult",
    "UnrestoredFile",
]

#: Why a checkpoint was taken: before a turn's first change to the workspace (``turn``),
#: before a mutating tool call (``edit``: a file tool; ``command``: a shell command), or
#: before a restore (``restore``: restoring it undoes the restore).
CheckpointReason = Literal["turn", "edit", "command", "restore"]
GitMode = Literal["100644", "100755", "120000"]


class Checkpoint(WireModel):
    checkpoint_id: str
    """``ckpt_`` + 26 characters, time-ordered."""
    session_id: str
    seq: SeqNumber
    """The history seq it stands before: the session's head was ``seq - 1`` when it was taken."""
    turn_seq: SeqNumber | None = None
    """Seq of the user message of the turn it belongs to (``null``: taken outside a turn)."""
    created_at: Timestamp
    reason: CheckpointReason
    run_id: str | None = None
    call_id: str | None = None
    tool: str | None = None
    """The tool whose call it stands before (``edit`` and ``command`` checkpoints)."""
    files: int
    """Files captured."""
    not_captured: int
    """Files over ``checkpoints.maxFileBytes``: recorded by path and size, their content not
    kept (a restore leaves them alone)."""
    changed_files: int
    """Files that differ between the checkpoint and the workspace now."""


class CheckpointListParams(WireModel):
    session_id: NonEmptyStr
    limit: int = Field(default=100, ge=1, le=1000)


class CheckpointListResult(WireModel):
    checkpoints: list[Checkpoint]
    """Newest first."""
    total: int
    """How many the session holds (retention keeps the last ``checkpoints.keep``)."""


class CheckpointDiffParams(WireModel):
    session_id: NonEmptyStr
    checkpoint_id: NonEmptyStr
    max_bytes: int = Field(default=256 * 1024, ge=0, le=16 * 1024 * 1024)
    """Bound on the unified diffs together; past it ``diff`` is ``null`` and ``truncated``."""


class FileChange(WireModel):
    path: str
    """Relative to its root, ``/`` separators."""
    root: str
    """The session root it lies under."""
    change: Literal["added", "modified", "deleted"]
    """From the checkpoint to now: ``added`` exists now and not in the checkpoint."""
    before: str | None = None
    """Git blob id in the checkpoint (``null``: absent, or not captured)."""
    after: str | None = None
    """Git blob id of the file now (``null``: absent)."""
    before_mode: GitMode | None = None
    after_mode: GitMode | None = None
    binary: bool = False
    diff: str | None = None
    """Unified diff, checkpoint -> now (text files, bounded)."""
    not_captured: bool = False
    """The checkpoint recorded the file without its content (over the size bound)."""


class CheckpointDiffResult(WireModel):
    checkpoint_id: str
    files: list[FileChange]
    """Restoring the checkpoint applies the reverse of these changes."""
    truncated: bool
    """Some diffs were left out (``maxBytes``)."""


class CheckpointRestoreParams(WireModel):
    session_id: NonEmptyStr
    checkpoint_id: NonEmptyStr
    files: bool
    """Put the workspace's files back as the checkpoint holds them."""
    conversation: bool
    """Fork the session before the checkpoint's turn (nothing is deleted)."""
    force: bool = False
    """Overwrite files changed outside the agent since (conflicts)."""

    @model_validator(mode="after")
    def _something(self) -> CheckpointRestoreParams:
        if not (self.files or self.conversation):
            raise ValueError("restore the files, the conversation or both")
        return self


class RestoredFile(WireModel):
    path: str
    action: Literal["written", "deleted", "created"]


class RestoreConflict(WireModel):
    path: str
    reason: str
    """E.g. "changed outside the agent since 2026-12-06T14:00:00.000Z"."""


class UnrestoredFile(WireModel):
    path: str
    reason: str


class CheckpointRestoreResult(WireModel):
    status: Literal["restored", "conflicts"]
    """``conflicts``: nothing was written, no checkpoint taken, no fork made."""
    restored: list[RestoredFile] = Field(default_factory=list)
    conflicts: list[RestoreConflict] = Field(default_factory=list)
    not_restored: list[UnrestoredFile] = Field(default_factory=list)
    undo_checkpoint_id: str | None = None
    """The ``restore`` checkpoint taken first: restoring it undoes this restore."""
    forked_session_id: str | None = None
    """The new session when ``conversation`` was asked for."""


class CheckpointStats(WireModel):
    count: int
    """Checkpoints every session holds together."""
    objects: int
    """Distinct trees and blobs they refer to."""
    bytes: int
    """Bytes those objects take in the store (compressed, on disk)."""
    watchers: dict[str, str] = Field(default_factory=dict)
    """Per workspace root this process has captured, its file watcher: ``on``, ``off: <why>``
    (the watch limit was reached: every capture walks every file) or ``none`` (not Linux, or
    a remote file system)."""


class StoreStatsResult(WireModel):
    """Answer of ``store/stats``: what the store holds."""

    sessions: int
    blobs: int
    """Objects in the object database."""
    blob_bytes: int
    """Bytes they take on disk."""
    checkpoints: CheckpointStats
