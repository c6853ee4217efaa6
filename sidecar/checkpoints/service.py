"""The checkpoints of a store's sessions: taking them, finding them, keeping them bounded.

One :class:`Checkpoints` per store in a process (:func:`checkpoints_of`): it owns the stat
caches of the roots it has captured (one lock each: two captures of one root take turns) and
the journals of the sessions it has written.  Everything here blocks (walks, hashes, fsyncs):
callers run it in a worker thread.

Settings are the session's, under ``meta.checkpoints`` (``session/create``'s ``meta``):
``enabled`` (default true; a session without roots has none), ``maxFileBytes`` (10 MiB: a
larger file is listed, not captured), ``keep`` (the newest 100 per session), ``maxAgeDays``
(30: older ones are dropped even among the newest ``keep``) and ``maxFiles`` (200,000
entries walked per root: past it no checkpoint is taken, and ``checkpoint/list`` and
``checkpoint/diff`` answer ``checkpoint.too_large``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xxhash

from protocol.error_codes import ErrorCode
from sidecar.checkpoints.capture import RootCapture, StatCache, TooManyFiles, capture_root
from sidecar.checkpoints.ignore import global_excludes
from sidecar.checkpoints.records import FILE, Journal
from sidecar.checkpoints.trees import DIR, decode_tree
from sidecar.checkpoints.watch import Watcher, watcher_for
from sidecar.errors import InvalidRequestError, NotFoundError
from sidecar.ids import new_id, now_iso

if TYPE_CHECKING:
    from sidecar.store import Store

__all__ = ["Checkpoints", "Settings", "checkpoints_of", "settings_of"]

logger = logging.getLogger(__name__)

_DIR = "checkpoints"
_EPOCH = "epoch"
_TRIM_SLACK = 10
"""Retention rewrites the journal once it holds this many checkpoints past the bound."""


@dataclass(frozen=True, slots=True)
class Settings:
    enabled: bool = True
    max_file_bytes: int = 10 * 1024 * 1024
    keep: int = 100
    max_age_days: float = 30.0
    max_files: int = 200_000


def settings_of(meta: dict[str, Any] | None) -> Settings:
    """The session's checkpoint settings (``meta.checkpoints``); malformed values: defaults."""
    raw = (meta or {}).get("checkpoints")
    if not isinstance(raw, dict):
        return Settings()
    base = Settings()

    def num(key: str, default: float, low: float) -> Any:
        value = raw.get(key)
        ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= low
        return value if ok else default

    enabled = raw.get("enabled")
    return Settings(
        enabled=enabled if isinstance(enabled, bool) else True,
        max_file_bytes=int(num("maxFileBytes", base.max_file_bytes, 0)),
        keep=int(num("keep", base.keep, 1)),
        max_age_days=float(num("maxAgeDays", base.max_age_days, 0)),
        max_files=int(num("maxFiles", base.max_files, 1)),
    )


_SERVICES_LOCK = threading.Lock()
_ATTRIBUTE = "_checkpoints"


def checkpoints_of(store: Store) -> Checkpoints:
    """The store's checkpoint service in this process (made on first use, kept on the store
    object: it goes with the store)."""
    with _SERVICES_LOCK:
        service: Checkpoints | None = getattr(store, _ATTRIBUTE, None)
        if service is None:
            service = Checkpoints(store)
            setattr(store, _ATTRIBUTE, service)
        return service


