"""The store root object: one directory, shared by any number of sidecar processes (see the
package docstring for the layout, and ``docs/guide/store.md`` for what each operation
promises when several processes use one store).

Sessions are written by the process that holds each one (:mod:`sidecar.store.session_state`);
blobs, snapshots and frozen inputs are content-addressed and written by temp file + rename,
so any process writes them at any time; profiles and presets are one file each, replaced
atomically (the last writer wins); store-wide work (``store/gc``) runs under ``gc.lock``,
one process at a time, and never blocks an append.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import TYPE_CHECKING, Any

from protocol.error_codes import ErrorCode
from sidecar.ids import now_iso
from sidecar.store.blobs import BlobStore
from sidecar.store.documents import DocumentStore
from sidecar.store.jsonl import fsync_dir, write_new_file
from sidecar.store.lock import FileLock
from sidecar.store.sessions import SessionStore
from sidecar.store.snapshot_index import SnapshotIndex

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["STORE_FORMAT", "Store"]

STORE_FORMAT = 1


class Store:
    """One store root, as one sidecar process uses it."""

    def __init__(self, root: Path, *, read_only: bool = False, face: str = "serve") -> None:
        """``read_only``: write nothing, hold no session (tools such as ``inspect``);
        ``face``: what this process is, as the sessions it holds name it."""
        self.root = root.expanduser().resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        info_path = self.root / "store.json"
        if info_path.exists():
            info = json.loads(info_path.read_bytes())
        else:
            info = {"format": STORE_FORMAT, "objectFormat": "sha1", "createdAt": now_iso()}
            if not read_only:
                info = _create_info(info_path, info)
        self.blobs = BlobStore(self.root / "blobs", info.get("objectFormat", "sha1"))
        if not read_only:
            self.blobs.init()
        self.gc_lock = FileLock(self.root / "gc.lock")
        """Store-wide work, one process at a time (``store/gc``); appends never take it."""
        self.sessions = SessionStore(self.root, face=face, read_only=read_only)
        self.snapshot_index = SnapshotIndex(self.sessions)
        self.profiles = DocumentStore(self.root / "profiles", "prf", ErrorCode.PROFILE_NOT_FOUND)
        self.presets = DocumentStore(self.root / "presets", "pst", ErrorCode.PRESET_NOT_FOUND)

    @property
    def writable(self) -> bool:
        """Whether this process may write the store (it was not opened read-only)."""
        return self.sessions.writable

    def require_writable(self) -> None:
        """Raise ``store.locked`` when the store was opened read-only.  Writes of sessions
        check who holds the session inside the session store; every other writer (blobs,
        profiles, presets, snapshots, run journals, gc) calls this first."""
        self.sessions.require_writable()

    def close(self) -> None:
        """Drop the loaded sessions and give back every session this process holds; close
        the checkpoint service's watchers (``sidecar.checkpoints``, kept on the store)."""
        checkpoints = getattr(self, "_checkpoints", None)
        if checkpoints is not None:
            checkpoints.close()
        self.sessions.close()
        self.gc_lock.release()


def _create_info(path: Path, info: dict[str, Any]) -> dict[str, Any]:
    """Write ``store.json`` unless another process has just written it; the one on disk.
    (Written complete under a temporary name, then linked into place: a link never replaces
    an existing file, so two processes creating the store at once agree on one.)"""
    tmp = path.with_name(f".store.json.tmp-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # left by a killed process of the same pid
    write_new_file(tmp, json.dumps(info).encode())
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    fsync_dir(path.parent)
    loaded: dict[str, Any] = json.loads(path.read_bytes())
    return loaded
