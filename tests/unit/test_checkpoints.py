"""Checkpoints of a workspace (``sidecar.checkpoints``) on a real store on disk: capture as
git sees the tree, the stat cache, what is not captured or not read, diff, restore with its
conflicts, retention and what gc keeps.  ``git`` runs here only to say what git itself would
write for the same tree (on a copy the product never sees)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from sidecar.checkpoints import capture as capture_mod
from sidecar.checkpoints import checkpoints_of, diff, restore
from sidecar.checkpoints.capture import StatCache, capture_root
from sidecar.checkpoints.trees import flatten
from sidecar.store import Store
from sidecar.store.blobs import git_blob_id
from sidecar.store.gc import collect

pytestmark = pytest.mark.anyio

OLD = time.time() - 3600


def _git_env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def _tree(root: Path, home: Path) -> None:
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print('a')\n")
    (root / "src" / "deep" / "b.txt").write_bytes(b"bytes\x00and more")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "link").symlink_to("src/a.py")
    (root / ".gitignore").write_text("node_modules/\n*.log\n!keep.log\n")
    (root / "src" / ".gitignore").write_text("*.tmp\n")
    (root / "src" / "x.tmp").write_text("ignored by src/.gitignore\n")
    (root / "a.log").write_text("ignored\n")
    (root / "keep.log").write_text("re-included\n")
    (root / "secret.key").write_text("ignored by info/exclude\n")
    (root / "global.bak").write_text("ignored by the global excludes\n")
    (root / "node_modules" / "p").mkdir(parents=True)
    (root / "node_modules" / "p" / "i.js").write_text("x\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=_git_env(home))
    (root / ".git" / "info" / "exclude").write_text("*.key\n")
    (home / ".config" / "git").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "git" / "ignore").write_text("*.bak\n")
    for path in root.rglob("*"):
        if ".git" not in path.parts:
            os.utime(path, (OLD, OLD), follow_symlinks=False)
    time.sleep(2 * capture_mod.RACY_NS / 1e9)  # the ctimes set just now are no longer racy


def _capture(root: Path, store: Store, cache: StatCache | None = None, **kw: Any) -> Any:
    return capture_root(
        root,
        blobs=store.blobs,
        cache=cache if cache is not None else StatCache(),
        write=kw.pop("write", True),
        max_file_bytes=kw.pop("max_file_bytes", 1 << 20),
        global_excludes=kw.pop("global_excludes", None),
        max_files=kw.pop("max_files", 1000),
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path / "store")
    try:
        yield opened
    finally:
        opened.close()  # no descriptor left for the tests after this one


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


def test_a_capture_is_the_tree_git_writes(tmp_path: Path, home: Path, store: Store) -> None:
    root = tmp_path / "ws"
    _tree(root, home)
    git_before = {p: p.read_bytes() for p in (root / ".git").rglob("*") if p.is_file()}
    captured = _capture(root, store, global_excludes=home / ".config" / "git" / "ignore")
    assert {p: p.read_bytes() for p in (root / ".git").rglob("*") if p.is_file()} == git_before
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)
    env = _git_env(home)
    subprocess.run(["git", "add", "-A"], cwd=copy, check=True, env=env)
    written = subprocess.run(
        ["git", "write-tree"], cwd=copy, check=True, env=env, capture_output=True, text=True
    ).stdout.strip()
    assert captured.tree == written
    assert captured.files == 7  # a.py, b.txt, run.sh, link, two .gitignore, keep.log
    # every object is in the store, readable by git itself
    listing = subprocess.run(
        ["git", "--git-dir", str(store.blobs.root), "ls-tree", "-r", captured.tree],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "100755 blob" in listing and "120000 blob" in listing
    assert not store.blobs.has(git_blob_id(b"x\n"))  # node_modules/p/i.js


def test_ignored_directories_are_never_entered(
    tmp_path: Path, home: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    _tree(root, home)
    opened: list[str] = []
    real = os.open

    def spy(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        opened.append(str(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    _capture(root, store)
    monkeypatch.undo()
    assert "src" in opened and "deep" in opened
    entered = [p for p in opened if p not in (".gitignore", str(root / ".git/info/exclude"))]
    assert not [p for p in entered if "node_modules" in p or ".git" in p or p in ("p", "i.js")]


def test_the_stat_cache_reads_only_what_changed(
    tmp_path: Path, home: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    _tree(root, home)
    reads: list[str] = []
    real = capture_mod._read

    def counted(dir_fd: int, name: str, inode: int) -> bytes | None:
        reads.append(name)
        return real(dir_fd, name, inode)

    monkeypatch.setattr(capture_mod, "_read", counted)
    cache = StatCache()
    first = _capture(root, store, cache)
    assert len(reads) == 7  # every regular file once (global.bak too: no global excludes)
    reads.clear()
    again = _capture(root, store, cache)
    assert reads == [] and again.tree == first.tree
    (root / "src" / "a.py").write_text("print('b')\n")
    os.utime(root / "src" / "a.py", (OLD + 5, OLD + 5))
    reads.clear()
    changed = _capture(root, store, cache)
    assert reads == ["a.py"] and changed.tree != first.tree
    # a file written just now is hashed again next time (racily clean)
    (root / "src" / "a.py").write_text("print('c')\n")
    _capture(root, store, cache)
    reads.clear()
    _capture(root, store, cache)
    assert reads == ["a.py"]


def test_a_file_over_the_bound_is_listed_not_captured(
    tmp_path: Path, home: Path, store: Store
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "small.txt").write_text("small\n")
    (root / "huge.bin").write_bytes(b"h" * 5000)
    captured = _capture(root, store, max_file_bytes=4096)
    assert captured.files == 1
    assert captured.not_captured == [{"path": "huge.bin", "size": 5000, "mode": "100644"}]
    assert not store.blobs.has(git_blob_id(b"h" * 5000))


async def _session(store: Store, root: Path, **settings: Any) -> str:
    meta = {"checkpoints": settings} if settings else None
    session = await store.sessions.create(
        title="t", workspace_roots=[str(root)], profile_id=None, meta=meta
    )
    return session.session_id


def _changes(service: Any, sid: str, record: dict[str, Any]) -> list[diff.Change]:
    roots, settings, _ = service.session(sid)
    now = service.capture(roots, settings, write=False)
    extra = {k: v for c in now for k, v in c.trees.items()}
    return diff.changes(record, now, service.tree_reader(), service.tree_reader(extra))


async def test_diff_says_what_changed_and_bounds_the_text(
    tmp_path: Path, home: Path, store: Store
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\n")
    (root / "gone.txt").write_text("bye\n")
    (root / "bin.dat").write_bytes(b"\x00\x01")
    sid = await _session(store, root)
    service = checkpoints_of(store)
    record = service.take(sid, reason="edit")
    assert record is not None
    (root / "a.txt").write_text("one\nTWO\n")
    (root / "gone.txt").unlink()
    (root / "new" / "n.txt").parent.mkdir()
    (root / "new" / "n.txt").write_text("hi\n")
    (root / "bin.dat").write_bytes(b"\x00\x02")
    found = _changes(service, sid, record)
    assert {c.path: c.kind for c in found} == {
        "a.txt": "modified",
        "gone.txt": "deleted",
        "new/n.txt": "added",
        "bin.dat": "modified",
    }
    files, truncated = diff.file_changes(found, store.blobs, 1 << 20)
    by_path = {f["path"]: f for f in files}
    assert not truncated
    assert "-two\n+TWO\n" in by_path["a.txt"]["diff"]
    assert by_path["bin.dat"]["binary"] and by_path["bin.dat"]["diff"] is None
    assert by_path["gone.txt"]["after"] is None and by_path["gone.txt"]["before"]
    files, truncated = diff.file_changes(found, store.blobs, 40)
    assert truncated and sum(len(f["diff"] or "") for f in files) <= 40


async def test_restore_puts_files_back_and_refuses_outside_edits(
    tmp_path: Path, home: Path, store: Store
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("agent's\n")
    (root / "x.sh").write_text("#!/bin/sh\n")
    (root / "x.sh").chmod(0o755)
    sid = await _session(store, root)
    service = checkpoints_of(store)
    record = service.take(sid, reason="edit")
    assert record is not None
    (root / "a.txt").write_text("changed by the agent\n")
    (root / "x.sh").chmod(0o644)
    (root / "made").mkdir()
    (root / "made" / "m.txt").write_text("made\n")
    service.record_after(sid, run_id="run_1", call_id="c1")
    (root / "later.txt").write_text("made by hand, after the agent\n")
    refused = restore.restore_files(service, sid, record, force=False)
    assert refused == {
        "status": "conflicts",
        "conflicts": [{"path": "later.txt", "reason": refused["conflicts"][0]["reason"]}],
    }
    assert (root / "later.txt").exists() and len(service.records(sid)) == 1
    (root / "later.txt").unlink()
    done = restore.restore_files(service, sid, record, force=False)
    assert done["status"] == "restored"
    assert (root / "a.txt").read_text() == "agent's\n"
    assert (root / "x.sh").stat().st_mode & 0o111
    assert not (root / "made").exists()
    journal = [r["type"] for r in service.journal(sid).read()]
    assert journal[-6:] == ["checkpoint", "restore", *["restored"] * 3, "restoreEnd"]


async def test_retention_keeps_the_newest_and_drops_the_old(
    tmp_path: Path, home: Path, store: Store
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    sid = await _session(store, root, keep=3, maxAgeDays=30)
    service = checkpoints_of(store)
    taken = []
    for i in range(14):
        (root / "f.txt").write_text(f"version {i}\n")
        record = service.take(sid, reason="edit")
        assert record is not None
        taken.append(record["checkpointId"])
    kept = [r["checkpointId"] for r in service.records(sid)]
    # rewritten once the bound was passed by the slack (10): the newest 3 then, and since
    assert kept == taken[10:]
    # one older than maxAgeDays goes at the next checkpoint, whatever the count
    journal = service.journal(sid)
    records = journal.read()
    records[-1] = {**records[-1], "createdAt": "2020-01-01T00:00:00.000Z"}
    records.append({**records[-1], "createdAt": "2020-01-01T00:00:00.000Z", "checkpointId": "x"})
    journal.rewrite(records[1:])
    service.take(sid, reason="edit")
    assert all(not r["createdAt"].startswith("2020") for r in service.records(sid))


async def test_gc_keeps_what_checkpoints_reach_and_collects_the_rest(
    tmp_path: Path, home: Path, store: Store
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    sid = await _session(store, root, keep=1)
    service = checkpoints_of(store)
    (root / "f.txt").write_text("first\n")
    first = service.take(sid, reason="edit")
    assert first is not None
    for i in range(12):
        (root / "f.txt").write_text(f"later {i}\n")
        service.take(sid, reason="edit")
    epoch = service.epoch()
    result = collect(store, keep_recent=20, grace_seconds=0, dry_run=False, also_keep=service)
    assert result.collected > 0
    assert not store.blobs.has(git_blob_id(b"first\n"))  # only the dropped checkpoints had it
    newest = service.records(sid)[-1]
    assert store.blobs.has(newest["roots"][0]["tree"])
    assert store.blobs.has(git_blob_id(b"later 11\n"))
    assert service.epoch() == epoch + 1  # the stat caches made before are dropped
    stats = service.stats()
    assert stats["count"] == len(service.records(sid)) and stats["objects"] >= 2


async def test_gc_applies_every_sessions_retention_first(
    tmp_path: Path, home: Path, store: Store
) -> None:
    """A session nobody checkpoints any more keeps nothing its bound drops: ``store/gc``
    applies each session's retention in full (the age limit, and ``keep`` without the slack
    a checkpoint leaves) before it decides what is reachable; a dry run only counts."""
    root = tmp_path / "ws"
    root.mkdir()
    sid = await _session(store, root, keep=3, maxAgeDays=30)
    service = checkpoints_of(store)
    for i in range(6):
        (root / "f.txt").write_text(f"version {i}\n")
        service.take(sid, reason="edit")
    journal = service.journal(sid)
    records = journal.read()
    assert len(records) == 6  # past keep by less than the slack: left until the next one
    dry = collect(store, keep_recent=20, grace_seconds=0, dry_run=True, also_keep=service)
    assert dry.checkpoints_dropped == 3 and len(journal.read()) == 6
    result = collect(store, keep_recent=20, grace_seconds=0, dry_run=False, also_keep=service)
    assert result.checkpoints_dropped == 3 and journal.read() == records[3:]
    assert not store.blobs.has(git_blob_id(b"version 2\n"))  # only the dropped ones had it
    # one of the newest three too old: dropped by the next gc, whatever the count
    old = {**records[3], "createdAt": "2020-01-01T00:00:00.000Z"}
    journal.rewrite([old, *records[4:]])
    result = collect(store, keep_recent=20, grace_seconds=0, dry_run=False, also_keep=service)
    assert result.checkpoints_dropped == 1 and journal.read() == records[4:]
    assert not store.blobs.has(git_blob_id(b"version 3\n"))
    assert store.blobs.has(git_blob_id(b"version 5\n"))
    again = collect(store, keep_recent=20, grace_seconds=0, dry_run=False, also_keep=service)
    assert again.checkpoints_dropped == 0


def test_a_journal_is_not_written_while_another_process_holds_its_lock(tmp_path: Path) -> None:
    """Appends and rewrites take an ``flock`` on ``checkpoints.lock`` beside the journal: a
    retention in another process (``store/gc``) reads and rewrites it whole in between."""
    import sys
    import threading

    from sidecar.checkpoints.records import LOCK_FILE, Journal

    journal = Journal(tmp_path / "checkpoints.jsonl")
    script = (
        "import fcntl, sys\n"
        f"fd = open({str(tmp_path / LOCK_FILE)!r}, 'a')\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        appending = threading.Thread(
            target=journal.append, args=({"type": "checkpoint", "checkpointId": "a"},)
        )
        appending.start()
        appending.join(0.5)
        held_back = appending.is_alive() and journal.read() == []
        holder.stdin.write("\n")  # the other process lets go
        holder.stdin.flush()
        holder.wait(10)
    appending.join(10)
    assert held_back  # the append waited for the other process
    assert [r["checkpointId"] for r in journal.read()] == ["a"]


def test_the_journal_skips_a_torn_line(tmp_path: Path) -> None:
    from sidecar.checkpoints.records import Journal

    journal = Journal(tmp_path / "checkpoints.jsonl")
    journal.append({"type": "checkpoint", "checkpointId": "a"})
    with open(journal.path, "ab") as fh:
        fh.write(b'{"type": "checkpoint", "checkpo')  # a kill -9 mid-write
    journal.append({"type": "checkpoint", "checkpointId": "b"})
    assert [r["checkpointId"] for r in journal.read()] == ["a", "b"]
    assert json.loads(journal.path.read_bytes().splitlines()[-1])["checkpointId"] == "b"


async def test_a_root_past_max_files_gets_no_checkpoint(
    tmp_path: Path, home: Path, store: Store
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for i in range(5):
        (root / f"f{i}").write_text("x")
    with pytest.raises(capture_mod.TooManyFiles):
        _capture(root, store, max_files=4)
    sid = await _session(store, root, maxFiles=4)
    assert checkpoints_of(store).take(sid, reason="edit") is None
    sid = await _session(store, root, maxFiles=5)
    assert checkpoints_of(store).take(sid, reason="edit") is not None


async def test_a_look_without_storing_vouches_for_nothing(
    tmp_path: Path, home: Path, store: Store
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    sid = await _session(store, root)
    service = checkpoints_of(store)
    service.take(sid, reason="turn")
    (root / "new.txt").write_text("written after the checkpoint\n")
    await anyio.sleep(2 * capture_mod.RACY_NS / 1e9)  # not racy: a cache would vouch for it
    roots, settings, _ = service.session(sid)
    service.capture(roots, settings, write=False)  # checkpoint/list, checkpoint/diff
    record = service.take(sid, reason="edit")
    assert record is not None
    assert store.blobs.has(git_blob_id(b"written after the checkpoint\n"))


def _settle(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        os.utime(path, (OLD, OLD), follow_symlinks=False)
    time.sleep(2 * capture_mod.RACY_NS / 1e9)  # the ctimes set just now are no longer racy


def test_an_unchanged_directory_is_not_listed_again_but_its_files_are_still_checked(
    tmp_path: Path, store: Store
) -> None:
    """The per-directory memo reuses a listing while the directory's (mtime, ctime, inode)
    hold, never a file's content: a file rewritten with the same size and its mtime put back
    by ``os.utime`` has a new ctime, so the stat cache hashes it again (git's index does the
    same: its stat data holds the ctime); a name added to a directory whose mtime is put
    back changes the directory's ctime, so the directory is listed again."""
    root = tmp_path / "ws"
    (root / "d").mkdir(parents=True)
    (root / "d" / "a.txt").write_text("aaaa\n")
    _settle(root)
    cache = StatCache()
    first = _capture(root, store, cache)
    assert _capture(root, store, cache).tree == first.tree
    assert "d/" in cache.dirs  # remembered: the next capture does not list it again

    a = root / "d" / "a.txt"
    before = a.stat()
    a.write_text("bbbb\n")  # same size
    os.utime(a, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (root / "d").stat().st_ctime_ns < time.time_ns() - capture_mod.RACY_NS
    time.sleep(2 * capture_mod.RACY_NS / 1e9)
    changed = _capture(root, store, cache)
    assert changed.tree != first.tree
    assert store.blobs.has(git_blob_id(b"bbbb\n"))

    (root / "d" / "new.txt").write_text("new\n")
    os.utime(root / "d", (OLD, OLD))  # the directory's mtime as it was
    time.sleep(2 * capture_mod.RACY_NS / 1e9)
    added = _capture(root, store, cache)
    paths = [p for p, _, _ in flatten(added.trees.__getitem__, added.tree)]
    assert paths == ["d/a.txt", "d/new.txt"]
    assert _capture(root, store, cache).tree == added.tree
    (root / "d" / "new.txt").unlink()
    assert _capture(root, store, cache).tree == changed.tree
    (root / "e").mkdir()  # changed just now: its listing could change again in the same tick
    (root / "e" / "b.txt").write_text("b\n")
    _capture(root, store, cache)
    assert "e/" not in cache.dirs and "" not in cache.dirs
