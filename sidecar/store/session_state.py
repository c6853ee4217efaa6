"""A store root's sessions as loaded states: which sessions exist, how one is loaded, who
may use it and who may write.

A :class:`SessionState` is one session read into memory: its ``session.json``, its history
index and entry hashes, the open history file, its token-count cache; :func:`session_wire` is
the session on the wire, straight from its state.  :class:`SessionStates` (the base of
:class:`~sidecar.store.sessions.SessionStore`, which holds the operations) validates session
ids, loads a state from disk, leases it through :class:`~sidecar.store.loaded.LoadedSessions`
(every operation holds a lease on the state it uses for as long as it uses it, so no
eviction, reload or delete closes a state under its user, and two copies of one session are
never loaded), hands out a session's write lock, and holds sessions for this process.
At most ``$CONTEXT_SIDECAR_MAX_LOADED_SESSIONS`` (default 64) idle sessions stay loaded.

**Per-session writers.**  Any number of sidecar processes share a store; a session is
written by one of them at a time: the one holding its ``writer.lock``
(:class:`~sidecar.store.lock.FileLock`, with the holder's pid, face and since inside).  A
process takes a session's lock on its first write (:meth:`SessionStates.hold`: create, append,
rename, delete, a run's start) and keeps it until :meth:`SessionStates.release` (``session/
release``, or the face's own close), until the session is dropped from memory as idle (beyond
``max_loaded``, sessions only read going first: the descriptors a process keeps stay
bounded), or until its end (the kernel
frees it, even on ``kill -9``);
another process's write then answers ``session.held`` (retryable, naming the holder).
Taking a session drops any state loaded before (read-only, maybe stale): the holder's state
is always loaded from disk after the lock was taken, torn tail repaired, so it continues at
the next seq.  A process that does not hold a session checks, on every use, that the history
file has not grown since it was loaded, and loads it again if it has: it sees every entry
another process acknowledged.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocol.error_codes import ErrorCode
from sidecar.aio import in_thread
from sidecar.defaults import max_loaded_sessions
from sidecar.errors import BusyError, NotFoundError, StoreCorruptError
from sidecar.ids import now_iso
from sidecar.interpreter.reaper import dismantle
from sidecar.store.history import HistoryIndex
from sidecar.store.jsonl import AppendLog
from sidecar.store.lines import FileLines
from sidecar.store.loaded import Lease, LoadedSessions
from sidecar.store.lock import FileLock, Holder, holder_record, read_holder
from sidecar.store.sync_place import SyncPlace
from sidecar.store.token_counts import TokenCountCache

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractAsyncContextManager

__all__ = ["SESSION_PREFIX", "WRITER_LOCK", "SessionState", "SessionStates", "session_wire"]

WRITER_LOCK = "writer.lock"
"""A session's writer lock file, in its directory."""

SESSION_PREFIX = "ses_"
_ID_LEN = len(SESSION_PREFIX) + 26


@dataclass(slots=True)
class SessionState:
    """One loaded session (owned by ``LoadedSessions``; used under a lease)."""

    meta: dict[str, Any]
    dir: Path
    log: AppendLog | None
    lines: FileLines
    hashes: list[str]
    last_time: str | None
    size: int
    tokens: TokenCountCache
    head: int
    """Published last by an append, once the lines, hashes and index hold the new entries:
    a reader in another thread never sees a head whose entries are not readable yet."""
    index: HistoryIndex = field(default_factory=HistoryIndex)

    def close(self) -> None:
        """Close the files and free the memory, the bulk of it in the background: a large
        session freed at once would stop every thread (:mod:`sidecar.interpreter.reaper`).
        Nothing reads the state afterwards."""
        self.lines.close()  # before the log: it may borrow the log's descriptor
        if self.log is not None:
            self.log.close()
        dismantle(self.index.bulk())


