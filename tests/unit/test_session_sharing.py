"""Session state shared by the event loop and worker threads (``sidecar.store.loaded``).

Appends run on the event loop; ``history()``, ``token_counts()`` and the context service's
capture and build run in worker threads.  The interleavings that used to lose data are
forced here with a hook inside the load (no sleeps): a first load paused in a worker thread
while a second load and an append run; eviction while a state is in use.  What must hold:
one state per session (loaded once), seqs unique and gap-free on disk, no read through a
closed descriptor, a clean reopen, no descriptor left behind after eviction, and a write lock
that exists exactly as long as someone may use it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from protocol.entries import EntryInput, MessageInput
from sidecar.defaults import MAX_LOADED_SESSIONS_ENV
from sidecar.errors import BusyError
from sidecar.store import SessionStore, Store

pytestmark = pytest.mark.anyio

ENTRIES = 300
#: A safety net for a broken build only (a hook that is never released); nothing waits on it.
STUCK = 30.0


def msg(text: str) -> MessageInput:
    return MessageInput.model_validate(
        {"kind": "message", "role": "user", "content": [{"type": "text", "text": text}]}
    )


def count(records: Sequence[dict[str, Any]]) -> list[int]:
    return [1] * len(records)


async def append(sessions: SessionStore, session_id: str, entries: Sequence[EntryInput]) -> int:
    """Append; return the first assigned seq."""
    result: Any = await sessions.append(session_id, entries)
    return int(result[0][0]["seq"])


def seqs_on_disk(root: Path, session_id: str) -> list[int]:
    lines = (root / "sessions" / session_id / "history.jsonl").read_bytes().splitlines()
    return [json.loads(x)["seq"] for x in lines]


def history_fds() -> list[str]:
    """What this process's open descriptors on history files point at."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own descriptor, already closed
        if target.endswith("history.jsonl"):
            out.append(target)
    return out


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def cold(root: Path) -> Iterator[Callable[[], Store]]:
    """Reopens the store (every session cold); closes whatever it opened."""
    opened: list[Store] = []

    def reopen() -> Store:
        for store in opened:
            store.close()
        opened.append(Store(root))
        return opened[-1]

    yield reopen
    for store in opened:
        store.close()


async def sessions_with_history(store: Store, n_sessions: int, entries: int) -> list[str]:
    """Sessions of ``entries`` each, their token counts for ``t`` persisted (so a cold view
    reads lines only when asked to)."""
    ids = []
    for i in range(n_sessions):
        created = await store.sessions.create(
            title=f"s{i}", workspace_roots=[], profile_id=None, meta=None
        )
        sid = created.session_id
        for start in range(0, entries, 100):
            batch = [msg(f"{i}/{k}") for k in range(start, min(entries, start + 100))]
            await store.sessions.append(sid, batch)
        store.sessions.history(sid, "t", count).close()
        ids.append(sid)
    return ids


