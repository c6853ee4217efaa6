"""Each session's snapshot index: ``sessions/<id>/snapshots.jsonl``, one line per snapshot
assembled for it (``{snapshotId, inputId, time}``), oldest first.

``snapshot/diff`` and the next turn's diff find a session's previous snapshot here, and gc
keeps the newest ``keepRecent`` of them.  Appends are durable (fsync) and a torn last line (a
power loss) is ended before the next one is written, so it never swallows it; reading skips
unreadable lines.  gc's read-and-rewrite and an append are one step against each other, so a
snapshot recorded while gc runs keeps its line, whichever processes they run in: both hold an
``flock`` on the index file, and one that finds the file replaced by a rewrite (another inode
under the name) once it has the lock opens the new one and locks again.  Any process may
record a snapshot of any session (a line is one ``write`` in append mode, under the lock).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from typing import TYPE_CHECKING, Any

from sidecar.aio import in_thread, run_to_completion
from sidecar.ids import now_iso
from sidecar.jsonbytes import dumps_bytes
from sidecar.store.jsonl import write_file_atomic, write_fully

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from sidecar.store.sessions import SessionStore

__all__ = ["SnapshotIndex"]

_FILE = "snapshots.jsonl"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[int]:
    """The index file at ``path`` (created if missing), open for appends and reads, under an
    exclusive ``flock``: the file the name holds once the lock is ours."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                current = False
            if current:
                yield fd
                return
        finally:
            os.close(fd)  # gives the lock back


def _read_fd(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""


def _parse(data: bytes) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for line in data.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


class SnapshotIndex:
    def __init__(self, sessions: SessionStore) -> None:
        self._sessions = sessions

    async def record(self, session_id: str, snapshot_id: str, input_id: str) -> None:
        """Append a snapshot to the session's index, durably."""
        path = self._sessions.session_dir(session_id) / _FILE
        line = dumps_bytes({"snapshotId": snapshot_id, "inputId": input_id, "time": now_iso()})

        def write() -> None:
            with _locked(path) as fd:
                end = os.fstat(fd).st_size
                torn = end > 0 and os.pread(fd, 1, end - 1) != b"\n"
                write_fully(fd, (b"\n" if torn else b"") + line + b"\n")
                os.fsync(fd)

        await run_to_completion(lambda: in_thread(write))

    def read(self, session_id: str) -> list[dict[str, Any]]:
        """The session's index, oldest first (torn or unreadable lines skipped)."""
        path = self._sessions.session_dir(session_id) / _FILE
        try:
            return _parse(path.read_bytes())
        except FileNotFoundError:
            return []

    def trim(
        self, session_id: str, keep_recent: int, *, dry_run: bool
    ) -> tuple[list[dict[str, Any]], int]:
        """Keep the ``keep_recent`` newest entries (gc); return them and how many were dropped."""
        path = self._sessions.session_dir(session_id) / _FILE
        if dry_run or not path.exists():
            index = self.read(session_id)
            kept = index[-keep_recent:] if keep_recent else []
            return kept, len(index) - len(kept)
        with _locked(path) as fd:
            index = _parse(_read_fd(fd))
            kept = index[-keep_recent:] if keep_recent else []
            if len(kept) != len(index):
                write_file_atomic(path, b"".join(dumps_bytes(e) + b"\n" for e in kept))
            return kept, len(index) - len(kept)
