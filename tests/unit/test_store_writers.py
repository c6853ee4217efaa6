"""Per-session writers (issue 43) and three store and journal faults an audit found no test
could see, each with a test that fails when the fault is put back:

- the head advanced before the entries are written and fsynced: a failed write must leave
  the head, the reads and the next seq as they were;
- a lock file keeping a previous holder's digits: a shorter record written over a longer one
  (pid ``99`` over ``12345`` read ``99345``) must replace it whole;
- a sub-agent's status taken as its run's: an unfinished run read from disk takes the newest
  status of the run itself, never one a sub-agent journaled after it.

And the lock itself: a session held by one store is refused to another (by ``flock``, as
between processes), the holder record names who, and a killed holder's record names nobody.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

from protocol.entries import MessageInput
from sidecar.errors import BusyError, StoreIOError
from sidecar.ids import new_id, now_iso
from sidecar.runs.journal import RunStore
from sidecar.store.lock import FileLock, holder_record, read_holder
from sidecar.store.root import Store
from sidecar.store.session_state import WRITER_LOCK

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.anyio


def msg(t: str) -> MessageInput:
    return MessageInput.model_validate(
        {"kind": "message", "role": "user", "content": [{"type": "text", "text": t}]}
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "store")
    yield s
    s.close()


async def _session(store: Store) -> str:
    created = await store.sessions.create(
        title="t", workspace_roots=["/w"], profile_id=None, meta=None
    )
    return created.session_id


def _texts(store: Store, sid: str) -> list[str]:
    page = store.sessions.read(sid, after_seq=None, before_seq=None, limit=100)
    return [e["content"][0]["text"] for e in page.entries]


# --- 1. the head moves only once the entries are durable -------------------------------------


@pytest.mark.parametrize("fails", ["write", "fsync"])
async def test_a_failed_append_leaves_the_head_and_the_next_seq(
    store: Store, monkeypatch: pytest.MonkeyPatch, fails: str
) -> None:
    sid = await _session(store)
    await store.sessions.append(sid, [msg("one")])

    def broken(*args: Any) -> Any:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(os, fails, broken)  # what jsonl calls
        with pytest.raises(StoreIOError):
            await store.sessions.append(sid, [msg("lost"), msg("lost too")])
    assert store.sessions.get(sid).head_seq == 1
    assert _texts(store, sid) == ["one"]
    refs, head = await store.sessions.append(sid, [msg("two")])
    assert (refs[0]["seq"], head) == (2, 2)
    assert _texts(store, sid) == ["one", "two"]
    reopened = Store(store.root)
    try:
        assert _texts(reopened, sid) == ["one", "two"]
    finally:
        reopened.close()


# --- 2. the lock file's record is replaced whole ----------------------------------------------


def test_a_shorter_holder_record_replaces_a_longer_one_whole(tmp_path: Path) -> None:
    path = tmp_path / WRITER_LOCK
    longer = holder_record("serve", now_iso()) | {"pid": 1234567890, "face": "serve" * 20}
    path.write_text(json.dumps(longer) + "\n")  # left by a holder that was killed
    mine = holder_record("acp", now_iso())
    lock = FileLock(path)
    assert lock.try_acquire(mine)
    try:
        assert path.read_bytes() == json.dumps(mine, separators=(",", ":")).encode() + b"\n"
        assert read_holder(path) == mine
    finally:
        lock.release()
    assert path.read_bytes() == b"" and read_holder(path) is None


def test_the_lock_is_refused_while_held_and_names_the_holder(tmp_path: Path) -> None:
    path = tmp_path / WRITER_LOCK
    first, second = FileLock(path), FileLock(path)  # two descriptions: as two processes
    assert first.try_acquire(holder_record("serve", "2026-01-01T00:00:00Z"))
    assert not second.try_acquire(holder_record("acp", now_iso()))
    holder = second.read()
    assert holder is not None
    assert (holder["pid"], holder["face"], holder["since"]) == (
        os.getpid(),
        "serve",
        "2026-01-01T00:00:00Z",
    )
    first.release()
    assert second.try_acquire(holder_record("acp", now_iso()))
    second.release()


def test_a_refusal_between_the_holders_lock_and_its_record_still_names_the_holder(
    tmp_path: Path,
) -> None:
    """The holder takes the lock, then writes its record: a process refused in between read
    an empty file and said "another process" (``tests/e2e/test_shared_store.py``, two
    processes appending to one free session at once, about one run in twelve).  The refused
    side reads again for a moment.  Mutation tried: ``refused_by`` reading once — red."""
    import fcntl
    import threading

    path = tmp_path / WRITER_LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # the holder, its record not written yet
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    record = holder_record("acp", "2026-01-01T00:00:00Z")
    late = threading.Timer(0.02, lambda: os.pwrite(fd, json.dumps(record).encode(), 0))
    try:
        refused = FileLock(path)
        assert not refused.try_acquire(holder_record("serve", now_iso()))
        late.start()
        assert refused.refused_by() == record
    finally:
        late.join()
        os.close(fd)


def test_a_killed_holder_frees_the_lock_and_its_record_names_nobody(tmp_path: Path) -> None:
    """A child process takes the lock, writes its record and is killed with SIGKILL."""
    path = tmp_path / WRITER_LOCK
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from sidecar.store.lock import FileLock, holder_record\n"
        "assert FileLock(Path(sys.argv[1])).try_acquire(holder_record('serve', 'x'))\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, env=os.environ.copy()
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"held\n"
        lock = FileLock(path)
        assert not lock.try_acquire(holder_record("acp", now_iso()))
        holder = lock.read()
        assert holder is not None and holder["pid"] == child.pid
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    assert json.loads(path.read_bytes())["pid"] == child.pid  # the record is still there...
    assert read_holder(path) is None  # ...but names a process that is gone
    assert lock.try_acquire(holder_record("acp", now_iso()))
    lock.release()


# --- 3. a sub-agent's status is not its run's -------------------------------------------------


def test_an_unfinished_run_takes_its_own_status_not_a_sub_agents(tmp_path: Path) -> None:
    runs = RunStore(tmp_path / "runs")
    now = now_iso()
    journal = runs.create(
        {
            "runId": new_id("run"),
            "sessionId": new_id("ses"),
            "inputId": "0" * 40,
            "status": "created",
            "rounds": 0,
            "headSeq": 0,
            "createdAt": now,
            "updatedAt": now,
            "usage": {},
        }
    )
    journal.append("run.statusChanged", {"status": "awaitingTool"})
    journal.append("run.statusChanged", {"status": "callingModel", "agent": "helper"})
    journal.close()  # killed: run.json still says "created"

    other = RunStore(tmp_path / "runs")  # another process, reading
    (listed,) = other.list_runs(None, 10)
    assert listed["status"] == "awaitingTool"
    assert other.get(journal.run_id).record["status"] == "awaitingTool"


# --- holds and readers -------------------------------------------------------------------------


async def test_a_reader_sees_every_acknowledged_entry_of_another_holder(tmp_path: Path) -> None:
    holder, reader = Store(tmp_path / "s"), Store(tmp_path / "s", face="acp")
    try:
        sid = await _session(holder)
        for i in range(5):
            await holder.sessions.append(sid, [msg(f"e{i}")])
            # read (and cached) in between: each read sees the appends before it
            assert _texts(reader, sid) == [f"e{k}" for k in range(i + 1)]
            view = reader.sessions.history(sid, "t", lambda recs: [1] * len(recs))
            assert view.head == i + 1
            view.close()
        with pytest.raises(BusyError) as info:
            await reader.sessions.append(sid, [msg("no")])
        assert info.value.code == "session.held"
    finally:
        reader.close()
        holder.close()


async def test_taking_a_session_over_loads_it_fresh_and_repairs_a_torn_tail(
    tmp_path: Path,
) -> None:
    """The first holder's last write was cut (a kill mid-write); the next holder continues at
    the next seq, after the acknowledged entries, the torn bytes cut off."""
    first, second = Store(tmp_path / "s"), Store(tmp_path / "s", face="acp")
    try:
        sid = await _session(first)
        await first.sessions.append(sid, [msg("a"), msg("b")])
        assert _texts(second, sid) == ["a", "b"]  # loaded read-only in the second
        history = tmp_path / "s" / "sessions" / sid / "history.jsonl"
        history.write_bytes(history.read_bytes() + b'{"seq":3,"kind":"mess')  # torn
        first.close()  # gone (the kernel frees its lock as on kill -9)
        refs, head = await second.sessions.append(sid, [msg("c")])
        assert (refs[0]["seq"], head) == (3, 3)
        assert _texts(second, sid) == ["a", "b", "c"]
    finally:
        second.close()
        first.close()


async def test_gc_runs_one_at_a_time_and_never_holds_a_session(store: Store) -> None:
    from sidecar.store.gc import collect

    sid = await _session(store)
    other = Store(store.root, face="acp")
    try:
        held = FileLock(store.gc_lock.path)
        assert held.try_acquire(holder_record("acp", now_iso()))
        with pytest.raises(BusyError) as info:
            collect(store, keep_recent=1, grace_seconds=0, dry_run=False)
        assert info.value.code == "store.locked"
        assert collect(store, keep_recent=1, grace_seconds=0, dry_run=True).dry_run
        # appends go on while a gc holds its lock, in any process
        await store.sessions.append(sid, [msg("during gc")])
        held.release()
        result = collect(other, keep_recent=1, grace_seconds=0, dry_run=False)
        assert not result.dry_run
        assert store.sessions.holds(sid) and not other.sessions.holds(sid)
    finally:
        other.close()


async def test_sessions_dropped_as_idle_are_given_back_read_ones_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process keeps at most ``max_loaded`` sessions loaded; a held one dropped as idle is
    given back (its descriptors too), and sessions only read are dropped before held ones."""
    from sidecar.defaults import MAX_LOADED_SESSIONS_ENV

    monkeypatch.setenv(MAX_LOADED_SESSIONS_ENV, "2")
    first, second = Store(tmp_path / "s"), Store(tmp_path / "s", face="acp")
    try:
        theirs = [await _session(second) for _ in range(3)]
        mine = [await _session(first) for _ in range(2)]
        for sid in theirs:  # read here: loaded, then dropped before the held ones
            assert _texts(first, sid) == []
        assert all(first.sessions.holds(sid) for sid in mine)
        third = await _session(first)  # the oldest held one goes now
        assert not first.sessions.holds(mine[0])
        assert first.sessions.holds(mine[1]) and first.sessions.holds(third)
        await second.sessions.append(mine[0], [msg("taken")])  # free: another takes it
        with pytest.raises(BusyError):
            await first.sessions.append(mine[0], [msg("no")])
        await first.sessions.append(mine[1], [msg("still mine")])
    finally:
        second.close()
        first.close()
