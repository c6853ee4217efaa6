"""A dropped session is freed in the background, a piece at a time, and a new one is loaded off
the event loop.

``make soak`` (issue 20, item 8): once its 64 loaded sessions were full, every new session
evicted one, and freeing a 2,000-entry session — one C call, ~50,000 objects — held the
interpreter for 4-9 ms on the event loop; each ``session/create`` also loaded its new session
there.  The p99 of every method stepped up from that window on.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol.sessions import SessionAppendParams
from sidecar.defaults import MAX_LOADED_SESSIONS_ENV
from sidecar.interpreter import reaper
from sidecar.store import Store
from sidecar.store.loaded import LoadedSessions
from sidecar.store.session_state import SessionState


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    monkeypatch.setenv(MAX_LOADED_SESSIONS_ENV, "1")
    opened = Store(tmp_path / "store")
    try:
        yield opened
    finally:
        opened.close()


class _Sentinel:
    """Says which thread freed it."""

    def __init__(self) -> None:
        self.freed = threading.Event()
        self.freed_in: list[str] = []

    def mark(self) -> _Marker:
        return _Marker(self)


class _Marker:
    def __init__(self, sentinel: _Sentinel) -> None:
        self.sentinel = sentinel

    def __del__(self) -> None:
        self.sentinel.freed_in.append(threading.current_thread().name)
        self.sentinel.freed.set()


async def _new_session(store: Store, entries: int) -> str:
    session = await store.sessions.create(title="t", workspace_roots=[], profile_id=None, meta=None)
    for start in range(0, entries, 50):
        params = SessionAppendParams.model_validate(
            {
                "sessionId": session.session_id,
                "entries": [
                    {
                        "kind": "message",
                        "role": "user",
                        "content": [{"type": "text", "text": f"{n}"}],
                    }
                    for n in range(start, min(start + 50, entries))
                ],
            },
            by_alias=True,
        )
        await store.sessions.append(session.session_id, list(params.entries))
    return session.session_id


def test_an_evicted_session_is_freed_by_the_reaper_not_by_the_thread_that_evicts_it(
    store: Store,
) -> None:
    sentinel = _Sentinel()

    async def scenario() -> str:
        first = await _new_session(store, 600)
        with store.sessions._lease(first) as state:
            for seq in range(1, state.head + 1):  # parsed, as an assembly leaves them
                state.index.record(seq, state.lines)
            state.index.group_cache[("sentinel",)] = sentinel.mark()
        # the only loaded session: a second one evicts it, in the thread that installs it
        await _new_session(store, 1)
        return first

    first = anyio.run(scenario)
    assert first not in store.sessions._loaded._slots, "the first session was evicted"
    assert sentinel.freed.wait(10), "the evicted session's memory was freed"
    assert sentinel.freed_in == ["reaper"], (
        f"freed in {sentinel.freed_in}: the thread that evicted the session paid for it"
    )


def test_the_reaper_lets_other_threads_run_between_elements() -> None:
    """Another thread sees the container part-emptied: the interpreter changed hands in the
    middle (freed in one call, it goes from full to empty at once)."""
    size = 300_000
    big: dict[int, object] = {n: {"n": n} for n in range(size)}
    seen: set[int] = set()
    reaper.dismantle([big])
    while big:
        seen.add(len(big))
    partly = {n for n in seen if 0 < n < size}
    assert partly, f"no other thread ran while it was emptied (lengths seen: {sorted(seen)[:5]})"


def test_small_containers_are_freed_in_place() -> None:
    small = {n: n for n in range(reaper.SMALL - 1)}
    reaper.dismantle([small])
    assert len(small) == reaper.SMALL - 1, "left to reference counting"


def test_session_create_installs_the_new_session_off_the_event_loop(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installing a session evicts the least recently used one (max 1 loaded here)."""
    installed_in: list[int] = []
    install = LoadedSessions._install

    def recording(self: LoadedSessions[SessionState], session_id: str, state: SessionState) -> Any:
        installed_in.append(threading.get_ident())
        return install(self, session_id, state)

    monkeypatch.setattr(LoadedSessions, "_install", recording)

    async def scenario() -> int:
        await store.sessions.create(title="t", workspace_roots=[], profile_id=None, meta=None)
        await store.sessions.create(title="u", workspace_roots=[], profile_id=None, meta=None)
        return threading.get_ident()

    loop_thread = anyio.run(scenario)
    assert len(installed_in) == 2
    assert loop_thread not in installed_in, "session/create installed its session on the loop"


def test_session_create_is_durable_before_it_answers_and_fsyncs_off_the_loop(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing acknowledged lost: the new session's ``session.json`` (written under a
    temporary name, then renamed), its directory (the history file's name: the file is empty)
    and the sessions directory are each fsynced before ``create`` returns, and none of it on
    the event loop."""
    synced: list[tuple[str, int]] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), threading.get_ident()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)

    async def scenario() -> tuple[str, int]:
        session = await store.sessions.create(
            title="t", workspace_roots=[], profile_id=None, meta=None
        )
        return session.session_id, threading.get_ident()

    session_id, loop_thread = anyio.run(scenario)
    sessions_dir = store.sessions.session_dir(session_id).parent
    session_dir = sessions_dir / session_id
    paths = {Path(path) for path, _ in synced}
    assert (session_dir / "history.jsonl").stat().st_size == 0
    assert any(p.parent == session_dir and p.name.startswith(".session.json") for p in paths)
    assert session_dir in paths, "the renamed session.json's entry"
    assert sessions_dir in paths, "the new session directory's entry"
    assert loop_thread not in {thread for _, thread in synced}
