"""The ``checkpoints`` suite: a workspace checkpoint beside git, and what checkpoints cost the
store.

- A checkpoint of an unchanged 50,000-file tree (5,000 with ``--quick``; 500 directories of
  100 files, a ``.gitignore``d directory beside them) by a long-running sidecar:
  ``Checkpoints.take`` — the directories its inotify watcher saw change walked (none here),
  the rest from memory, the trees, the journal line fsynced — against ``git add -A && git
  write-tree`` on a copy of the same tree whose index is as warm as our stat cache, run
  alternately in the same run (issue 44: <= 1x git's time).
- The same by a new process: a new ``Checkpoints`` service (the stat cache read from the
  store, no watcher yet: every file ``lstat``-ed), beside the same git.
- One file changed before each checkpoint (the same change made in git's copy): ours with
  the watcher against git's ``add -A && write-tree`` of that change.
- Store growth over 100 checkpoints of that tree where one file (64 KiB of text) changes
  before each (random hex: text that compresses about 2x): the bytes the store gained — the
  objects and the journal — less the tree objects written, per checkpoint, as a multiple of
  the file's size (issue 44: <= 2x, plus the trees; the trees' bytes are in the notes).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
import zlib
from pathlib import Path

from bench.common import Options, Row, Target, paired_median_ms
from sidecar.checkpoints import Checkpoints, checkpoints_of
from sidecar.store import Store

__all__ = ["run"]

_GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}
_CHANGED = 64 * 1024


def _make_tree(root: Path, files: int) -> None:
    per_dir = 100
    for n in range(files):
        d = root / "src" / f"pkg{n // per_dir:04}"
        if n % per_dir == 0:
            d.mkdir(parents=True, exist_ok=True)
        (d / f"m{n:05}.py").write_text(f"def f{n}(x):\n    return x + {n}\n" * 8)
    (root / "build").mkdir()
    for n in range(200):
        (root / "build" / f"out{n}.o").write_bytes(b"\0" * 1000)
    (root / ".gitignore").write_text("build/\n")
    past = time.time() - 3600  # a workspace's files are mostly old ones
    for here, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(here, name), (past, past))


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=_GIT_ENV, check=True, capture_output=True)


def _size(path: Path) -> int:
    return sum(
        os.lstat(os.path.join(here, n)).st_size for here, _, names in os.walk(path) for n in names
    )


def run(options: Options) -> list[Row]:
    files = 5_000 if options.quick else 50_000
    with tempfile.TemporaryDirectory(prefix="bench-checkpoints-") as tmp:
        root = Path(tmp) / "ws"
        _make_tree(root, files)
        copy = Path(tmp) / "git-copy"
        shutil.copytree(root, copy)
        _git(copy, "init", "-q", ".")
        _git(copy, "add", "-A")  # the index warm, as our stat cache will be
        store = Store(Path(tmp) / "store")
        session = asyncio.run(
            store.sessions.create(
                title="bench", workspace_roots=[str(root)], profile_id=None, meta=None
            )
        )
        service = checkpoints_of(store)
        sid = session.session_id
        started = time.perf_counter()
        service.take(sid, reason="turn")  # the first one hashes and stores every file
        first_s = time.perf_counter() - started

        def ours() -> None:
            service.take(sid, reason="edit")

        def git() -> None:
            _git(copy, "add", "-A")
            _git(copy, "write-tree")

        ours_ms, git_ms = paired_median_ms(ours, git, options.runs)
        watcher = service.watchers().get(str(root), "none")
        rows = [
            _beside_git(
                f"checkpoint of an unchanged {files:,}-file tree (long-running sidecar, watcher)",
                ours_ms,
                git_ms,
                f"the watcher: {watcher}; the first checkpoint of the tree (every file "
                f"hashed, stored): {first_s:.1f} s",
                ratio_target=1.0,
            )
        ]

        def new_process() -> None:
            fresh = Checkpoints(store)  # what a new sidecar has: the store, nothing in memory
            try:
                fresh.take(sid, reason="edit")
            finally:
                fresh.close()

        ours_ms, git_ms = paired_median_ms(new_process, git, options.runs)
        rows.append(
            _beside_git(
                "unchanged tree, new process (stat cache from the store, no watcher yet)",
                ours_ms,
                git_ms,
                "every file lstat-ed, the stat cache read from the store, the trees "
                "checked against the store once",
            )
        )
        edits = iter(range(1 << 30))
        changed = Path("src") / "pkg0007" / "m00700.py"

        def ours_changed() -> None:
            (root / changed).write_text(f"x = {next(edits)}\n")
            service.take(sid, reason="edit")

        def git_changed() -> None:
            (copy / changed).write_text(f"x = {next(edits)}\n")
            _git(copy, "add", "-A")
            _git(copy, "write-tree")

        ours_ms, git_ms = paired_median_ms(ours_changed, git_changed, options.runs)
        rows.append(
            _beside_git(
                f"one file changed in the {files:,}-file tree (watcher)",
                ours_ms,
                git_ms,
                "the file rewritten just before each checkpoint (both sides): its "
                "directory walked, the file hashed and stored, the trees above it written",
                peer_name=f"{GIT} of the change",
            )
        )
        rows.append(_growth(store, service, sid, root))
        store.close()
    return rows


GIT = "git add -A && git write-tree"


def _beside_git(
    what: str,
    ours_ms: float,
    git_ms: float,
    notes: str,
    *,
    peer_name: str = GIT,
    ratio_target: float | None = None,
) -> Row:
    """A checkpoint's time beside git's, in the same run (well under a second either way)."""
    return Row(
        "checkpoints",
        what,
        ours_ms,
        "ms",
        peer_name=peer_name,
        peer=git_ms,
        target=Target(1000, "well under a second"),
        ratio_target=ratio_target,
        notes=notes,
    )


def _growth(store: Store, service: object, sid: str, root: Path) -> Row:
    from sidecar.checkpoints import Checkpoints

    assert isinstance(service, Checkpoints)
    changed = root / "src" / "pkg0003" / "notes.txt"
    before = _size(store.root)
    objects_before = set(_objects(store))
    count = 100
    for _ in range(count):
        changed.write_text(os.urandom(_CHANGED // 2).hex())  # text that compresses ~2x
        service.take(sid, reason="edit")
    grown = _size(store.root) - before
    new = set(_objects(store)) - objects_before
    base = store.blobs.root / "objects"
    trees = 0
    for oid in new:
        raw = (base / oid[:2] / oid[2:]).read_bytes()
        if zlib.decompressobj().decompress(raw, 8)[:4] == b"tree":
            trees += len(raw)
    size = changed.stat().st_size
    per = (grown - trees) / count
    return Row(
        "checkpoints",
        "store growth per checkpoint, one 64 KiB file changed each time (x the file's size)",
        per / size,
        "x",
        target=Target(2.0, "<= 2x the file, plus the trees"),
        notes=f"{per / 1024:.1f} KiB a checkpoint besides {trees / count / 1024:.1f} KiB of "
        f"trees; the file {size / 1024:.0f} KiB",
    )


def _objects(store: Store) -> list[str]:
    base = store.blobs.root / "objects"
    return [
        prefix + name
        for prefix in os.listdir(base)
        if len(prefix) == 2
        for name in os.listdir(base / prefix)
        if not name.startswith(".")
    ]