def session_wire(state: SessionState, held_by: Holder | None) -> dict[str, Any]:
    """The session as :class:`protocol.sessions.Session` on the wire (``None`` fields left
    out), straight from its state and who holds it: :mod:`sidecar.methods.light` sends it
    before the wire models have loaded, :class:`~sidecar.store.sessions.SessionStore`
    validates it into the model."""
    meta = state.meta
    updated = meta["updatedAt"]
    if state.last_time and state.last_time > updated:
        updated = state.last_time
    wire: dict[str, Any] = {
        "sessionId": meta["sessionId"],
        "title": meta["title"],
        "workspaceRoots": list(meta["workspaceRoots"]),
    }
    if meta.get("profileId") is not None:
        wire["profileId"] = meta["profileId"]
    wire["createdAt"] = meta["createdAt"]
    wire["updatedAt"] = updated
    wire["headSeq"] = state.head
    forked = meta.get("forkedFrom")
    if forked:
        wire["forkedFrom"] = {"sessionId": forked["sessionId"], "atSeq": forked["atSeq"]}
    if meta.get("meta") is not None:
        wire["meta"] = meta["meta"]
    if held_by is not None:
        wire["heldBy"] = {
            "pid": held_by["pid"],
            "face": str(held_by.get("face", "")),
            "since": str(held_by.get("since", "")),
        }
    return wire