class Checkpoints:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.dir = store.root / _DIR
        self._caches: dict[str, StatCache] = {}
        self._root_locks: dict[str, threading.Lock] = {}
        self._journals: dict[str, Journal] = {}
        self._known: set[str] = set()
        self._known_epoch = -1
        self._lock = threading.Lock()
        self._watchers: dict[str, Watcher | None] = {}
        """Per root: its watcher, ``None`` where there can be none (see ``watch.py``)."""
        self._closed = False

    # --- the session and its journal ---------------------------------------------------------

    def session(self, session_id: str) -> tuple[list[str], Settings, int]:
        """The session's roots, settings and head seq (``session.not_found``)."""
        session = self.store.sessions.get(session_id)
        return list(session.workspace_roots), settings_of(session.meta), session.head_seq

    def journal(self, session_id: str) -> Journal:
        with self._lock:
            journal = self._journals.get(session_id)
            if journal is None:
                path = self.store.sessions.session_dir(session_id) / FILE
                journal = self._journals[session_id] = Journal(path)
            return journal

    def records(self, session_id: str, kind: str = "checkpoint") -> list[dict[str, Any]]:
        return [r for r in self.journal(session_id).read() if r["type"] == kind]

    def find(self, session_id: str, checkpoint_id: str) -> dict[str, Any]:
        for record in self.records(session_id):
            if record.get("checkpointId") == checkpoint_id:
                return record
        raise NotFoundError(
            ErrorCode.CHECKPOINT_NOT_FOUND,
            f"no checkpoint {checkpoint_id} in session {session_id}",
            details={"sessionId": session_id, "checkpointId": checkpoint_id},
        )

    # --- capturing ---------------------------------------------------------------------------

    def epoch(self) -> int:
        try:
            return int((self.dir / _EPOCH).read_text())
        except (OSError, ValueError):
            return 0

    def bump_epoch(self) -> None:
        """Say that objects were collected: every stat cache made before is dropped."""
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / _EPOCH
        tmp = path.with_name(f".{_EPOCH}.{os.getpid()}.tmp")
        tmp.write_text(str(self.epoch() + 1))
        os.replace(tmp, path)

    def capture(self, roots: list[str], settings: Settings, *, write: bool) -> list[RootCapture]:
        """Capture each root (see :func:`capture_root`), one capture of a root at a time."""
        epoch = self.epoch()
        with self._lock:
            if epoch != self._known_epoch:
                self._known = set()
                self._known_epoch = epoch
        out = []
        excludes = global_excludes()
        for root in roots:
            with self._lock:
                lock = self._root_locks.setdefault(root, threading.Lock())
            with lock:
                cache = self._caches.get(root)
                cache_file = self.dir / f"stat-{xxhash.xxh3_64_hexdigest(root.encode())}"
                if cache is None or cache.epoch != epoch:
                    cache = self._caches[root] = StatCache.load(cache_file, epoch)
                with self._lock:
                    if root not in self._watchers and not self._closed:
                        self._watchers[root] = watcher_for(root)
                    watch = self._watchers.get(root)
                captured = capture_root(
                    Path(root),
                    blobs=self.store.blobs,
                    cache=cache,
                    write=write,
                    max_file_bytes=settings.max_file_bytes,
                    global_excludes=excludes,
                    known=self._known,
                    max_files=settings.max_files,
                    watch=watch,
                )
                if write:  # a look that stores nothing writes nothing (a read-only store)
                    cache.save(cache_file)
            out.append(captured)
        return out

    def take(
        self,
        session_id: str,
        *,
        reason: str,
        seq: int | None = None,
        turn_seq: int | None = None,
        run_id: str | None = None,
        call_id: str | None = None,
        tool: str | None = None,
        input_id: str | None = None,
        captured: list[RootCapture] | None = None,
    ) -> dict[str, Any] | None:
        """Take a checkpoint (``None`` when the session has no roots or has them off); ``seq``
        default: the next entry's.  ``captured``: a capture made already (``write=True``)."""
        roots, settings, head = self.session(session_id)
        if not roots or not settings.enabled:
            return None
        self.store.sessions.hold(session_id)
        if captured is None:
            try:
                captured = self.capture(roots, settings, write=True)
            except TooManyFiles as exc:
                logger.warning("no checkpoint of session %s: %s", session_id, exc)
                return None
        record = {
            "type": "checkpoint",
            "checkpointId": new_id("ckpt"),
            "seq": head + 1 if seq is None else seq,
            "turnSeq": turn_seq,
            "createdAt": now_iso(),
            "reason": reason,
            "runId": run_id,
            "callId": call_id,
            "tool": tool,
            "inputId": input_id,
            "roots": [
                {"root": c.root, "tree": c.tree, "notCaptured": c.not_captured} for c in captured
            ],
            "files": sum(c.files for c in captured),
            "notCaptured": sum(len(c.not_captured) for c in captured),
        }
        self.journal(session_id).append({k: v for k, v in record.items() if v is not None})
        self.retain(session_id, settings)
        return record

    def record_after(self, session_id: str, *, run_id: str | None, call_id: str | None) -> None:
        """Record what a mutating call left in the workspace (a restore's conflicts are
        judged against it)."""
        roots, settings, _ = self.session(session_id)
        if not roots or not settings.enabled:
            return
        self.store.sessions.hold(session_id)
        try:
            captured = self.capture(roots, settings, write=True)
        except TooManyFiles:
            return
        record = {
            "type": "after",
            "createdAt": now_iso(),
            "runId": run_id,
            "callId": call_id,
            "roots": [{"root": c.root, "tree": c.tree} for c in captured],
        }
        self.journal(session_id).append({k: v for k, v in record.items() if v is not None})

    def watchers(self) -> dict[str, str]:
        """Per root captured: ``on``, ``off: <why>`` (the stat walk from then on) or
        ``none`` (no watcher: not Linux, a remote file system)."""
        with self._lock:
            watchers = dict(self._watchers)
        return {
            root: "none" if w is None else "on" if w.off is None else f"off: {w.off}"
            for root, w in watchers.items()
        }

    def close(self) -> None:
        """Close the watchers (their inotify descriptors); a capture after it walks by stat."""
        with self._lock:
            self._closed = True
            watchers = list(self._watchers.items())
            self._watchers.clear()
        for root, watcher in watchers:
            if watcher is None:
                continue
            with self._lock:
                lock = self._root_locks.setdefault(root, threading.Lock())
            with lock:  # after a capture that has it in hand
                watcher.close()

    # --- reading trees -----------------------------------------------------------------------

    def tree_reader(self, extra: dict[str, bytes] | None = None) -> Any:
        """A reader of tree objects: the store's, or ``extra`` (a capture not written)."""
        cache: dict[str, list[tuple[str, str, str]]] = {}
        blobs = self.store.blobs

        def read(tree_id: str) -> list[tuple[str, str, str]]:
            entries = cache.get(tree_id)
            if entries is None:
                body = extra.get(tree_id) if extra else None
                if body is None:
                    body = blobs.get(tree_id, "tree")
                entries = cache[tree_id] = decode_tree(body, len(tree_id))
            return entries

        return read

    # --- retention and storage ---------------------------------------------------------------

    def retain(
        self,
        session_id: str,
        settings: Settings,
        *,
        slack: int = _TRIM_SLACK,
        dry_run: bool = False,
    ) -> int:
        """Drop the checkpoints past the bound (the newest ``keep``, none older than
        ``maxAgeDays``); how many were dropped (``dry_run``: would be).  The journal is
        rewritten only once it holds ``slack`` past the bound (or any too old), not on every
        checkpoint; ``store/gc`` passes 0."""
        journal = self.journal(session_id)
        with journal.locked():
            records = journal.read()
            checkpoints = [r for r in records if r["type"] == "checkpoint"]
            cutoff = time.time() - settings.max_age_days * 86400
            kept = [c for c in checkpoints[-settings.keep :] if _age_ok(c, cutoff)]
            dropped = len(checkpoints) - len(kept)
            too_old = any(not _age_ok(c, cutoff) for c in checkpoints[-settings.keep :])
            if dropped == 0 or (dropped < slack and not too_old):
                return 0
            if dry_run:
                return dropped
            keep_ids = {c["checkpointId"] for c in kept}
            oldest = kept[0]["createdAt"] if kept else None
            survivors = [
                r
                for r in records
                if (r["type"] == "checkpoint" and r["checkpointId"] in keep_ids)
                or (r["type"] == "after" and oldest is not None and r["createdAt"] >= oldest)
                or r["type"] not in ("checkpoint", "after")
            ]
            journal.rewrite(survivors)
            return dropped

    def expire(self, *, dry_run: bool = False) -> int:
        """Every session's retention applied in full (``store/gc``, so a session no longer
        checkpointed does not keep what its age limit drops): how many checkpoints were
        dropped (``dry_run``: would be).  A session whose journal cannot be read is skipped."""
        dropped = 0
        for session_id in self.store.sessions.session_ids():
            with contextlib.suppress(NotFoundError, OSError, InvalidRequestError):
                settings = settings_of(self.store.sessions.get(session_id).meta)
                dropped += self.retain(session_id, settings, slack=0, dry_run=dry_run)
        return dropped

    def reachable(self) -> set[str]:
        """Every object a checkpoint or an after-state of any session refers to (gc keeps
        them), with the trees walked down to their blobs."""
        out: set[str] = set()
        read = self.tree_reader()
        for session_id in self.store.sessions.session_ids():
            with contextlib.suppress(NotFoundError, OSError, InvalidRequestError):
                for record in self.journal(session_id).read():
                    for root in record.get("roots", []) if record["type"] != "restore" else []:
                        _walk_tree(read, root.get("tree"), out)
        return out

    def stats(self) -> dict[str, Any]:
        """``{count, objects, bytes}`` of every session's checkpoints, and this process's
        ``watchers`` (:meth:`watchers`)."""
        count = 0
        for session_id in self.store.sessions.session_ids():
            with contextlib.suppress(NotFoundError, OSError, InvalidRequestError):
                count += len(self.records(session_id))
        objects = self.reachable()
        size = 0
        base = self.store.blobs.root / "objects"
        for oid in objects:
            with contextlib.suppress(OSError):
                size += os.stat(base / oid[:2] / oid[2:]).st_size
        return {"count": count, "objects": len(objects), "bytes": size, "watchers": self.watchers()}


def _age_ok(record: dict[str, Any], cutoff: float) -> bool:
    try:
        created = datetime.strptime(record["createdAt"], "%Y-%m-%dT%H:%M:%S.%fZ")
    except (KeyError, ValueError):
        return True
    return created.replace(tzinfo=UTC).timestamp() >= cutoff


def _walk_tree(read: Any, tree_id: object, out: set[str]) -> None:
    if not isinstance(tree_id, str) or tree_id in out:
        return
    out.add(tree_id)
    try:
        entries = read(tree_id)
    except (NotFoundError, OSError, ValueError):
        return
    for _, mode, oid in entries:
        if mode == DIR:
            _walk_tree(read, oid, out)
        else:
            out.add(oid)
