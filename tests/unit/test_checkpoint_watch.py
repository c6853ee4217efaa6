"""Checkpoints of a watched root (``sidecar.checkpoints.watch``): the inotify watcher of a
long-running process says which directories changed since the last capture, and the rest is
reused from memory without a syscall.  Each test changes the tree (most from another
process), captures at once through the real service, and compares the tree with a fresh
full walk (a new stat cache, no watcher: the walk ``test_checkpoints`` holds to
``git write-tree``), and with ``git write-tree`` itself where the rules matter."""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.checkpoints import CheckpointStats
from sidecar.checkpoints import capture as capture_mod
from sidecar.checkpoints import checkpoints_of
from sidecar.checkpoints import watch as watch_mod
from sidecar.checkpoints.capture import RootCapture, StatCache, TooManyFiles, capture_root
from sidecar.checkpoints.ignore import global_excludes
from sidecar.checkpoints.service import Checkpoints, Settings
from sidecar.checkpoints.trees import flatten
from sidecar.store import Store

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify: Linux only")

OLD = time.time() - 3600


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


@pytest.fixture
def store(tmp_path: Path, home: Path) -> Iterator[Store]:
    opened = Store(tmp_path / "store")
    try:
        yield opened
    finally:
        opened.close()


def _settle(root: Path) -> None:
    """Every file and directory older than the racy window (so the capture memoises them)."""
    for path in [root, *root.rglob("*")]:
        if ".git" not in path.relative_to(root).parts:
            os.utime(path, (OLD, OLD), follow_symlinks=False)
    time.sleep(2 * capture_mod.RACY_NS / 1e9)