class PausedFirstLoad:
    """Wraps ``SessionStore._load``: the first load reads the session, then waits (in its
    worker thread) until two other callers wait for it — or until the test lets it go."""

    def __init__(self, sessions: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.real = sessions._load
        self.loads: list[str] = []
        self.paused = threading.Event()
        self.go = threading.Event()
        self.waits: list[str] = []
        monkeypatch.setattr(sessions, "_load", self.load)
        sessions._loaded.on_wait = self.waited

    def load(self, session_id: str) -> Any:
        state = self.real(session_id)
        self.loads.append(session_id)
        if len(self.loads) == 1:
            self.paused.set()
            assert self.go.wait(STUCK), "the paused load was never let go"
        return state

    def waited(self, session_id: str) -> None:
        self.waits.append(session_id)
        if len(self.waits) == 2:
            self.go.set()


async def test_overlapping_first_loads_install_one_state(
    root: Path, cold: Callable[[], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold session's first load (a view, in a worker thread) is paused after reading the
    file, while a token count (another thread) and an append (event loop) ask for the same
    session.  With one owner they wait for that load and share its state; before, each
    loaded and installed its own copy, the paused one last: it closed the state the append
    had written through and kept the old head, so the next append reused a seq."""
    (sid,) = await sessions_with_history(cold(), 1, ENTRIES)
    store = cold()
    sessions = store.sessions
    sessions.hold(sid)  # this process writes it: its one load is the writer's (no reload)
    hook = PausedFirstLoad(sessions, monkeypatch)
    views: list[Any] = []
    counted: list[list[int]] = []
    racing: list[int] = []

    async def first_append() -> None:
        racing.append(await append(sessions, sid, [msg("racing")]))
        hook.go.set()  # (without an owner the append does not wait for the paused load)

    async with anyio.create_task_group() as tg:
        tg.start_soon(
            anyio.to_thread.run_sync, lambda: views.append(sessions.history(sid, "t", count))
        )
        await anyio.to_thread.run_sync(hook.paused.wait, STUCK)
        assert hook.paused.is_set()
        tg.start_soon(
            anyio.to_thread.run_sync,
            lambda: counted.append(sessions.token_counts(sid, range(1, ENTRIES + 1), "t", count)),
        )
        tg.start_soon(first_append)
    after = await append(sessions, sid, [msg("after")])

    assert seqs_on_disk(root, sid) == list(range(1, ENTRIES + 3))  # unique and gap-free
    assert (racing, after) == ([ENTRIES + 1], ENTRIES + 2)
    assert hook.loads == [sid]  # loaded once
    assert sessions._loaded.loaded_ids() == [sid]
    (view,) = views
    assert view.head == ENTRIES
    assert [view.record(s)["seq"] for s in (1, ENTRIES)] == [1, ENTRIES]  # no EBADF
    view.close()
    assert counted == [[1] * ENTRIES]

    reopened = cold()  # not store.corrupt
    assert reopened.sessions.get(sid).head_seq == ENTRIES + 2
    page = reopened.sessions.read(sid, after_seq=ENTRIES, before_seq=None, limit=10)
    assert [e["content"][0]["text"] for e in page.entries] == ["racing", "after"]


async def test_a_load_that_fails_lets_its_waiters_try_again(
    cold: Callable[[], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Waiters for a load that raised are not left waiting, and do not get a half state."""
    (sid,) = await sessions_with_history(cold(), 1, 10)
    sessions = cold().sessions
    hook = PausedFirstLoad(sessions, monkeypatch)
    real = hook.real

    def failing_once(session_id: str) -> Any:
        if not hook.loads:
            hook.loads.append(session_id)
            hook.paused.set()
            assert hook.go.wait(STUCK)
            raise OSError("disk went away")
        hook.loads.append(session_id)
        return real(session_id)

    monkeypatch.setattr(sessions, "_load", failing_once)
    heads: list[int] = []
    errors: list[BaseException] = []

    def first() -> None:
        try:
            sessions.get(sid)
        except OSError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.to_thread.run_sync, first)
        await anyio.to_thread.run_sync(hook.paused.wait, STUCK)
        for _ in range(2):
            tg.start_soon(
                anyio.to_thread.run_sync, lambda: heads.append(sessions.get(sid).head_seq)
            )
    assert len(errors) == 1 and heads == [10, 10]
    assert len(hook.loads) == 2  # the failed one, then one load for both waiters


async def test_eviction_spares_a_state_in_use_and_closes_it_after(
    root: Path, cold: Callable[[], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With room for one idle session, loading others while a view of ``a`` is open does not
    close ``a`` under the view; once the view is closed, ``a`` is evicted like any other and
    no descriptor on a history file is left behind (before: the view's lines reopened the
    file after the eviction and that descriptor was never closed)."""
    a, b, c = await sessions_with_history(cold(), 3, 50)
    monkeypatch.setenv(MAX_LOADED_SESSIONS_ENV, "1")
    store = cold()
    sessions = store.sessions
    assert history_fds() == []

    view = sessions.history(a, "t", count)
    for other in (b, c):
        sessions.get(other)  # loaded beyond the bound: only idle ones go
    assert a in sessions._loaded.loaded_ids() and sessions._loaded.leases(a) == 1
    await append(sessions, a, [msg("while viewed")])  # the same state: no second copy
    assert [view.record(s)["seq"] for s in range(1, 51)] == list(range(1, 51))
    assert view.head == 50

    view.close()
    await sessions.release(a)  # written here: held ones go last; given back, it is like others
    for other in (b, c):
        sessions.get(other)
    open_files = history_fds()
    assert len(open_files) == 1 and c in open_files[0], open_files  # one loaded, one descriptor
    assert sessions._loaded.loaded_ids() == [c]
    assert sessions.get(a).head_seq == 51  # reloads from disk
    assert seqs_on_disk(root, a) == list(range(1, 52))


async def test_a_forgotten_view_gives_its_session_back(cold: Callable[[], Store]) -> None:
    """A view nobody closes releases its lease when collected."""
    (a, b) = await sessions_with_history(cold(), 2, 5)
    sessions = cold().sessions
    sessions._loaded.max_loaded = 1
    assert sessions.history(a, "t", count).head == 5  # dropped at once
    assert sessions._loaded.leases(a) == 0
    sessions.get(b)
    assert sessions._loaded.loaded_ids() == [b]


async def test_write_lock_lives_while_used_and_not_longer(
    root: Path, cold: Callable[[], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One writer per session even when eviction runs while a writer holds the lock and
    another waits for it; the lock disappears with its last user."""
    (a, b, c) = await sessions_with_history(cold(), 3, 5)
    store = cold()
    sessions = store.sessions
    sessions._loaded.max_loaded = 1
    from sidecar.store import jsonl

    real_append = jsonl.AppendLog.append
    inside = threading.Event()
    go = threading.Event()
    writers = 0
    most = 0

    def slow_append(log: jsonl.AppendLog, payload: bytes) -> None:
        nonlocal writers, most
        writers += 1
        most = max(most, writers)
        if not inside.is_set():
            inside.set()
            assert go.wait(STUCK)
        real_append(log, payload)
        writers -= 1

    monkeypatch.setattr(jsonl.AppendLog, "append", slow_append)
    async with anyio.create_task_group() as tg:
        tg.start_soon(append, sessions, a, [msg("first")])
        await anyio.to_thread.run_sync(inside.wait, STUCK)
        tg.start_soon(append, sessions, a, [msg("second")])
        await anyio.wait_all_tasks_blocked()
        assert sessions._loaded.write_lock_ids() == [a]
        for other in (b, c):  # evicts whatever is idle, in a worker thread
            await anyio.to_thread.run_sync(sessions.get, other)
        assert sessions._loaded.write_lock_ids() == [a]
        go.set()
    assert most == 1
    assert sessions._loaded.write_lock_ids() == []
    assert seqs_on_disk(root, a) == list(range(1, 8))


async def test_delete_drops_the_state_and_the_write_lock(cold: Callable[[], Store]) -> None:
    (a, b) = await sessions_with_history(cold(), 2, 5)
    sessions = cold().sessions
    await append(sessions, a, [msg("x")])
    await sessions.delete(a)
    assert sessions._loaded.write_lock_ids() == []
    assert sessions._loaded.loaded_ids() == []
    assert history_fds() == []
    assert sessions.get(b).head_seq == 5


async def test_fork_copies_token_caches_off_the_event_loop_and_fsyncs_them(
    root: Path, cold: Callable[[], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    (a,) = await sessions_with_history(cold(), 1, 5)
    sessions = cold().sessions
    loop_thread = threading.get_ident()
    real_fsync = os.fsync
    synced: list[tuple[str, int]] = []

    def spy(fd: int) -> None:
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), threading.get_ident()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    fork = await sessions.fork(a, at_seq=3, title=None)
    cache = root / "sessions" / fork.session_id / "tokens-t.jsonl"
    assert cache.read_bytes() == (root / "sessions" / a / "tokens-t.jsonl").read_bytes()
    threads = [thread for path, thread in synced if path == str(cache)]
    assert threads and loop_thread not in threads, synced
    # the cache is durable before session.json (written last) makes the fork visible
    order = [path for path, _ in synced]
    meta = next(i for i, path in enumerate(order) if ".session.json.tmp" in path)
    assert order.index(str(cache)) < meta, order


async def test_a_reader_process_reloads_what_the_writer_appended(cold: Callable[[], Store]) -> None:
    """A second store on the same root (read-only) replaces a state whose file grew."""
    (a,) = await sessions_with_history(cold(), 1, 5)
    writer = cold()
    reader = Store(writer.root)
    try:
        assert reader.sessions.get(a).head_seq == 5
        await append(writer.sessions, a, [msg("new")])
        assert reader.sessions.get(a).head_seq == 6  # reloaded: the file grew
        with pytest.raises(BusyError):
            await reader.sessions.append(a, [msg("refused")])
    finally:
        reader.close()
