"""The session store: sessions (JSONL), blobs (git object format), the writer locks.

Plain Python (anyio for the worker threads that fsync); no pygls.  Any number of sidecar
processes share one store root; each session is written by one of them at a time (its
``writer.lock``, see session_state.py).  Layout of a store root::

    store.json     {"format": 1, "objectFormat": "sha1", "createdAt": ...}
    gc.lock        store-wide work (gc), one process at a time (flock), holder inside
    sessions/      see sessions.py; each session's writer.lock (flock), holder inside
    blobs/         a bare git repository's layout; see blobs.py (workspace checkpoints'
                   trees too: sidecar.checkpoints, beside the store)
    checkpoints/   the checkpoints' stat caches and gc epoch (sidecar.checkpoints)
    trash/         deleted sessions
    profiles/      profiles (one JSON file each)
    presets/       presets
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from sidecar.defaults import STORE_ENV, default_store_root

if TYPE_CHECKING:
    from sidecar.store.blobs import BlobStore, git_blob_id
    from sidecar.store.entry_lines import content_hash
    from sidecar.store.root import Store
    from sidecar.store.sessions import ReadPage, SessionStore

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

#: Loaded on first use, so ``sidecar.store`` is importable in milliseconds.
_HOMES = {
    "BlobStore": "sidecar.store.blobs",
    "git_blob_id": "sidecar.store.blobs",
    "Store": "sidecar.store.root",
    "ReadPage": "sidecar.store.sessions",
    "SessionStore": "sidecar.store.sessions",
    "content_hash": "sidecar.store.entry_lines",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'sidecar.store' has no attribute {name!r}")
    return getattr(import_module(home), name)
