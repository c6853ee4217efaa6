"""The context service remembers a bounded number of sessions (``make soak``: it kept one
memory, two request shapes and up to 8,192 prefix keys, for every session it ever assembled)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from protocol.context import ContextAssembleParams, HostSource
from protocol.sessions import SessionAppendParams
from sidecar.context.cache_accounting import RequestShape, Unit
from sidecar.context.service import ContextService
from sidecar.context.session_memory import SessionMemories, SessionMemory
from sidecar.context.tokens import Tokenizers
from sidecar.defaults import MAX_LOADED_SESSIONS_ENV
from sidecar.runs.manager import RunManager
from sidecar.store import Store


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    monkeypatch.setenv(MAX_LOADED_SESSIONS_ENV, "2")
    opened = Store(tmp_path / "store")
    try:
        yield opened
    finally:
        opened.close()


def _session(store: Store, text: str) -> str:
    async def make() -> str:
        session = await store.sessions.create(
            title=text, workspace_roots=[], profile_id=None, meta=None
        )
        params = SessionAppendParams.model_validate(
            {
                "sessionId": session.session_id,
                "entries": [
                    {"kind": "message", "role": "user", "content": [{"type": "text", "text": text}]}
                ],
            },
            by_alias=True,
        )
        await store.sessions.append(session.session_id, list(params.entries))
        return session.session_id

    return anyio.run(make)


def _assemble(service: ContextService, session_id: str) -> dict[str, object]:
    params = ContextAssembleParams.model_validate(
        {
            "sessionId": session_id,
            "userTurn": [{"type": "text", "text": "next"}],
            "date": "2026-11-30",
            "profile": {"model": "claude-sonnet-4-5", "window": 200_000, "maxOutput": 4096},
        },
        by_alias=True,
    )
    return service.assemble(params)


def test_memories_keep_the_most_recently_used_and_drop_the_rest() -> None:
    memories = SessionMemories(2)
    a, b = memories.get("a"), memories.get("b")
    assert memories.get("a") is a  # a is now the most recently used
    memories.get("c")
    assert memories.session_ids() == ["a", "c"]  # b, the least recently used, went
    assert memories.get("a") is a
    assert memories.get("b") is not b  # b starts over, empty
    assert len(memories.session_ids()) == 2


class _Freed:
    """Says which thread freed it (one per message of a lowered prompt)."""

    def __init__(self, freed_in: list[str], done: threading.Event) -> None:
        self.freed_in = freed_in
        self.done = done

    def __del__(self) -> None:
        self.freed_in.append(threading.current_thread().name)
        self.done.set()


def _held(memory: SessionMemory) -> tuple[int, RequestShape | None]:
    return len(memory.lowering), memory.previous_request


def test_a_dropped_memory_s_prompt_is_freed_by_the_reaper_not_by_the_thread_that_drops_it() -> None:
    """Dropping the least recently used memory freed its last lowered prompt (a validated
    model per message) in one call on the thread that asked for another memory — the CPU
    lane, during an assembly: 3 ms with the interpreter held for a 2,000-message prompt."""
    memories = SessionMemories(1)
    old = memories.get("old")
    freed_in: list[str] = []
    done = threading.Event()
    messages = [{"role": "user", "content": [{"type": "text", "text": str(i)}]} for i in range(600)]
    old.lowering.update({id(m): (m, _Freed(freed_in, done)) for m in messages})  # type: ignore[misc]
    del messages
    old.previous_request = RequestShape("m", tuple(Unit(i, 1, 1) for i in range(600)), 0, 0)
    memories.get("new")  # drops "old"
    assert memories.session_ids() == ["new"]
    assert _held(old) == (0, None)  # a holder finds it as after a restart
    assert done.wait(10), "the dropped prompt was freed"
    for _ in range(100):
        if len(freed_in) == 600:
            break
        time.sleep(0.05)
    assert set(freed_in) == {"reaper"}, f"freed in {sorted(set(freed_in))}"


def test_the_service_remembers_as_many_sessions_as_the_store_keeps_loaded(store: Store) -> None:
    service = ContextService(store, Tokenizers.discover(), home=store.root / "home")
    assert service.memories.capacity == store.sessions.max_loaded == 2
    sessions = [_session(store, f"session {i}") for i in range(5)]
    for session_id in sessions:
        _assemble(service, session_id)
        assert service.memory(session_id).previous_sent is not None  # it was remembered
        assert len(service.memories.session_ids()) <= 2
    assert service.memories.session_ids() == sessions[-2:]
    # a dropped session plans its next request as after a restart, and is remembered again
    again = _assemble(service, sessions[0])
    assert again["messages"]
    assert service.memories.session_ids() == [sessions[-1], sessions[0]]


def test_host_sources_outlive_the_memory_and_go_with_the_session(store: Store) -> None:
    service = ContextService(store, Tokenizers.discover(), home=store.root / "home")
    kept, *others = [_session(store, f"session {i}") for i in range(4)]
    source = HostSource.model_validate({"id": "rag", "text": "RETRIEVED-FACT"}, by_alias=True)
    assert service.register_source(kept, source) == ["rag"]
    for session_id in [kept, *others]:
        _assemble(service, session_id)
    assert kept not in service.memories.session_ids()  # its memory was dropped...
    assert "RETRIEVED-FACT" in str(_assemble(service, kept)["system"])  # ...not its source
    service.forget(kept)  # session/delete
    assert kept not in service.memories.session_ids()
    assert service.host_sources(kept) == {}
    assert service.unregister_source(kept, "rag") == []


def test_a_deleted_session_is_forgotten(store: Store) -> None:
    service = ContextService(store, Tokenizers.discover(), home=store.root / "home")
    runs = RunManager(store, service, cast("Any", None), lambda _fn: None)
    deleted, kept = _session(store, "deleted"), _session(store, "kept")
    source = HostSource.model_validate({"id": "rag", "text": "t"}, by_alias=True)
    for session_id in (deleted, kept):
        _assemble(service, session_id)
        service.register_source(session_id, source)
    anyio.run(runs.delete_session, deleted)
    assert service.memories.session_ids() == [kept]
    assert service.host_sources(deleted) == {}
    assert list(service.host_sources(kept)) == ["rag"]


def _append_notes(store: Store, session_id: str, first: int, count: int) -> None:
    words = " ".join(f"w{i}" for i in range(150))
    entries = [
        {
            "kind": "message",
            "role": "user" if n % 2 == 0 else "assistant",
            "content": [{"type": "text", "text": f"note {n}: {words}"}],
        }
        for n in range(first, first + count)
    ]
    params = SessionAppendParams.model_validate(
        {"sessionId": session_id, "entries": entries}, by_alias=True
    )
    anyio.run(store.sessions.append, session_id, list(params.entries))


def test_the_lowering_memo_follows_the_window_when_it_moves(store: Store) -> None:
    """The session's lowering memo (its last prompt's messages, validated) is found by the
    messages' identity, not their place: when the window moves, every message changes place,
    and the body must be the one lowered without the memo, byte for byte."""
    from sidecar.context.service import lower_result

    service = ContextService(store, Tokenizers.discover(), home=store.root / "home")
    session_id = _session(store, "start")
    params = ContextAssembleParams.model_validate(
        {
            "sessionId": session_id,
            "userTurn": [{"type": "text", "text": "next"}],
            "date": "2026-11-30",
            "profile": {"model": "claude-sonnet-4-5", "window": 12_000, "maxOutput": 1024},
            "lowerTo": "anthropic-messages",
        },
        by_alias=True,
    )
    _append_notes(store, session_id, 0, 60)
    before = service.assemble(params)
    _append_notes(store, session_id, 60, 60)
    after = service.assemble(params)
    first = [cast("list[Any]", r["messages"])[0]["content"][0]["text"] for r in (before, after)]
    assert first[0] != first[1]  # the window moved: every message kept changed place
    assert service.memory(session_id).lowering  # the memo was used
    unmemoised = lower_result(after, "anthropic-messages", store.blobs.get, session_id)
    assert json.dumps(after["body"]) == json.dumps(unmemoised)
