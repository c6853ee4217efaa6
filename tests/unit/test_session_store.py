"""``sidecar.store``: sessions, history, the writer lock and token counts, without RPC."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread
import pytest

from protocol.entries import (
    CompactionInput,
    EntryInput,
    ItemRef,
    MessageInput,
    NoteInput,
    PinInput,
)
from sidecar.errors import BusyError, ConflictError, InvalidRequestError, NotFoundError
from sidecar.store import SessionStore, Store, content_hash
from sidecar.store.jsonl import AppendLog

pytestmark = pytest.mark.anyio


def msg(text: str, role: str = "user") -> MessageInput:
    return MessageInput.model_validate(
        {"kind": "message", "role": role, "content": [{"type": "text", "text": text}]}
    )


def msgs(*texts: str) -> list[EntryInput]:
    return [msg(t) for t in texts]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def store(root: Path) -> Iterator[Store]:
    opened = Store(root)
    try:
        yield opened
    finally:
        opened.close()


async def new_session(sessions: SessionStore, title: str = "t", root: str = "/work") -> str:
    created = await sessions.create(title=title, workspace_roots=[root], profile_id=None, meta=None)
    return created.session_id


async def append(
    sessions: SessionStore,
    session_id: str,
    entries: Sequence[EntryInput],
    *,
    expected_head_seq: int | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """``SessionStore.append`` with its result typed (its annotation names ``list``, which
    mypy resolves to the ``SessionStore.list`` method)."""
    result: Any = await sessions.append(session_id, entries, expected_head_seq=expected_head_seq)
    return cast("tuple[list[dict[str, Any]], int]", result)


def history_seqs(root: Path, session_id: str) -> list[int]:
    lines = (root / "sessions" / session_id / "history.jsonl").read_bytes().splitlines()
    return [json.loads(x)["seq"] for x in lines]


# --- sessions --------------------------------------------------------------------------------


async def test_create_and_get(store: Store) -> None:
    created = await store.sessions.create(
        title="first",
        workspace_roots=["/work/project/../project", "/tmp"],
        profile_id="prof",
        meta={"k": [1, 2]},
    )
    assert created.session_id.startswith("ses_") and len(created.session_id) == 30
    assert created.title == "first"
    assert created.workspace_roots == ["/work/project", "/tmp"]
    assert created.profile_id == "prof"
    assert created.meta == {"k": [1, 2]}
    assert created.head_seq == 0
    assert created.forked_from is None
    assert created.created_at == created.updated_at
    assert store.sessions.get(created.session_id) == created
    sdir = store.root / "sessions" / created.session_id
    assert (sdir / "history.jsonl").read_bytes() == b""
    assert json.loads((sdir / "session.json").read_bytes())["title"] == "first"


async def test_relative_workspace_root_is_refused(store: Store) -> None:
    with pytest.raises(InvalidRequestError) as info:
        await store.sessions.create(
            title="x", workspace_roots=["relative/path"], profile_id=None, meta=None
        )
    assert info.value.code == "params.invalid"
    assert os.listdir(store.root / "sessions") == []


@pytest.mark.parametrize(
    "session_id",
    ["ses_01ARZ3NDEKTSV4RRFFQ69G5FAV", "ses_../../etc", "nope", "", "ses_" + "A" * 25 + "/"],
)
async def test_get_unknown_session_is_not_found(store: Store, session_id: str) -> None:
    with pytest.raises(NotFoundError) as info:
        store.sessions.get(session_id)
    assert info.value.code == "session.not_found"
    assert info.value.details == {"sessionId": session_id}


async def test_list_paginates_newest_first(store: Store) -> None:
    ids = [await new_session(store.sessions, f"s{i}") for i in range(5)]
    assert ids == sorted(ids), "ids are time-ordered"

    page1, cursor1 = store.sessions.list_page(cursor=None, limit=2)
    assert [s.session_id for s in page1] == [ids[4], ids[3]]
    assert cursor1 is not None
    page2, cursor2 = store.sessions.list_page(cursor=cursor1, limit=2)
    assert [s.session_id for s in page2] == [ids[2], ids[1]]
    assert cursor2 is not None
    page3, cursor3 = store.sessions.list_page(cursor=cursor2, limit=2)
    assert [s.session_id for s in page3] == [ids[0]]
    assert cursor3 is None

    everything, last = store.sessions.list_page(cursor=None, limit=5)
    assert [s.session_id for s in everything] == ids[::-1]
    assert last is None
    assert [s.title for s in everything] == ["s4", "s3", "s2", "s1", "s0"]


async def test_list_cursor_is_stable_under_concurrent_creation(store: Store) -> None:
    ids = [await new_session(store.sessions) for _ in range(3)]
    page1, cursor = store.sessions.list_page(cursor=None, limit=2)
    newer = await new_session(store.sessions)
    page2, _ = store.sessions.list_page(cursor=cursor, limit=2)
    seen = [s.session_id for s in page1 + page2]
    assert seen == ids[::-1]
    assert newer not in seen


async def test_list_of_an_empty_store(store: Store) -> None:
    assert store.sessions.list_page(cursor=None, limit=10) == ([], None)


async def test_rename(store: Store) -> None:
    sid = await new_session(store.sessions, "old")
    before = store.sessions.get(sid)
    await asyncio.sleep(0.002)  # timestamps have millisecond precision
    renamed = await store.sessions.rename(sid, "new title")
    assert renamed.title == "new title"
    assert renamed.updated_at > before.updated_at
    assert renamed.created_at == before.created_at
    assert store.sessions.get(sid).title == "new title"


async def test_delete_moves_the_session_to_trash(store: Store) -> None:
    keep = await new_session(store.sessions, "keep")
    sid = await new_session(store.sessions, "gone")
    await append(store.sessions, sid, msgs("remember me"))
    await store.sessions.delete(sid)

    with pytest.raises(NotFoundError):
        store.sessions.get(sid)
    assert [s.session_id for s in store.sessions.list_page(cursor=None, limit=10)[0]] == [keep]
    trashed = [p for p in (store.root / "trash").iterdir() if p.name.startswith(sid)]
    assert len(trashed) == 1
    assert json.loads((trashed[0] / "session.json").read_bytes())["title"] == "gone"
    assert b"remember me" in (trashed[0] / "history.jsonl").read_bytes()
    with pytest.raises(NotFoundError):
        await append(store.sessions, sid, msgs("too late"))


# --- history ---------------------------------------------------------------------------------


async def test_append_assigns_seqs_ids_and_hashes(store: Store) -> None:
    sid = await new_session(store.sessions)
    refs, head = await append(store.sessions, sid, msgs("a", "b"))
    assert head == 2
    refs2, head2 = await append(store.sessions, sid, msgs("c"))
    assert head2 == 3
    everything = refs + refs2
    assert [r["seq"] for r in everything] == [1, 2, 3]
    assert len({r["id"] for r in everything}) == 3
    assert all(str(r["id"]).startswith("ent_") for r in everything)
    assert [r["hash"] for r in everything] == [
        content_hash({"kind": "message", "role": "user", "content": [{"type": "text", "text": t}]})
        for t in "abc"
    ]
    assert store.sessions.get(sid).head_seq == 3
    page = store.sessions.read(sid, after_seq=None, before_seq=None, limit=10)
    assert [(e["seq"], e["id"], e["hash"]) for e in page.entries] == [
        (r["seq"], r["id"], r["hash"]) for r in everything
    ]
    assert page.entries[2]["content"] == [{"type": "text", "text": "c"}]


async def test_content_hash_ignores_meta_only(store: Store) -> None:
    sid = await new_session(store.sessions)
    with_meta = MessageInput.model_validate(
        {
            "kind": "message",
            "role": "user",
            "content": [{"type": "text", "text": "same"}],
            "meta": {"ui": 1},
        }
    )
    refs, _ = await append(store.sessions, sid, [msg("same"), with_meta, msg("same", "assistant")])
    assert refs[0]["hash"] == refs[1]["hash"]
    assert refs[0]["hash"] != refs[2]["hash"]


async def test_expected_head_seq_mismatch_writes_nothing(store: Store) -> None:
    sid = await new_session(store.sessions)
    await append(store.sessions, sid, msgs("a", "b"))
    history = store.root / "sessions" / sid / "history.jsonl"
    before = history.read_bytes()
    for wrong in (0, 1, 3):
        with pytest.raises(ConflictError) as info:
            await append(store.sessions, sid, msgs("x"), expected_head_seq=wrong)
        assert info.value.code == "store.conflict"
        assert info.value.details == {"sessionId": sid, "headSeq": 2}
    assert history.read_bytes() == before
    assert store.sessions.get(sid).head_seq == 2
    refs, head = await append(store.sessions, sid, msgs("c"), expected_head_seq=2)
    assert (refs[0]["seq"], head) == (3, 3)


async def test_entry_referring_to_itself_or_later_is_refused(store: Store) -> None:
    sid = await new_session(store.sessions)
    await append(store.sessions, sid, msgs("a"))
    future = CompactionInput(kind="compaction", summary="s", through_seq=2)
    with pytest.raises(InvalidRequestError) as info:
        await append(store.sessions, sid, [future])
    assert info.value.code == "session.seq_out_of_range"
    pin = PinInput(kind="pin", target=ItemRef(kind="range", from_seq=1, through_seq=5))
    with pytest.raises(InvalidRequestError):
        await append(store.sessions, sid, [msg("b"), pin])
    assert store.sessions.get(sid).head_seq == 1
    refs, _ = await append(
        store.sessions,
        sid,
        [msg("b"), CompactionInput(kind="compaction", summary="s", through_seq=2)],
    )
    assert [r["seq"] for r in refs] == [2, 3]


async def test_read_windows(store: Store) -> None:
    sid = await new_session(store.sessions)
    await append(store.sessions, sid, msgs(*(str(i) for i in range(1, 11))))
    read = store.sessions.read

    def window(after: int | None, before: int | None, limit: int) -> tuple[list[int], int, bool]:
        page = read(sid, after_seq=after, before_seq=before, limit=limit)
        return [e["seq"] for e in page.entries], page.head_seq, page.has_more

    assert window(None, None, 3) == ([1, 2, 3], 10, True)
    assert window(0, None, 3) == ([1, 2, 3], 10, True)
    assert window(3, None, 3) == ([4, 5, 6], 10, True)
    assert window(7, None, 3) == ([8, 9, 10], 10, False)
    assert window(9, None, 3) == ([10], 10, False)
    assert window(10, None, 3) == ([], 10, False)
    assert window(50, None, 3) == ([], 10, False)
    assert window(None, None, 100) == (list(range(1, 11)), 10, False)
    # Scrolling back from the newest.
    assert window(None, 11, 3) == ([8, 9, 10], 10, True)
    assert window(None, 8, 3) == ([5, 6, 7], 10, True)
    assert window(None, 4, 3) == ([1, 2, 3], 10, False)
    assert window(None, 3, 5) == ([1, 2], 10, False)
    assert window(None, 1, 5) == ([], 10, False)
    assert window(None, 99, 2) == ([9, 10], 10, True)
    # Both bounds: forward from afterSeq, stopping before beforeSeq.
    assert window(2, 8, 10) == ([3, 4, 5, 6, 7], 10, False)
    assert window(2, 8, 2) == ([3, 4], 10, True)
    assert window(2, 8, 5) == ([3, 4, 5, 6, 7], 10, False)
    assert window(5, 6, 5) == ([], 10, False)
    assert window(6, 5, 5) == ([], 10, False)


async def test_read_of_an_empty_session(store: Store) -> None:
    sid = await new_session(store.sessions)
    page = store.sessions.read(sid, after_seq=None, before_seq=None, limit=5)
    assert (page.entries, page.head_seq, page.has_more) == ([], 0, False)


async def test_fork_copies_entries_verbatim(store: Store) -> None:
    sid = await new_session(store.sessions, "source")
    await append(store.sessions, sid, [*msgs("a", "b"), NoteInput(kind="note", text="n")])
    await append(store.sessions, sid, msgs("d"))
    source = store.sessions.read(sid, after_seq=None, before_seq=None, limit=10).entries

    fork = await store.sessions.fork(sid, at_seq=2, title=None)
    assert fork.session_id != sid
    assert fork.title == "source"
    assert fork.workspace_roots == ["/work"]
    assert fork.head_seq == 2
    assert fork.forked_from is not None
    assert (fork.forked_from.session_id, fork.forked_from.at_seq) == (sid, 2)
    copied = store.sessions.read(fork.session_id, after_seq=None, before_seq=None, limit=10)
    assert copied.entries == source[:2]
    src_lines = (store.root / "sessions" / sid / "history.jsonl").read_bytes().splitlines()
    dst = (store.root / "sessions" / fork.session_id / "history.jsonl").read_bytes()
    assert dst.splitlines() == src_lines[:2]

    refs, head = await append(store.sessions, fork.session_id, msgs("fork only"))
    assert (refs[0]["seq"], head) == (3, 3)
    assert store.sessions.get(sid).head_seq == 4  # the source is untouched

    whole = await store.sessions.fork(sid, at_seq=None, title="copy")
    assert (whole.head_seq, whole.title) == (4, "copy")
    empty = await store.sessions.fork(sid, at_seq=0, title=None)
    assert empty.head_seq == 0
    with pytest.raises(InvalidRequestError) as info:
        await store.sessions.fork(sid, at_seq=5, title=None)
    assert info.value.code == "session.seq_out_of_range"


async def test_reopening_the_store_restores_everything(root: Path) -> None:
    first = Store(root)
    try:
        a = await new_session(first.sessions, "a")
        b = await new_session(first.sessions, "b")
        gone = await new_session(first.sessions, "gone")
        await append(first.sessions, a, msgs("1", "2", "3"))
        await append(first.sessions, b, [NoteInput(kind="note", text="x")])
        await first.sessions.rename(b, "b2")
        await first.sessions.delete(gone)
        fork = await first.sessions.fork(a, at_seq=2, title="f")
        before = {s.session_id: s for s in first.sessions.list_page(cursor=None, limit=50)[0]}
        entries = first.sessions.read(a, after_seq=None, before_seq=None, limit=50).entries
    finally:
        first.close()

    second = Store(root)
    try:
        assert second.writable
        after = {s.session_id: s for s in second.sessions.list_page(cursor=None, limit=50)[0]}
        # held by the first store while it was open, by nobody once it closed
        assert all(s.held_by is not None and s.held_by.pid == os.getpid() for s in before.values())
        assert after == {k: s.model_copy(update={"held_by": None}) for k, s in before.items()}
        assert set(after) == {a, b, fork.session_id}
        assert after[b].title == "b2"
        assert after[fork.session_id].forked_from == fork.forked_from
        assert second.sessions.read(a, after_seq=None, before_seq=None, limit=50).entries == (
            entries
        )
        refs, head = await append(second.sessions, a, msgs("4"))
        assert (refs[0]["seq"], head) == (4, 4)
    finally:
        second.close()


async def test_an_append_answers_after_its_write_and_fsync(
    store: Store, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``SessionStore.append`` returns (the RPC answer) only after the history file was
    written and fsynced: an ordering spy on the store module's ``os.write``/``os.fsync``."""
    sid = await new_session(store.sessions)
    history = str(root.resolve() / "sessions" / sid / "history.jsonl")
    events: list[str] = []
    real_write, real_fsync = os.write, os.fsync

    def is_history(fd: int) -> bool:
        return os.readlink(f"/proc/self/fd/{fd}") == history

    def write(fd: int, data: bytes | memoryview) -> int:
        written = real_write(fd, data)
        if is_history(fd):
            events.append("write")
        return written

    def fsync(fd: int) -> None:
        real_fsync(fd)
        if is_history(fd):
            events.append("fsync")

    monkeypatch.setattr("sidecar.store.jsonl.os.write", write)
    monkeypatch.setattr("sidecar.store.jsonl.os.fsync", fsync)
    await append(store.sessions, sid, msgs("a", "b"))
    events.append("answered")
    monkeypatch.undo()
    assert events == ["write", "fsync", "answered"]


