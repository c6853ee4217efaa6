"""A session's checkpoint journal: ``sessions/<id>/checkpoints.jsonl``, oldest first.

One line per fact, each appended with one ``write`` and fsynced before it counts (a line
torn by a ``kill -9`` or a power loss is ended with a newline before the next one is written,
and skipped when read):

- ``{"type": "checkpoint", checkpointId, seq, turnSeq, createdAt, reason, runId, callId, tool,
  inputId, roots: [{root, tree, notCaptured: [{path, size, mode}]}], files, notCaptured}``;
- ``{"type": "after", createdAt, runId, callId, roots: [{root, tree}]}``: what a mutating
  call left in the workspace (a restore's conflicts are judged against these);
- ``{"type": "restore", restoreId, checkpointId, undoCheckpointId, createdAt, plan: [{root,
  path, action}]}`` before a restore writes anything, ``{"type": "restored", restoreId, root,
  path}`` after each file is in place (renamed and fsynced), and ``{"type": "restoreEnd",
  restoreId, createdAt, interrupted?}`` once it is done: after a ``kill -9`` the journal says
  which files were restored, and the next use of the session closes the restore as
  interrupted (its leftover temporary files removed).

The process holding the session writes it (the session's writer lock, taken by the caller
first); ``store/gc`` may rewrite it too, applying the session's retention, from any process.
So every append and every rewrite is done under :meth:`Journal.locked`: a lock per session in
the process (lines whole and in order) and an ``flock`` on ``checkpoints.lock`` beside the
journal across processes (a retention's read and rewrite never lose a line appended between
them).  Retention rewrites the file (temporary file, rename) keeping the newest checkpoints.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sidecar.jsonbytes import dumps_bytes
from sidecar.store.jsonl import write_file_atomic, write_fully

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = ["FILE", "LOCK_FILE", "Journal"]

FILE = "checkpoints.jsonl"
LOCK_FILE = "checkpoints.lock"


class Journal:
    """One session's checkpoint journal."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._held = False
        """This process holds the ``flock`` (taken by the outermost :meth:`locked`)."""

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The journal to this thread alone in the process, and to this process alone among
        the store's (re-entrant: the outermost holder takes the ``flock``)."""
        with self._lock:
            if self._held:
                yield
                return
            lock_path = self.path.with_name(LOCK_FILE)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._held = True
                yield
            finally:
                self._held = False
                os.close(fd)  # the flock goes with the descriptor

    def append(self, record: dict[str, Any]) -> None:
        """Append ``record`` durably."""
        line = dumps_bytes(record) + b"\n"
        with self.locked():
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                end = os.fstat(fd).st_size
                torn = end > 0 and os.pread(fd, 1, end - 1) != b"\n"
                write_fully(fd, (b"\n" if torn else b"") + line)
                os.fsync(fd)
            finally:
                os.close(fd)

    def read(self) -> list[dict[str, Any]]:
        """Every readable record, oldest first."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        out: list[dict[str, Any]] = []
        for line in data.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("type"), str):
                out.append(record)
        return out

    def rewrite(self, records: list[dict[str, Any]]) -> None:
        """Replace the journal with ``records`` (atomic)."""
        with self.locked():
            write_file_atomic(self.path, b"".join(dumps_bytes(r) + b"\n" for r in records))