class SessionStates:
    """The sessions of one store root, as states loaded on use (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        *,
        face: str = "serve",
        read_only: bool = False,
        max_loaded: int | None = None,
    ) -> None:
        """``face``: what this process is, as its holds name it (``serve``, ``acp``, a tool);
        ``read_only``: never hold a session (``inspect``); ``max_loaded``: idle sessions
        kept loaded (default ``$CONTEXT_SIDECAR_MAX_LOADED_SESSIONS``, else 64); an idle one
        beyond it is dropped and its history file closed, and loads again when next used."""
        self.root = root
        self._dir = root / "sessions"
        self._trash = root / "trash"
        self.face = face
        self._read_only = read_only
        self._held: dict[str, FileLock] = {}
        """The sessions this process holds (their writer locks)."""
        self._held_lock = threading.Lock()
        """Guards ``_held``: a create claims its new session in a worker thread."""
        self.on_taken: Callable[[str], None] | None = None
        """Called (on the taking thread) when this process takes an existing session that
        another process may have left unfinished: the run manager settles its runs."""
        self._loaded: LoadedSessions[SessionState] = LoadedSessions(
            lambda session_id: self._load(session_id),
            max_loaded=max_loaded_sessions() if max_loaded is None else max_loaded,
            fresh=self._fresh,
        )
        self._loaded.on_evict = self._release_idle
        self._loaded.keep_longer = self.holds  # read-only states are dropped first
        self._dir.mkdir(parents=True, exist_ok=True)
        self.sync_place = SyncPlace()
        """Where appends wait for the disk (the loop while it is fast; see sync_place)."""

    @property
    def max_loaded(self) -> int:
        """How many idle sessions stay loaded."""
        return self._loaded.max_loaded

    # --- who writes which session ----------------------------------------------------------

    @property
    def writable(self) -> bool:
        """Whether this process may write the store at all (not a read-only opening)."""
        return not self._read_only

    def require_writable(self) -> None:
        """Raise ``store.locked`` when this store was opened read-only."""
        if self._read_only:
            raise BusyError(
                ErrorCode.STORE_LOCKED,
                "this store was opened read-only",
                details={"store": str(self.root)},
                retry_after_ms=1000,
            )

    def holds(self, session_id: str) -> bool:
        """Whether this process holds the session's writer lock."""
        return session_id in self._held

    def held_ids(self) -> list[str]:
        with self._held_lock:
            return list(self._held)

    def held_by(self, session_id: str) -> Holder | None:
        """Who holds the session: this process's record, or the live one in its lock file."""
        lock = self._held.get(session_id)
        if lock is not None:
            return lock.holder
        return read_holder(self._dir / session_id / WRITER_LOCK)

    def hold(self, session_id: str) -> None:
        """Make this process the session's writer, or raise ``session.held`` (retryable,
        naming the holder) while another live process is.  A session taken here is loaded
        again from disk on its next use, and :attr:`on_taken` runs."""
        if session_id in self._held:
            return
        self.require_writable()
        lock = FileLock(self.session_dir(session_id) / WRITER_LOCK)
        if not lock.try_acquire(holder_record(self.face, now_iso())):
            raise self._held_error(session_id, lock.refused_by())
        with self._held_lock:
            self._held[session_id] = lock
        self._loaded.forget(session_id)  # loaded read-only, or before another's appends
        hook = self.on_taken
        if hook is not None:
            hook(session_id)

    def _claim_new(self, session_id: str, sdir: Path) -> FileLock:
        """Hold a session being created (its directory was just made: nobody else can hold
        it).  Called in the create's worker thread."""
        lock = FileLock(sdir / WRITER_LOCK)
        if not lock.try_acquire(holder_record(self.face, now_iso())):
            raise self._held_error(session_id, lock.refused_by())
        with self._held_lock:
            self._held[session_id] = lock
        return lock

    def _unhold(self, session_id: str) -> bool:
        """Give a session's lock back now (the caller keeps writes out: :meth:`release`)."""
        with self._held_lock:
            lock = self._held.pop(session_id, None)
        if lock is None:
            return False
        self._loaded.forget(session_id)  # the next reader checks the disk again
        lock.release()
        return True

    def _release_idle(self, session_id: str) -> None:
        """A held session dropped from memory as idle (beyond ``max_loaded``) is given back
        too: a process holds at most the sessions it has loaded or is writing, so its
        descriptors stay bounded however many sessions it has written.  Its next write takes
        it again (``session.held`` if another process has taken it meanwhile)."""
        with self._held_lock:
            lock = self._held.pop(session_id, None)
        if lock is not None:
            lock.release()

    async def release(self, session_id: str) -> bool:
        """Give the session back for another process to write (after any write of this
        process in progress); True when this process held it."""
        async with self._writing(session_id):
            return self._unhold(session_id)

    def release_now(self, session_id: str) -> bool:
        """:meth:`release` from a caller that knows nothing writes the session meanwhile (run
        recovery at start-up, which took a session only to settle its runs)."""
        self._session_dir(session_id)
        return self._unhold(session_id)

    def _held_error(self, session_id: str, holder: Holder | None) -> BusyError:
        who = (
            f"pid {holder.get('pid')} ({holder.get('face')}, since {holder.get('since')})"
            if holder
            else "another process"
        )
        return BusyError(
            ErrorCode.SESSION_HELD,
            f"session {session_id} is being written by {who}; it can be written here once "
            "that process releases it or ends",
            details={"sessionId": session_id, "heldBy": holder},
            retry_after_ms=1000,
        )

    # --- loading ---------------------------------------------------------------------------

    def _session_dir(self, session_id: str) -> Path:
        if (
            not session_id.startswith(SESSION_PREFIX)
            or len(session_id) != _ID_LEN
            or not session_id[len(SESSION_PREFIX) :].isalnum()
        ):
            raise self._not_found(session_id)
        return self._dir / session_id

    @staticmethod
    def _not_found(session_id: str) -> NotFoundError:
        return NotFoundError(
            ErrorCode.SESSION_NOT_FOUND,
            f"no session {session_id!r}",
            details={"sessionId": session_id},
        )

    def _fresh(self, state: SessionState) -> bool:
        """Whether a loaded state still matches its file: always for the holder (a state
        with an open log: every append goes through it); a state loaded without the lock is
        loaded again once another process has appended, or once this one has taken it (a
        read-only load that finished after the take)."""
        if state.log is not None:
            return True
        if state.meta.get("sessionId") in self._held:
            return False
        return _size(state.dir / "history.jsonl") == state.size

    def _lease(self, session_id: str) -> Lease[SessionState]:
        """A lease on the session's state, loaded if needed (blocking)."""
        self._session_dir(session_id)  # validates the id
        return self._loaded.acquire(session_id)

    async def _lease_async(self, session_id: str) -> Lease[SessionState]:
        """:meth:`_lease` for the event loop: a cold session loads in a worker thread."""
        self._session_dir(session_id)
        lease = self._loaded.acquire_loaded(session_id)
        if lease is None:
            # not abandoned on cancel: the lease comes back to this task, which releases it
            lease = await in_thread(self._loaded.acquire, session_id)
        return lease

    def _writing(self, session_id: str) -> AbstractAsyncContextManager[None]:
        """The session's write lock (one writer at a time)."""
        self._session_dir(session_id)
        return self._loaded.writing(session_id)

    def _load(self, session_id: str) -> SessionState:
        sdir = self._session_dir(session_id)
        try:
            meta = json.loads((sdir / "session.json").read_bytes())
        except FileNotFoundError:
            raise self._not_found(session_id) from None
        hashes: list[str] = []
        index = HistoryIndex()
        last_time: list[str | None] = [None]

        def visit(i: int, record: dict[str, Any]) -> None:
            if record.get("seq") != i + 1:
                raise StoreCorruptError(
                    f"session {session_id}: entry {i + 1} has seq {record.get('seq')!r}",
                    details={"sessionId": session_id, "line": i + 1},
                )
            hashes.append(sys.intern(str(record.get("hash", ""))))
            last_time[0] = record.get("time")
            index.add((record,), i + 1)

        path = sdir / "history.jsonl"
        writable = session_id in self._held
        log, loaded = AppendLog.open(path, writable=writable, visit=visit, keep_lines=False)
        try:
            lines = FileLines(path, loaded.starts, loaded.end, fd=log.fd if log else None)
        except BaseException:
            if log is not None:
                log.close()
            raise
        return self._state(meta, sdir, log, lines, hashes, last_time[0], index, loaded.end)

    def _install_empty(
        self, session_id: str, meta: dict[str, Any], log: AppendLog
    ) -> Lease[SessionState]:
        """A lease on a session just written with an empty history (``log``: its history
        file, created by :meth:`AppendLog.create`), installed without reading it back."""
        sdir = self._session_dir(session_id)
        lines = FileLines(log.path, array("q"), 0, fd=log.fd)
        state = self._state(meta, sdir, log, lines, [], None, HistoryIndex(), 0)
        return self._loaded.install(session_id, state)

    def _state(
        self,
        meta: dict[str, Any],
        sdir: Path,
        log: AppendLog | None,
        lines: FileLines,
        hashes: list[str],
        last_time: str | None,
        index: HistoryIndex,
        size: int,
    ) -> SessionState:
        return SessionState(
            meta=meta,
            dir=sdir,
            log=log,
            lines=lines,
            hashes=hashes,
            last_time=last_time,
            size=size,
            tokens=TokenCountCache(sdir, lambda: not self._read_only),
            head=len(lines),
            index=index,
        )

    # --- which sessions exist --------------------------------------------------------------

    def session_dir(self, session_id: str) -> Path:
        """The directory of an existing session (``session.not_found`` otherwise)."""
        directory = self._session_dir(session_id)
        if not (directory / "session.json").exists():
            raise self._not_found(session_id)
        return directory

    def session_ids(self) -> list[str]:
        return sorted(n for n in os.listdir(self._dir) if n.startswith(SESSION_PREFIX))

    def close(self) -> None:
        """Drop every loaded state (each is closed now, or by its last lease) and give back
        every session this process holds."""
        self._loaded.clear()
        with self._held_lock:
            held = list(self._held.values())
            self._held.clear()
        for lock in held:
            lock.release()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1