async def test_a_create_waits_for_the_disk_three_times_and_reads_nothing_back(
    store: Store, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new session's empty history file holds no data to sync: a create fsyncs
    ``session.json``, the session's directory (which makes both names durable: the history
    file exists by then) and the sessions directory, and installs the session from what it
    wrote, loading nothing; the session then takes appends, and a store opened afterwards
    finds it as it was written."""
    sessions_dir = root.resolve() / "sessions"
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        real_fsync(fd)
        path = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if path.is_dir() and path.parent == sessions_dir:
            assert (path / "history.jsonl").exists()  # its name is durable from here
        synced.append(path.name if path.parent == sessions_dir.parent else path.name[:14])

    loads: list[str] = []
    real_load = SessionStore._load

    def load(self: SessionStore, session_id: str) -> Any:
        loads.append(session_id)
        return real_load(self, session_id)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(SessionStore, "_load", load)
    sid = await new_session(store.sessions, "three")
    monkeypatch.undo()
    assert synced == [".session.json.", sid[:14], "sessions"]
    assert loads == []
    assert (sessions_dir / sid / "history.jsonl").stat().st_size == 0

    await append(store.sessions, sid, msgs("a", "b"))
    assert [
        e["content"][0]["text"]
        for e in store.sessions.read(sid, after_seq=0, before_seq=None, limit=10).entries
    ] == ["a", "b"]
    store.close()
    reopened = Store(root)
    try:
        session = reopened.sessions.get(sid)
        assert (session.title, session.head_seq) == ("three", 2)
        await append(reopened.sessions, sid, msgs("c"))
        assert reopened.sessions.get(sid).head_seq == 3
    finally:
        reopened.close()


# --- the writer locks ------------------------------------------------------------------------


async def test_a_session_is_written_by_one_store_at_a_time(root: Path) -> None:
    """Two stores on one root (two processes, here two descriptors: ``flock`` locks one open
    file, so they exclude each other as two processes do): each writes its own sessions; a
    session the other holds answers ``session.held`` naming the holder and writes nothing;
    reads see every acknowledged entry; a released session continues at the next seq."""
    first = Store(root)
    second = Store(root, face="acp")
    try:
        sid = await new_session(first.sessions, "shared")
        await append(first.sessions, sid, msgs("one"))
        assert first.writable and second.writable
        mine = await new_session(second.sessions, "mine")
        assert (await append(second.sessions, mine, msgs("m1")))[1] == 1

        assert second.sessions.get(sid).head_seq == 1
        with pytest.raises(BusyError) as info:
            await append(second.sessions, sid, msgs("two"))
        err = info.value
        assert err.code == "session.held" and err.retryable and err.retry_after_ms
        assert err.details is not None
        held = err.details["heldBy"]
        assert (held["pid"], held["face"]) == (os.getpid(), "serve") and held["since"]
        with pytest.raises(BusyError):
            await second.sessions.rename(sid, "x")
        with pytest.raises(BusyError):
            await second.sessions.delete(sid)
        forked = await second.sessions.fork(sid, at_seq=None, title=None)  # reads the source
        assert forked.head_seq == 1 and forked.held_by is not None
        assert forked.held_by.face == "acp"
        assert history_seqs(root, sid) == [1]

        # The reader sees what the holder appends after it loaded the session.
        await append(first.sessions, sid, msgs("two", "three"))
        assert second.sessions.get(sid).head_seq == 3
        page = second.sessions.read(sid, after_seq=1, before_seq=None, limit=10)
        assert [e["content"][0]["text"] for e in page.entries] == ["two", "three"]
        listed = {s.session_id: s for s in second.sessions.list_page(cursor=None, limit=10)[0]}
        assert set(listed) == {sid, mine, forked.session_id}
        holders = {k: s.held_by.face if s.held_by else None for k, s in listed.items()}
        assert holders == {sid: "serve", mine: "acp", forked.session_id: "acp"}

        # Handed over: released in the first, written in the second at the next seq.
        assert await first.sessions.release(sid)
        assert not await first.sessions.release(sid)  # not held any more
        assert second.sessions.get(sid).held_by is None
        refs, head = await append(second.sessions, sid, msgs("four"))
        assert (refs[0]["seq"], head) == (4, 4)
        with pytest.raises(BusyError) as info:
            await append(first.sessions, sid, msgs("no"))
        assert info.value.details is not None
        assert info.value.details["heldBy"]["face"] == "acp"
        second.close()  # a process that ends gives back everything it held
        refs, head = await append(first.sessions, sid, msgs("five"))
        assert (refs[0]["seq"], head) == (5, 5)
        assert history_seqs(root, sid) == [1, 2, 3, 4, 5]
    finally:
        second.close()
        first.close()

    third = Store(root)
    try:
        assert third.sessions.get(sid).head_seq == 5
        assert third.sessions.get(sid).held_by is None
    finally:
        third.close()


async def test_a_read_only_store_holds_nothing(root: Path) -> None:
    writer = Store(root)
    try:
        sid = await new_session(writer.sessions)
        await writer.sessions.release(sid)
        reader = Store(root, read_only=True)
        try:
            assert not reader.writable
            with pytest.raises(BusyError) as info:
                await append(reader.sessions, sid, msgs("x"))
            assert info.value.code == "store.locked"
            assert reader.sessions.get(sid).held_by is None
        finally:
            reader.close()
    finally:
        writer.close()


# --- token counts ----------------------------------------------------------------------------


class CountingFn:
    """A count function that records every batch it is asked for."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, records: Sequence[dict[str, Any]]) -> list[int]:
        texts = [str(r["content"][0]["text"]) for r in records]
        self.calls.append(texts)
        return [len(t) for t in texts]


