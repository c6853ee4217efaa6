"""A store root's sessions as loaded states: which sessions exist, how one is loaded, who
may use it and who may write.

A :class:`SessionState` is one session read into memory: its ``session.json``, its history
index and entry hashes, the open history file, its token-count cache; :func:`session_wire` is
the session on the wire, straight from its state.  :class:`SessionStates` (the base of
:class:`~sidecar.store.sessions.SessionStore`, which holds the operations) validates session
ids, loads a state from disk, leases it through :class:`~sidecar.store.loaded.LoadedSessions`
(every operation holds a lease on the state it uses for as long as it uses it, so no
eviction, reload or delete closes a state under its user, and two copies of one session are
never loaded), hands out a session's write lock, and says whether this process holds the
store's write lock.  At most ``$CONTEXT_SIDECAR_MAX_LOADED_SESSIONS`` (default 64) idle
sessions stay loaded.
"""

from __future__ import annotations

import json
import os
import sys
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocol.error_codes import ErrorCode
from sidecar.aio import in_thread
from sidecar.defaults import max_loaded_sessions
from sidecar.errors import BusyError, NotFoundError, StoreCorruptError
from sidecar.interpreter.reaper import dismantle
from sidecar.store.history import HistoryIndex
from sidecar.store.jsonl import AppendLog
from sidecar.store.lines import FileLines
from sidecar.store.loaded import Lease, LoadedSessions
from sidecar.store.sync_place import SyncPlace
from sidecar.store.token_counts import TokenCountCache

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from sidecar.store.lock import StoreLock

__all__ = ["SESSION_PREFIX", "SessionState", "SessionStates", "session_wire"]

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


def session_wire(state: SessionState) -> dict[str, Any]:
    """The session as :class:`protocol.sessions.Session` on the wire (``None`` fields left
    out), straight from its state: :mod:`sidecar.methods.light` sends it before the wire models
    have loaded, :class:`~sidecar.store.sessions.SessionStore` validates it into the model."""
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
    return wire


class SessionStates:
    """The sessions of one store root, as states loaded on use (see the module docstring)."""

    def __init__(self, root: Path, lock: StoreLock, *, max_loaded: int | None = None) -> None:
        """``max_loaded``: idle sessions kept loaded (default
        ``$CONTEXT_SIDECAR_MAX_LOADED_SESSIONS``, else 64); an idle one beyond it is dropped
        and its history file closed, and loads again when next used."""
        self.root = root
        self._dir = root / "sessions"
        self._trash = root / "trash"
        self._lock = lock
        self._loaded: LoadedSessions[SessionState] = LoadedSessions(
            lambda session_id: self._load(session_id),
            max_loaded=max_loaded_sessions() if max_loaded is None else max_loaded,
            fresh=self._fresh,
        )
        self._dir.mkdir(parents=True, exist_ok=True)
        self.sync_place = SyncPlace()
        """Where appends wait for the disk (the loop while it is fast; see sync_place)."""

    @property
    def max_loaded(self) -> int:
        """How many idle sessions stay loaded."""
        return self._loaded.max_loaded

    # --- write permission ----------------------------------------------------------------

    @property
    def writable(self) -> bool:
        return self._lock.held

    def require_writer(self) -> None:
        """Raise ``store.locked`` unless this process holds, or can now take, the store's
        write lock (taking it reloads the sessions it had loaded read-only)."""
        if self._lock.held:
            return
        if self._lock.try_acquire():
            self._loaded.clear()  # loaded read-only: reload as the writer
            return
        raise BusyError(
            ErrorCode.STORE_LOCKED,
            "another sidecar is writing this store; reads work, writes are refused until it exits",
            details={"holderPid": self._lock.holder_pid(), "store": str(self.root)},
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
        """Whether a loaded state still matches its file: always for the writer (every
        append goes through it); a reader reloads what another process appended."""
        return self._lock.held or _size(state.dir / "history.jsonl") == state.size

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
        log, loaded = AppendLog.open(path, writable=self._lock.held, visit=visit, keep_lines=False)
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
            tokens=TokenCountCache(sdir, lambda: self._lock.held),
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
        """Drop every loaded state (each is closed now, or by its last lease)."""
        self._loaded.clear()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1
