"""The loaded sessions: the one owner of session state shared by the event loop and threads.

A session's in-memory state (its history index, entry hashes, the open history file) is
loaded on first use and dropped again when more than ``max_loaded`` sessions are loaded.
Appends run on the event loop; reads (``history()``, ``token_counts()``, the context
service's capture and build) run in worker threads.  Every load, install and eviction
happens here, under one ``threading.RLock``, and three rules hold:

- **One load at a time per session.**  A caller that finds its session being loaded waits
  for that load and uses its result; it never loads a second copy.  (Two copies of one
  session each believe they own its head: an append lands in one, the other is installed
  over it, and the next append reuses a seq; or one copy closes the descriptor the other
  writes through.)
- **Leases.**  A caller holds a :class:`Lease` for as long as it uses a state.  A leased
  state is never evicted; one replaced or forgotten while leased (a reload, a delete, the
  switch to writer) is closed when its last lease ends, never under its user.
- **Write locks live as long as anyone may use them.**  Each session has one ``anyio.Lock``
  (one writer at a time), counted by its holders and waiters, and dropped when the last one
  leaves.  It is independent of whether the state is loaded, so no eviction can drop a lock
  between its lookup and its acquisition (two writers).

The RLock, rather than a plain lock: a :class:`~sidecar.store.history.HistoryView` releases
its lease when it is garbage collected, which may happen in a thread that is inside this
module already.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from types import TracebackType

    # A field's annotation, never evaluated (postponed annotations): anyio loads on the
    # first write, not when ``serve`` opens the store (see ``_new_write_lock``).
    import anyio  # noqa: TC004

__all__ = ["Lease", "LoadedSessions"]


class _Closeable(Protocol):
    def close(self) -> None: ...


S = TypeVar("S", bound=_Closeable)


@dataclass(eq=False, slots=True)
class _Slot(Generic[S]):
    """One state and who uses it."""

    state: S
    leases: int = 0
    retired: bool = False
    """Replaced or forgotten: no longer handed out, closed when ``leases`` drops to 0."""
    closed: bool = False


def _new_write_lock() -> anyio.Lock:
    import anyio  # on first write: the store opens before the event loop exists (serve)

    return anyio.Lock(fast_acquire=True)  # uncontended: no turn of the loop given away


@dataclass(eq=False, slots=True)
class _Writer:
    lock: anyio.Lock = field(default_factory=_new_write_lock)
    users: int = 0
    """Holders and waiters; the entry is dropped when this reaches 0."""


class Lease(Generic[S]):
    """The right to use one loaded state until :meth:`release` (a context manager)."""

    __slots__ = ("_owner", "_released", "_slot")

    def __init__(self, owner: LoadedSessions[S], slot: _Slot[S]) -> None:
        self._owner = owner
        self._slot = slot
        self._released = False

    @property
    def state(self) -> S:
        return self._slot.state

    def release(self) -> None:
        """Give the state back (idempotent)."""
        self._owner._release(self)

    def __enter__(self) -> S:
        return self._slot.state

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class LoadedSessions(Generic[S]):
    """Loaded session states, least recently used first (see the module docstring)."""

    def __init__(
        self,
        load: Callable[[str], S],
        *,
        max_loaded: int,
        fresh: Callable[[S], bool] = lambda _: True,
    ) -> None:
        """``load``: reads a session's state (blocking, may raise); ``fresh``: whether a
        loaded state still matches the disk (a reader process reloads what another wrote)."""
        if max_loaded < 1:
            raise ValueError(f"max_loaded must be at least 1, not {max_loaded}")
        self.max_loaded = max_loaded
        self._load = load
        self._fresh = fresh
        self._lock = threading.RLock()
        self._slots: OrderedDict[str, _Slot[S]] = OrderedDict()
        self._loading: dict[str, threading.Event] = {}
        self._writers: dict[str, _Writer] = {}
        self._epoch = 0
        """Bumped by :meth:`clear`: a load that started before is of the old mode, dropped."""
        self.keep_longer: Callable[[str], bool] | None = None
        """Whether a session's state should outlast the others' (one this process writes)."""
        self.on_evict: Callable[[str], None] | None = None
        """Called (under the lock) for a session dropped as idle, unless someone holds or
        waits for its write lock: the store gives such a session's writer lock back."""
        self.on_wait: Callable[[str], None] | None = None
        """Called (in the waiting thread, before it blocks) when a caller waits for another
        caller's load of the same session; tests use it to force interleavings."""

    # --- states --------------------------------------------------------------------------

    def acquire(self, session_id: str) -> Lease[S]:
        """A lease on the session's state, loading it if needed (blocking: the load reads the
        whole history; from the event loop, prefer :meth:`acquire_loaded` first)."""
        while True:
            with self._lock:
                lease = self._lease_installed(session_id)
                if lease is not None:
                    return lease
                pending = self._loading.get(session_id)
                if pending is None:
                    pending = self._loading[session_id] = threading.Event()
                    epoch = self._epoch
                    break
            hook = self.on_wait
            if hook is not None:
                hook(session_id)
            pending.wait()  # then look again: installed, or the load failed (try it ourselves)
        try:
            state = self._load(session_id)
        except BaseException:
            with self._lock:
                del self._loading[session_id]
                pending.set()
            raise
        with self._lock:
            del self._loading[session_id]
            pending.set()
            if epoch == self._epoch:
                return self._install(session_id, state)
        state.close()  # loaded before a clear(): in the mode the store has just left
        return self.acquire(session_id)

    def install(self, session_id: str, state: S) -> Lease[S]:
        """A lease on ``state``, built by the caller from what it has just written (a new
        session): installed as a load's result would be, without reading it back."""
        with self._lock:
            return self._install(session_id, state)

    def _install(self, session_id: str, state: S) -> Lease[S]:
        old = self._slots.pop(session_id, None)
        if old is not None:
            self._retire(old)
        slot = _Slot(state, leases=1)
        self._slots[session_id] = slot
        self._evict()
        return Lease(self, slot)

    def acquire_loaded(self, session_id: str) -> Lease[S] | None:
        """A lease on the session's state if it is loaded and fresh, else None (never blocks
        on a load)."""
        with self._lock:
            return self._lease_installed(session_id)

    def _lease_installed(self, session_id: str) -> Lease[S] | None:
        slot = self._slots.get(session_id)
        if slot is None or not self._fresh(slot.state):
            return None
        self._slots.move_to_end(session_id)
        slot.leases += 1
        return Lease(self, slot)

    def _release(self, lease: Lease[S]) -> None:
        with self._lock:
            if lease._released:
                return
            lease._released = True
            slot = lease._slot
            slot.leases -= 1
            if slot.leases == 0:
                if slot.retired:
                    self._close(slot)
                else:
                    self._evict()

    def forget(self, session_id: str) -> None:
        """Drop a session's state (it was deleted): closed now, or by its last lease."""
        with self._lock:
            slot = self._slots.pop(session_id, None)
            if slot is not None:
                self._retire(slot)

    def clear(self) -> None:
        """Drop every state (the store changed mode, or closes); loads in flight are dropped
        when they finish."""
        with self._lock:
            self._epoch += 1
            slots = list(self._slots.values())
            self._slots.clear()
            for slot in slots:
                self._retire(slot)

    def _retire(self, slot: _Slot[S]) -> None:
        slot.retired = True
        if slot.leases == 0:
            self._close(slot)

    def _evict(self) -> None:
        """Close least recently used states beyond ``max_loaded`` that no one holds.  With
        :attr:`keep_longer`, the states it asks to keep (sessions this process writes) go
        only while there are more than ``max_loaded`` of them: the others go first, even the
        more recently used (a state only read is loaded again at the cost of one read)."""
        if len(self._slots) <= self.max_loaded:
            return
        keep = self.keep_longer
        kept = {i for i in self._slots if keep(i)} if keep is not None else set()
        for session_id in [i for i in self._slots if i not in kept]:
            if len(self._slots) <= self.max_loaded:
                return
            self._drop(session_id)
        left = len(kept)
        for session_id in [i for i in self._slots if i in kept]:
            if left <= self.max_loaded or len(self._slots) <= self.max_loaded:
                return
            if self._drop(session_id):
                left -= 1

    def _drop(self, session_id: str) -> bool:
        """Close an idle state (False when it is in use)."""
        slot = self._slots.get(session_id)
        if slot is None or slot.leases:
            return False
        del self._slots[session_id]
        self._close(slot)
        hook = self.on_evict
        if hook is not None and session_id not in self._writers:
            hook(session_id)
        return True

    @staticmethod
    def _close(slot: _Slot[S]) -> None:
        if not slot.closed:
            slot.closed = True
            slot.state.close()

    # --- write locks ---------------------------------------------------------------------

    @asynccontextmanager
    async def writing(self, session_id: str) -> AsyncIterator[None]:
        """Hold the session's write lock (one writer at a time per session)."""
        with self._lock:
            writer = self._writers.get(session_id)
            if writer is None:
                writer = self._writers[session_id] = _Writer()
            writer.users += 1
        try:
            async with writer.lock:
                yield
        finally:
            with self._lock:
                writer.users -= 1
                if writer.users == 0:
                    del self._writers[session_id]

    # --- what is loaded (diagnostics and tests) ------------------------------------------

    def loaded_ids(self) -> list[str]:
        """Loaded sessions, least recently used first."""
        with self._lock:
            return list(self._slots)

    def leases(self, session_id: str) -> int:
        with self._lock:
            slot = self._slots.get(session_id)
            return 0 if slot is None else slot.leases

    def write_lock_ids(self) -> list[str]:
        """Sessions whose write lock someone holds or waits for."""
        with self._lock:
            return list(self._writers)
