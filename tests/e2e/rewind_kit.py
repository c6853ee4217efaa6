"""The repository the rewind tests work on, and how they look at it.

A real git repository with a committed history (two commits), a tracked file and an
executable tracked script, an untracked file, an ignored ``node_modules/`` holding a large
file (random bytes: no object in the store may hold them), and a symlink.  ``git`` runs
here only to build the fixture, never against it afterwards: the product never runs git.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

__all__ = ["BIG", "files_of", "git_dir_hash", "make_repo", "store_has_object"]

BIG = 3 * 1024 * 1024


def _git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def make_repo(repo: Path) -> bytes:
    """Build the fixture; the large ignored file's bytes."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main", ".")
    (repo / "tracked.txt").write_text("line 1\nline 2\nline 3\n")
    (repo / ".gitignore").write_text("node_modules/\n*.log\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "first")
    (repo / "tools").mkdir()
    (repo / "tools" / "build.sh").write_text("#!/bin/sh\necho build\n")
    (repo / "tools" / "build.sh").chmod(0o755)
    (repo / "tracked.txt").write_text("line 1\nline 2\nline 3\nline 4\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "second")
    (repo / "untracked.txt").write_text("notes nobody committed\n")
    (repo / "link-to-tracked").symlink_to("tracked.txt")
    (repo / "debug.log").write_text("ignored\n")
    big = os.urandom(BIG)
    (repo / "node_modules" / "pkg").mkdir(parents=True)
    (repo / "node_modules" / "pkg" / "big.bin").write_bytes(big)
    (repo / "node_modules" / "pkg" / "index.js").write_text("module.exports = 1;\n")
    return big


def files_of(root: Path) -> dict[str, tuple[str, bytes, int]]:
    """Every file outside ``.git`` and ``node_modules``: path -> (kind, bytes, permissions)."""
    out: dict[str, tuple[str, bytes, int]] = {}
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "node_modules"))
        for name in names:
            path = Path(here, name)
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path).encode(), 0)
            else:
                out[rel] = ("file", path.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def git_dir_hash(repo: Path) -> str:
    """A hash of everything under ``.git``: names, kinds, permissions, bytes, mtimes."""
    h = hashlib.sha256()
    for here, dirs, names in os.walk(repo / ".git"):
        dirs.sort()
        for name in sorted(names):
            path = Path(here, name)
            st = path.lstat()
            h.update(f"{path.relative_to(repo)}\0{st.st_mode}\0{st.st_mtime_ns}\0".encode())
            if stat.S_ISREG(st.st_mode):
                h.update(path.read_bytes())
    return h.hexdigest()


def store_has_object(store: Path, oid: str) -> bool:
    return (store / "blobs" / "objects" / oid[:2] / oid[2:]).exists()
