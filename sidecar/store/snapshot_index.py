"""Each session's snapshot index: ``sessions/<id>/snapshots.jsonl``, one line per snapshot
assembled for it (``{snapshotId, inputId, time}``), oldest first.

``snapshot/diff`` and the next turn's diff find a session's previous snapshot here, and gc
keeps the newest ``keepRecent`` of them.  Appends are durable (fsync) and a torn last line (a
power loss) is ended before the next one is written, so it never swallows it; reading skips
unreadable lines.  gc's read-and-rewrite and an append are one step against each other, so a
snapshot recorded while gc runs keeps its line.
"""

from __future__ import annotations

import json
import os
import threading
from typing import TYPE_CHECKING, Any

from sidecar.aio import in_thread, run_to_completion
from sidecar.ids import now_iso
from sidecar.jsonbytes import dumps_bytes
from sidecar.store.jsonl import write_file_atomic

if TYPE_CHECKING:
    from sidecar.store.sessions import SessionStore

__all__ = ["SnapshotIndex"]

_FILE = "snapshots.jsonl"


class SnapshotIndex:
    def __init__(self, sessions: SessionStore) -> None:
        self._sessions = sessions
        #: Serialises appends and rewrites (they run in worker threads).
        self._lock = threading.Lock()

    async def record(self, session_id: str, snapshot_id: str, input_id: str) -> None:
        """Append a snapshot to the session's index, durably."""
        path = self._sessions.session_dir(session_id) / _FILE
        line = dumps_bytes({"snapshotId": snapshot_id, "inputId": input_id, "time": now_iso()})

        def write() -> None:
            with self._lock, open(path, "a+b") as out:
                end = out.seek(0, os.SEEK_END)
                torn = end > 0 and os.pread(out.fileno(), 1, end - 1) != b"\n"
                out.write((b"\n" if torn else b"") + line + b"\n")
                out.flush()
                os.fsync(out.fileno())

        await run_to_completion(lambda: in_thread(write))

    def read(self, session_id: str) -> list[dict[str, Any]]:
        """The session's index, oldest first (torn or unreadable lines skipped)."""
        path = self._sessions.session_dir(session_id) / _FILE
        if not path.exists():
            return []
        out: list[dict[str, Any]] = []
        for line in path.read_bytes().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def trim(
        self, session_id: str, keep_recent: int, *, dry_run: bool
    ) -> tuple[list[dict[str, Any]], int]:
        """Keep the ``keep_recent`` newest entries (gc); return them and how many were dropped."""
        with self._lock:
            index = self.read(session_id)
            kept = index[-keep_recent:] if keep_recent else []
            if len(kept) != len(index) and not dry_run:
                path = self._sessions.session_dir(session_id) / _FILE
                write_file_atomic(path, b"".join(dumps_bytes(e) + b"\n" for e in kept))
            return kept, len(index) - len(kept)
