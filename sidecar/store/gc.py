"""Explicit retention of blobs (``store/gc``, ``context-sidecar gc``): never silent, never
automatic.

The keep-set is everything something live refers to:

- every session's history: image parts and activated-skill texts;
- per session, the newest ``keep_recent`` snapshots, each with its frozen input and every
  blob the input names (instructions, skills, pinned files, attachments) and the items the
  snapshot carries;
- every run record's frozen input, the blobs it names, and the script it was started with
  (``run/resume`` needs them for as long as the run is kept);
- every object a workspace checkpoint refers to (its trees, down to their blobs), and what a
  mutating call left (``also_keep``: :mod:`sidecar.checkpoints`), once each session's
  checkpoint retention is applied in full (its newest ``keep``, none older than
  ``maxAgeDays``: a session no longer checkpointed drops what it would drop at its next
  checkpoint);
- anything younger than ``grace_seconds`` (an input being frozen right now is not referenced
  by anything yet).

Everything else in ``blobs/objects`` is collected, including the temporary files of writes a
killed process never finished (not those of this process's writes in progress); dropped
snapshots leave the session's snapshot index.  A reference is read from each JSON document by
walking it for blob-shaped values under known keys, so a new field that names a blob must use
one of those keys.

Several processes share a store: a collection runs under the store's ``gc.lock``, one at a
time (another process's ``store/gc`` answers ``store.locked`` meanwhile; a dry run takes no
lock), and takes no session's lock, so appends never wait for it.  What another process may
be writing is kept by age: its temporary files and new objects are younger than
``grace_seconds``, and an object it stores again is freshened (:meth:`BlobStore.put`).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import TYPE_CHECKING, Any, Protocol

from protocol.error_codes import ErrorCode
from protocol.snapshots import StoreGcResult
from sidecar.errors import BusyError, NotFoundError
from sidecar.ids import now_iso
from sidecar.store.lock import FileLock, holder_record

if TYPE_CHECKING:
    from sidecar.store import Store

__all__ = ["Keeper", "collect"]

_BLOB_KEYS = {"blob", "hash", "inputId", "scriptBlob"}


def _refs(node: Any, out: set[str], hex_len: int) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _BLOB_KEYS and isinstance(value, str) and len(value) == hex_len:
                out.add(value)
            _refs(value, out, hex_len)
    elif isinstance(node, list):
        for value in node:
            _refs(value, out, hex_len)


class Keeper(Protocol):
    """What else keeps objects: the workspace checkpoints (``sidecar.checkpoints``, beside
    the store: the store does not import it)."""

    def expire(self, *, dry_run: bool) -> int:
        """Apply the retention that decides what is kept; how many records it dropped."""
        ...

    def reachable(self) -> set[str]: ...

    def bump_epoch(self) -> None:
        """Objects were collected: caches naming objects by id must be dropped."""
        ...


def collect(
    store: Store,
    *,
    keep_recent: int,
    grace_seconds: int,
    dry_run: bool,
    also_keep: Keeper | None = None,
) -> StoreGcResult:
    """Collect what nothing keeps (see the module docstring), under the store's gc lock;
    ``also_keep``: every object it names is kept too (and it is told when any was collected)."""
    if dry_run:
        return _collect(store, keep_recent, grace_seconds, True, also_keep)
    store.require_writable()
    lock = FileLock(store.gc_lock.path)  # its own descriptor: one gc per process too
    if not lock.try_acquire(holder_record(store.sessions.face, now_iso())):
        raise BusyError(
            ErrorCode.STORE_LOCKED,
            "another gc is running on this store",
            details={"store": str(store.root), "heldBy": lock.refused_by()},
            retry_after_ms=1000,
        )
    try:
        result = _collect(store, keep_recent, grace_seconds, False, also_keep)
        if also_keep is not None and result.collected:
            also_keep.bump_epoch()
        return result
    finally:
        lock.release()


def _collect(
    store: Store, keep_recent: int, grace_seconds: int, dry_run: bool, also_keep: Keeper | None
) -> StoreGcResult:
    blobs = store.blobs
    hex_len = 40 if blobs.object_format == "sha1" else 64
    expired = 0 if also_keep is None else also_keep.expire(dry_run=dry_run)
    keep: set[str] = set() if also_keep is None else also_keep.reachable()
    dropped = 0
    for session_id in store.sessions.session_ids():
        history = store.root / "sessions" / session_id / "history.jsonl"
        if history.exists():
            for line in history.read_bytes().splitlines():
                try:
                    _refs(json.loads(line), keep, hex_len)
                except ValueError:
                    continue
        try:
            kept, dropped_here = store.snapshot_index.trim(session_id, keep_recent, dry_run=dry_run)
        except (NotFoundError, FileNotFoundError):
            continue  # deleted meanwhile
        dropped += dropped_here
        for entry in kept:
            keep.add(entry["snapshotId"])
            for blob_id in (entry["snapshotId"], entry["inputId"]):
                try:
                    _refs(json.loads(blobs.get(blob_id)), keep, hex_len)
                except (NotFoundError, ValueError):
                    continue
            keep.add(entry["inputId"])
    runs = store.root / "runs"
    for record_path in sorted(runs.glob("*/run.json")) if runs.exists() else []:
        try:
            record = json.loads(record_path.read_bytes())
        except (OSError, ValueError):
            continue  # a torn record is repaired by the run store, not judged here
        _refs(record, keep, hex_len)
        input_id = record.get("inputId")
        if isinstance(input_id, str):
            with contextlib.suppress(NotFoundError, ValueError):
                _refs(json.loads(blobs.get(input_id)), keep, hex_len)
    now = time.time()
    kept_count = collected = collected_bytes = 0
    objects = blobs.root / "objects"
    for prefix in sorted(os.listdir(objects)) if objects.exists() else []:
        folder = objects / prefix
        if len(prefix) != 2 or not folder.is_dir():
            continue
        for name in os.listdir(folder):
            blob_id = prefix + name
            path = folder / name
            if blob_id in keep or blobs.writing(name):
                kept_count += 1
                continue
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue  # a temporary file renamed into place just now
            if now - stat.st_mtime < grace_seconds:
                kept_count += 1
                continue
            collected += 1
            collected_bytes += stat.st_size
            if not dry_run:
                path.unlink()
    return StoreGcResult(
        kept=kept_count,
        collected=collected,
        collected_bytes=collected_bytes,
        dry_run=dry_run,
        snapshots_dropped=dropped,
        checkpoints_dropped=expired,
    )
