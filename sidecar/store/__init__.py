"""The session store: sessions (JSONL), blobs (git object format), the writer lock.

Plain Python (anyio for the worker threads that fsync); no pygls.  Layout of a store root::

    store.json     {"format": 1, "objectFormat": "sha1", "createdAt": ...}
    store.lock     single-writer lock (flock), holder pid inside
    sessions/      see sessions.py
    blobs/         a bare git repository's layout; see blobs.py
    trash/         deleted sessions
    profiles/      profiles (one JSON file each)
    presets/       presets
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from sidecar.defaults import STORE_ENV, default_store_root
from sidecar.ids import now_iso
from sidecar.store.blobs import BlobStore, git_blob_id
from sidecar.store.documents import DocumentStore
from sidecar.store.jsonl import write_file_atomic
from sidecar.store.lock import StoreLock
from sidecar.store.sessions import ReadPage, SessionStore, content_hash

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "STORE_ENV",
    "BlobStore",
    "ReadPage",
    "SessionStore",
    "Store",
    "content_hash",
    "default_store_root",
    "git_blob_id",
]

STORE_FORMAT = 1


class Store:
    """One store root, opened by one sidecar process."""

    def __init__(self, root: Path, *, read_only: bool = False) -> None:
        """``read_only`` never takes the write lock (tools such as ``inspect`` that must not
        demote a sidecar started after them to read-only)."""
        self.root = root.expanduser().resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.lock = StoreLock(self.root / "store.lock")
        if not read_only:
            self.lock.try_acquire()
        info_path = self.root / "store.json"
        if info_path.exists():
            info = json.loads(info_path.read_bytes())
        else:
            info = {"format": STORE_FORMAT, "objectFormat": "sha1", "createdAt": now_iso()}
            if self.lock.held:
                write_file_atomic(info_path, json.dumps(info).encode())
        self.blobs = BlobStore(self.root / "blobs", info.get("objectFormat", "sha1"))
        if self.lock.held:
            self.blobs.init()
        self.sessions = SessionStore(self.root, self.lock)
        self.profiles = DocumentStore(self.root / "profiles", "prf", ErrorCode.PROFILE_NOT_FOUND)
        self.presets = DocumentStore(self.root / "presets", "pst", ErrorCode.PRESET_NOT_FOUND)

    @property
    def writable(self) -> bool:
        return self.lock.held

    def close(self) -> None:
        self.sessions.close()
        self.lock.release()