async def test_token_counts_are_computed_once_and_persisted(root: Path) -> None:
    first = Store(root)
    try:
        sid = await new_session(first.sessions)
        await append(first.sessions, sid, msgs("a", "bb", "ccc"))
        count = CountingFn()
        assert first.sessions.token_counts(sid, [1, 3], "tok", count) == [1, 3]
        assert count.calls == [["a", "ccc"]]
        assert first.sessions.token_counts(sid, [1, 2, 3], "tok", count) == [1, 2, 3]
        assert count.calls == [["a", "ccc"], ["bb"]]
        assert first.sessions.token_counts(sid, [3, 2, 1], "tok", count) == [3, 2, 1]
        assert len(count.calls) == 2
        cache = root / "sessions" / sid / "tokens-tok.jsonl"
        rows = [json.loads(x) for x in cache.read_bytes().splitlines()]
        refs = first.sessions.read(sid, after_seq=None, before_seq=None, limit=10).entries
        assert {r["h"]: r["n"] for r in rows} == {
            e["hash"]: len(str(e["content"][0]["text"])) for e in refs
        }
        other = CountingFn()
        assert first.sessions.token_counts(sid, [2], "other", other) == [2]
        assert other.calls == [["bb"]]
        assert (root / "sessions" / sid / "tokens-other.jsonl").exists()
    finally:
        first.close()

    second = Store(root)
    try:
        again = CountingFn()
        assert second.sessions.token_counts(sid, [1, 2, 3], "tok", again) == [1, 2, 3]
        assert again.calls == []
        await append(second.sessions, sid, msgs("dddd"))
        assert second.sessions.token_counts(sid, [1, 2, 3, 4], "tok", again) == [1, 2, 3, 4]
        assert again.calls == [["dddd"]]
    finally:
        second.close()


