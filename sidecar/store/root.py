"""The store root object: one directory, opened by one sidecar process (see the package
docstring for the layout)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from protocol.error_codes import ErrorCode
from sidecar.ids import now_iso
from sidecar.store.blobs import BlobStore
from sidecar.store.documents import DocumentStore
from sidecar.store.jsonl import write_file_atomic
from sidecar.store.lock import StoreLock
from sidecar.store.sessions import SessionStore
from sidecar.store.snapshot_index import SnapshotIndex

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["STORE_FORMAT", "Store"]

STORE_FORMAT = 1


class Store:
    """One store root, opened by one sidecar process."""

    def __init__(
        self, root: Path, *, read_only: bool = False, lock: StoreLock | None = None
    ) -> None:
        """``read_only`` never takes the write lock (tools such as ``inspect`` that must not
        demote a sidecar started after them to read-only).  ``lock``: the store's lock,
        already tried (``serve`` takes it before answering ``initialize``, so the first of
        two sidecars started back to back is the writer)."""
        self.root = root.expanduser().resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.lock = lock or StoreLock(self.root / "store.lock")
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
        self.snapshot_index = SnapshotIndex(self.sessions)
        self.profiles = DocumentStore(self.root / "profiles", "prf", ErrorCode.PROFILE_NOT_FOUND)
        self.presets = DocumentStore(self.root / "presets", "pst", ErrorCode.PRESET_NOT_FOUND)

    @property
    def writable(self) -> bool:
        return self.lock.held

    def require_writer(self) -> None:
        """Raise ``store.locked`` (retryable) unless this process is, or can now become, the
        store's writer.  Session writes check it inside the session store; every other
        writer (blobs, profiles, presets, snapshots, run journals, gc) calls it first, so a
        second sidecar on the same store never writes into, or collects from, a store
        another process owns."""
        self.sessions.require_writer()

    def close(self) -> None:
        self.sessions.close()
        self.lock.release()