def _workspace(root: Path) -> None:
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "b" / "c" / "deep.txt").write_text("deep\n")
    (root / "a" / "b" / "mid.txt").write_text("mid\n")
    (root / "a" / "top.txt").write_text("top\n")
    (root / "x" / "y").mkdir(parents=True)
    (root / "x" / "y" / "run.sh").write_text("#!/bin/sh\n")
    (root / "x" / "target1").write_text("one\n")
    (root / "x" / "target2").write_text("two\n")
    (root / "x" / "link").symlink_to("target1")
    (root / "gone" / "inner").mkdir(parents=True)
    (root / "gone" / "inner" / "g.txt").write_text("g\n")
    (root / "a" / "b" / "c" / "keep.log").write_text("a log\n")
    (root / "build").mkdir()
    (root / "build" / "out.o").write_bytes(b"\0" * 10)
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    (root / "notes.md").write_text("notes\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)


def _sh(script: str, cwd: Path) -> None:
    """A change made by another process, the instant before the capture."""
    subprocess.run(["sh", "-c", script], cwd=cwd, check=True)


class _Session:
    """One root captured by a store's service, as a long-running sidecar does."""

    def __init__(self, root: Path, store: Store) -> None:
        self.root = root
        self.store = store
        self.service: Checkpoints = checkpoints_of(store)

    def capture(self) -> RootCapture:
        (captured,) = self.service.capture([str(self.root)], Settings(), write=True)
        return captured

    def fresh(self) -> str:
        """The tree of a full walk with nothing remembered and no watcher."""
        return capture_root(
            self.root,
            blobs=self.store.blobs,
            cache=StatCache(),
            write=False,
            max_file_bytes=10 << 20,
            global_excludes=global_excludes(),
        ).tree

    def watcher(self) -> watch_mod.Watcher:
        watcher = self.service._watchers[str(self.root)]
        assert watcher is not None
        return watcher

    def paths(self, captured: RootCapture) -> dict[str, str]:
        read = captured.trees.__getitem__  # every tree of the capture is in it
        return {path: mode for path, mode, _ in flatten(read, captured.tree)}


@pytest.fixture
def ws(tmp_path: Path, store: Store) -> _Session:
    """A workspace captured twice: the first a full walk (watches added), the second from
    the watcher alone."""
    root = tmp_path / "ws"
    _workspace(root)
    _settle(root)
    session = _Session(root, store)
    first = session.capture()
    assert first.walked == "stat"
    again = session.capture()
    assert again.walked == "watcher" and again.tree == first.tree == session.fresh()
    return session


def _git_tree(root: Path, tmp_path: Path) -> str:
    copy = tmp_path / "git-copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root, copy, symlinks=True)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "add", "-A"], cwd=copy, check=True, env=env)
    return subprocess.run(
        ["git", "write-tree"], cwd=copy, check=True, env=env, capture_output=True, text=True
    ).stdout.strip()


def test_an_unchanged_tree_is_captured_without_a_syscall_per_file(
    ws: _Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    real_stat, real_open = os.stat, os.open

    def stat_spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return real_stat(*args, **kwargs)

    def open_spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return real_open(*args, **kwargs)

    monkeypatch.setattr(os, "stat", stat_spy)
    monkeypatch.setattr(os, "open", open_spy)
    before = ws.capture()
    monkeypatch.undo()
    assert before.walked == "watcher" and before.files == 10
    # the root's .gitignore, the root opened; nothing below it
    assert [c for c in calls if not str(c).startswith(("/", ".gitignore"))] == []


def test_a_file_written_by_another_process_just_before_the_capture(ws: _Session) -> None:
    first = ws.capture()
    _sh("printf 'DEEP\\n' > a/b/c/deep.txt", ws.root)  # same size, a deep directory
    changed = ws.capture()
    assert changed.walked == "watcher"
    assert changed.tree != first.tree and changed.tree == ws.fresh()
    _sh("printf 'top, longer\\n' >> a/top.txt", ws.root)
    assert ws.capture().tree == ws.fresh()


def test_a_new_directory_with_files(ws: _Session) -> None:
    _sh("mkdir -p a/new/sub && echo 1 > a/new/one.txt && echo 2 > a/new/sub/two.txt", ws.root)
    captured = ws.capture()
    assert {"a/new/one.txt", "a/new/sub/two.txt"} <= set(ws.paths(captured))
    assert captured.tree == ws.fresh()
    _sh("echo 3 > a/new/sub/three.txt", ws.root)  # watched since it was first walked
    assert "a/new/sub/three.txt" in ws.paths(ws.capture())
    assert ws.capture().tree == ws.fresh()


def test_a_directory_renamed_and_one_deleted(ws: _Session, tmp_path: Path) -> None:
    _sh("mv a/b a/renamed && rm -r gone", ws.root)
    captured = ws.capture()
    paths = ws.paths(captured)
    assert "a/renamed/c/deep.txt" in paths and not any(p.startswith("gone/") for p in paths)
    assert captured.tree == ws.fresh()
    # the old name made again: it is a new directory, its watch a new one
    _sh("mkdir -p a/b/c && echo again > a/b/c/deep.txt", ws.root)
    _settle(ws.root)
    assert ws.capture().tree == ws.fresh()
    ws.capture()
    _sh("echo changed > a/b/c/deep.txt && echo moved > a/renamed/c/deep.txt", ws.root)
    captured = ws.capture()
    assert captured.tree == ws.fresh() == _git_tree(ws.root, tmp_path)


def test_a_directory_moved_out_of_the_root_and_its_name_made_again(
    ws: _Session, tmp_path: Path
) -> None:
    """The watch of a directory moved away follows it out of the root: the name made again
    is a new directory, which must get a watch of its own (the moved one's says nothing of
    it)."""
    _sh(f"mv x/y {tmp_path}/outside", ws.root)
    assert ws.capture().tree == ws.fresh()
    _sh("mkdir x/y && echo 'new y' > x/y/run.sh", ws.root)
    _settle(ws.root)
    ws.capture()
    assert ws.capture().walked == "watcher"
    _sh("echo 'y changed' > x/y/run.sh", ws.root)
    captured = ws.capture()
    assert captured.tree == ws.fresh() == _git_tree(ws.root, tmp_path)


def test_a_directory_whose_watch_could_not_be_added_is_checked_each_time(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = watch_mod._libc()
    assert found is not None
    libc = found
    root = tmp_path / "ws"
    refused: list[str] = []

    class Refusing:
        init1 = libc.init1

        @staticmethod
        def add(fd: int, path: bytes, mask: int) -> int:
            if os.fsdecode(os.readlink(path)) == str(root / "a" / "b"):  # say, no permission
                refused.append("a/b")
                ctypes.set_errno(errno.EACCES)
                return -1
            return int(libc.add(fd, path, mask))

    monkeypatch.setattr(watch_mod, "_LIBC", Refusing())
    _workspace(root)
    _settle(root)
    session = _Session(root, store)
    session.capture()
    assert session.capture().walked == "watcher"
    _sh("printf 'MID\\n' > a/b/mid.txt", root)  # unwatched: no event
    changed = session.capture()
    assert changed.walked == "watcher" and changed.tree == session.fresh()
    assert session.service.watchers()[str(root)] == "on" and refused


def test_chmod_and_a_symlink_retargeted(ws: _Session) -> None:
    _sh("chmod +x x/y/run.sh", ws.root)
    captured = ws.capture()
    assert ws.paths(captured)["x/y/run.sh"] == "100755"
    assert captured.tree == ws.fresh()
    _sh("ln -sfn target2 x/link", ws.root)
    retargeted = ws.capture()
    assert retargeted.tree != captured.tree and retargeted.tree == ws.fresh()


def test_a_gitignore_edited_to_unignore_a_deep_file(ws: _Session, tmp_path: Path) -> None:
    assert "a/b/c/keep.log" not in ws.paths(ws.capture())
    _sh("printf '*.log\\n!keep.log\\n' > .gitignore", ws.root)  # the root's, not a/b/c's
    captured = ws.capture()
    assert "a/b/c/keep.log" in ws.paths(captured)
    assert captured.tree == ws.fresh() == _git_tree(ws.root, tmp_path)
    _sh("printf '*.log\\n' > .gitignore && echo '*.md' > a/.gitignore", ws.root)
    again = ws.capture()
    assert "a/b/c/keep.log" not in ws.paths(again) and again.tree == ws.fresh()


def test_the_repository_exclude_file_edited(ws: _Session, tmp_path: Path) -> None:
    """``.git`` is never watched: ``info/exclude`` is read at each capture."""
    _sh("echo 'deep.txt' >> .git/info/exclude", ws.root)
    captured = ws.capture()
    assert "a/b/c/deep.txt" not in ws.paths(captured)
    assert captured.tree == ws.fresh() == _git_tree(ws.root, tmp_path)


def test_an_overflowed_queue_makes_a_full_walk(ws: _Session) -> None:
    """More events than the kernel queues (``fs.inotify.max_queued_events``), then one more
    change: its event is dropped, the queue says it overflowed, the capture walks it all."""
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 200_000:
        pytest.skip("a queue this long takes too long to fill")
    fill = f"""
import os
a = os.open("a/top.txt", os.O_WRONLY)
b = os.open("notes.md", os.O_WRONLY)
for _ in range({limit}):  # two files in turn: the kernel merges only repeated events
    os.pwrite(a, b"t", 0)
    os.pwrite(b, b"n", 0)
with open("x/y/run.sh", "w") as fh:
    fh.write("#!/bin/sh\\nexit 1\\n")
"""
    full_walks = ws.watcher().full_walks
    subprocess.run([sys.executable, "-c", fill], cwd=ws.root, check=True)
    captured = ws.capture()
    assert captured.walked == "stat" and ws.watcher().full_walks == full_walks + 1
    assert captured.tree == ws.fresh()
    assert ws.capture().walked == "watcher"  # watches rebuilt


def test_a_capture_that_did_not_finish_is_followed_by_a_full_walk(ws: _Session) -> None:
    """The events a capture drained are gone from the queue: when it stops early (too many
    files) the next capture cannot take them from the watcher."""
    _sh("printf 'DEEP\\n' > a/b/c/deep.txt", ws.root)
    with pytest.raises(TooManyFiles):
        ws.service.capture([str(ws.root)], Settings(max_files=3), write=True)
    captured = ws.capture()
    assert captured.walked == "stat" and captured.tree == ws.fresh()


def test_the_watch_limit_falls_back_to_the_stat_walk(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    found = watch_mod._libc()
    assert found is not None
    libc = found
    added: list[bytes] = []

    class Limited:
        init1 = libc.init1

        @staticmethod
        def add(fd: int, path: bytes, mask: int) -> int:
            if len(added) == 3:  # the fourth watch: fs.inotify.max_user_watches reached
                ctypes.set_errno(errno.ENOSPC)
                return -1
            added.append(path)
            return int(libc.add(fd, path, mask))

    monkeypatch.setattr(watch_mod, "_LIBC", Limited())
    root = tmp_path / "ws"
    _workspace(root)
    _settle(root)
    session = _Session(root, store)
    first = session.capture()
    assert first.walked == "off" and first.tree == session.fresh()
    assert "watch limit" in caplog.text
    assert session.service.watchers()[str(root)].startswith("off: ")
    stats = CheckpointStats.model_validate(session.service.stats())  # store/stats says so
    assert "watch limit" in stats.watchers[str(root)]
    _sh("printf 'DEEP\\n' > a/b/c/deep.txt && chmod +x notes.md", root)
    changed = session.capture()
    assert changed.walked == "off" and changed.tree != first.tree
    assert changed.tree == session.fresh()


def test_remote_file_systems_get_no_watcher(tmp_path: Path) -> None:
    table = tmp_path / "mountinfo"
    table.write_text(
        "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
        "40 27 0:50 / /mnt/nfs rw,relatime shared:1 - nfs4 srv:/export rw\n"
        "41 27 0:51 / /home/me/my\\040sshfs rw - fuse.sshfs me@host:/ rw\n"
        "42 27 0:52 / /srv/ws/mounted rw - cifs //host/share rw\n"
    )
    assert watch_mod.remote_file_system("/srv/other", str(table)) is None
    assert watch_mod.remote_file_system("/mnt/nfs/project", str(table)) == "nfs4"
    assert watch_mod.remote_file_system("/home/me/my sshfs/p", str(table)) == "fuse.sshfs"
    assert watch_mod.remote_file_system("/srv/ws", str(table)) == "cifs"  # one mounted below
    assert watch_mod.remote_file_system("/x", str(tmp_path / "missing")) == "unknown"


def test_closing_the_store_closes_the_watchers(tmp_path: Path, home: Path) -> None:
    root = tmp_path / "ws"
    _workspace(root)
    store = Store(tmp_path / "store")
    session = _Session(root, store)
    session.capture()
    fd = session.watcher()._fd
    assert os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
    store.close()
    assert not os.path.exists(f"/proc/self/fd/{fd}") or (
        os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify"
    )
    assert session.service.watchers() == {}