async def test_identical_content_shares_a_count(store: Store) -> None:
    sid = await new_session(store.sessions)
    await append(store.sessions, sid, msgs("same"))
    count = CountingFn()
    store.sessions.token_counts(sid, [1], "tok", count)
    await append(store.sessions, sid, msgs("same"))
    assert store.sessions.token_counts(sid, [2], "tok", count) == [4]
    assert count.calls == [["same"]]


# --- cancellation ----------------------------------------------------------------------------


@pytest.fixture
def slow_appends(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every durable append takes 0.3 s in its worker thread (a slow disk)."""
    original = AppendLog.append

    def slow(self: AppendLog, payload: bytes) -> None:
        time.sleep(0.3)
        original(self, payload)

    monkeypatch.setattr(AppendLog, "append", slow)


@pytest.mark.usefixtures("slow_appends")
async def test_cancelled_append_still_commits_and_answers(root: Path) -> None:
    store = Store(root)
    try:
        sid = await new_session(store.sessions)
        await append(store.sessions, sid, msgs("one"))

        task = asyncio.get_running_loop().create_task(append(store.sessions, sid, msgs("two")))
        await asyncio.sleep(0.1)
        assert not task.done()
        task.cancel()  # what pygls does on $/cancelRequest
        await asyncio.wait({task}, timeout=5)
        assert task.done()
        assert not task.cancelled(), "a committed append was answered as cancelled"
        refs, head = task.result()
        assert [r["seq"] for r in refs] == [2]
        assert head == 2
        assert store.sessions.get(sid).head_seq == 2

        refs3, head3 = await append(store.sessions, sid, msgs("three"))
        assert [r["seq"] for r in refs3] == [3]
        assert head3 == 3
        assert history_seqs(root, sid) == [1, 2, 3]
    finally:
        store.close()

    reopened = Store(root)
    try:
        page = reopened.sessions.read(sid, after_seq=None, before_seq=None, limit=10)
        assert [e["seq"] for e in page.entries] == [1, 2, 3]
        assert [e["content"][0]["text"] for e in page.entries] == ["one", "two", "three"]
        assert page.head_seq == 3
    finally:
        reopened.close()


@pytest.mark.usefixtures("slow_appends")
async def test_cancelling_one_of_two_queued_appends(root: Path) -> None:
    # The second append waits for the session's write lock while the first is committing;
    # cancelling the first must neither lose it nor let the second reuse its seq.
    store = Store(root)
    try:
        sid = await new_session(store.sessions)
        loop = asyncio.get_running_loop()
        first = loop.create_task(append(store.sessions, sid, msgs("first")))
        second = loop.create_task(append(store.sessions, sid, msgs("second")))
        await asyncio.sleep(0.1)
        first.cancel()
        await asyncio.wait({first, second}, timeout=5)
        assert first.done() and second.done()
        assert not first.cancelled(), "a committed append was answered as cancelled"
        refs1, _ = first.result()
        refs2, head = second.result()
        assert [refs1[0]["seq"], refs2[0]["seq"]] == [1, 2]
        assert head == 2
        assert history_seqs(root, sid) == [1, 2]
    finally:
        store.close()


async def test_cancelled_create_still_creates(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sidecar.store.jsonl import write_file_atomic as original

    def slow(path: Path, data: bytes) -> None:
        time.sleep(0.3)
        original(path, data)

    monkeypatch.setattr("sidecar.store.new_session.write_file_atomic", slow)
    store = Store(root)
    try:
        task = asyncio.get_running_loop().create_task(
            store.sessions.create(title="c", workspace_roots=[], profile_id=None, meta=None)
        )
        await asyncio.sleep(0.1)
        task.cancel()
        await asyncio.wait({task}, timeout=5)
        assert task.done()
        assert not task.cancelled(), "a committed create was answered as cancelled"
        created = task.result()
        assert store.sessions.get(created.session_id).title == "c"
    finally:
        store.close()


# --- bounded memory: idle sessions are dropped and reload on use -------------------------------


async def test_dropped_sessions_reload_and_writes_in_flight_keep_them(
    store: Store, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With room for two loaded sessions, concurrent appends across eight still give every
    session seqs 1..n in order with the right texts: a session is only dropped when no write
    holds it, and a dropped one reloads from disk."""
    monkeypatch.setattr(store.sessions._loaded, "max_loaded", 2)
    ids = [await new_session(store.sessions, f"s{i}") for i in range(8)]

    async def writer(k: int) -> None:
        for n in range(6):
            sid = ids[(k + n) % len(ids)]
            await append(store.sessions, sid, msgs(f"{k}-{n}"))

    await asyncio.gather(*(writer(k) for k in range(8)))
    assert len(store.sessions._loaded.loaded_ids()) <= 2  # nothing in use any more
    total = 0
    for sid in ids:
        seqs = history_seqs(root, sid)
        assert seqs == list(range(1, len(seqs) + 1))
        page = store.sessions.read(sid, after_seq=0, before_seq=None, limit=1000)
        assert [e["seq"] for e in page.entries] == seqs
        total += len(seqs)
    assert total == 8 * 6
    texts = sorted(
        e["content"][0]["text"]
        for sid in ids
        for e in store.sessions.read(sid, after_seq=0, before_seq=None, limit=1000).entries
    )
    assert texts == sorted(f"{k}-{n}" for k in range(8) for n in range(6))


# --- the snapshot index ------------------------------------------------------------------------


async def test_a_torn_snapshot_index_line_does_not_swallow_the_next(
    store: Store, root: Path
) -> None:
    sid = await new_session(store.sessions)
    await store.snapshot_index.record(sid, "a" * 40, "b" * 40)
    index = root / "sessions" / sid / "snapshots.jsonl"
    index.write_bytes(index.read_bytes() + b'{"snapshotId":"torn')  # a power loss mid-line
    await store.snapshot_index.record(sid, "c" * 40, "d" * 40)
    assert [e["snapshotId"] for e in store.snapshot_index.read(sid)] == ["a" * 40, "c" * 40]


async def test_a_snapshot_recorded_while_gc_trims_the_index_is_kept(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gc reads the index and rewrites it in one step against a record: a record that
    arrives between the two (forced here) lands after the rewrite instead of being lost."""
    import threading

    sid = await new_session(store.sessions)
    for i in range(5):
        await store.snapshot_index.record(sid, f"{i:040x}", "e" * 40)
    from sidecar.store import snapshot_index

    parse = snapshot_index._parse
    recorder: list[threading.Thread] = []

    def read_then_race(data: bytes) -> list[dict[str, Any]]:
        index = parse(data)
        if not recorder:  # another request records a snapshot right now
            thread = threading.Thread(
                target=anyio.run,
                args=(store.snapshot_index.record, sid, f"{99:040x}", "e" * 40),
            )
            recorder.append(thread)
            thread.start()
            thread.join(timeout=0.5)  # blocked by the index's flock, as it should be
        return index

    monkeypatch.setattr(snapshot_index, "_parse", read_then_race)
    kept, dropped = await anyio.to_thread.run_sync(
        lambda: store.snapshot_index.trim(sid, 2, dry_run=False)
    )
    recorder[0].join(timeout=10)
    assert [e["snapshotId"] for e in kept] == [f"{3:040x}", f"{4:040x}"] and dropped == 3
    monkeypatch.undo()
    ids = [e["snapshotId"] for e in store.snapshot_index.read(sid)]
    assert ids == [f"{3:040x}", f"{4:040x}", f"{99:040x}"]


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "message", "role": "user", "content": [{"type": "text", "text": "é 😀"}]},
        {"kind": "message", "role": "user", "content": [], "meta": {"b": 1, "a": [True]}},
        {"kind": "note", "text": "x", "hash": "shadowed", "meta": {}},
    ],
)
def test_a_stored_line_is_the_record_whatever_the_encoding_path(body: dict[str, Any]) -> None:
    from sidecar.store.entry_lines import content_hash_and_json, entry_line

    ref = {"seq": 7, "id": "ent_X", "time": "2026-11-30T12:00:00.000Z", "hash": "h"}
    digest, canon = content_hash_and_json(body)
    assert digest == content_hash(body)
    line = entry_line(ref, body, canon)
    assert json.loads(line) == {**ref, **body}
    assert list(json.loads(line))[:4] == (["seq", "id", "time", "hash"])
