"""A walk of the workspace that skips what git ignores: the files list, glob and grep see.

Rules, the same as ``rg --hidden --no-require-git`` so that the two grep back ends agree:
``.git`` is never entered; every ``.gitignore`` (and ``.ignore``) on the way down applies to
its directory and below, a deeper file's rules after the shallower ones (its ``!negations``
can re-include); hidden files are walked like any other.  Symlinks are not followed (a link
to a file is listed, never a link to a directory), so the walk cannot leave the root or loop.
It goes by descriptor, as the checkpoints' capture does: each directory is opened relative
to its parent's descriptor with ``O_NOFOLLOW`` and listed through it, and its ignore files
read through it, so a directory swapped for a symlink between its parent's listing and its
own is skipped, never listed where the link points.

Bounded in time: given a :class:`~sidecar.tools.deadline.Deadline`, the walk checks it before
every entry and raises :class:`~sidecar.tools.deadline.DeadlinePassed` once the call's time is
up or it was cancelled (a tree of millions of files).  An ignore file that is not a regular
file (a FIFO named ``.gitignore``) is skipped, never opened for a blocking read.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pathspec

from sidecar.beneath import open_child_dir, open_root

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from sidecar.tools.deadline import Deadline

__all__ = ["Walked", "walk"]

_IGNORE_FILES = (".gitignore", ".ignore")
_NEVER = frozenset({".git"})
_BY_FD = os.scandir in os.supports_fd and os.open in os.supports_dir_fd
"""Where directories cannot be listed by descriptor (Windows), they are listed by path."""


@dataclass(frozen=True, slots=True)
class Walked:
    """One entry of the walk."""

    path: str
    """Absolute path (the root joined with ``rel``)."""
    rel: str
    """Path relative to the walk's root, ``/``-separated."""
    is_dir: bool
    depth: int
    """1 for the root's own entries."""


@dataclass(frozen=True, slots=True)
class _Rules:
    skip: int  # len(directory holding the ignore file) + 1: entry.path[skip:] is relative to it
    spec: pathspec.GitIgnoreSpec


def walk(
    root: Path,
    *,
    within: Path | None = None,
    max_depth: int | None = None,
    deadline: Deadline | None = None,
) -> Iterator[Walked]:
    """Entries under ``root`` (not ``root`` itself), depth first, names sorted.

    ``within`` is the workspace root ``root`` lies in: the ignore files of the directories
    between them apply too (as git applies a parent's ``.gitignore`` to a subdirectory)."""
    rules: list[_Rules] = []
    if within is not None and within != root and within in root.parents:
        for parent in reversed(root.parents):
            if parent == within or within in parent.parents:
                rules += _rules_in(str(parent))
    try:  # the root itself is followed: it was resolved and confined
        top: int | str = open_root(root) if _BY_FD else str(root)
    except OSError:
        return
    try:
        yield from _walk(top, str(root), "", rules, 1, max_depth, deadline)
    finally:
        _close(top)


def _enter(parent: int | str, name: str, path: str) -> int | str | None:
    """The subdirectory ``name`` of ``parent`` to list: opened through its parent's
    descriptor, never through a symlink (``None``: gone, or swapped for one since the
    listing); its path where listing goes by path."""
    if isinstance(parent, str):
        return path
    try:
        return open_child_dir(parent, name)
    except OSError:
        return None


def _close(handle: int | str) -> None:
    if isinstance(handle, int):
        os.close(handle)


def _walk(
    fd: int | str,
    directory: str,
    rel_dir: str,
    rules: list[_Rules],
    depth: int,
    max_depth: int | None,
    deadline: Deadline | None,
) -> Iterator[Walked]:
    """The entries of the directory open as ``fd`` (its path where it cannot be opened:
    ``_BY_FD``; ``directory`` is its path, for names)."""
    try:
        with os.scandir(fd) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError:
        return
    here = rules + _rules_in(directory, fd if isinstance(fd, int) else None)
    for entry in entries:
        if deadline is not None:
            deadline.check()
        if entry.name in _NEVER:
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        rel = rel_dir + entry.name
        path = os.path.join(directory, entry.name)
        if here and _ignored(here, path, is_dir):
            continue
        yield Walked(path, rel, is_dir, depth)
        if not is_dir or (max_depth is not None and depth >= max_depth):
            continue
        sub = _enter(fd, entry.name, path)
        if sub is None:
            continue
        try:
            yield from _walk(sub, path, rel + "/", here, depth + 1, max_depth, deadline)
        finally:
            _close(sub)


def _rules_in(directory: str, fd: int | None = None) -> list[_Rules]:
    """The ignore files' rules of ``directory`` (read through ``fd`` when it is open)."""
    found: list[_Rules] = []
    for name in _IGNORE_FILES:
        try:
            at = name if fd is not None else os.path.join(directory, name)
            lines = _read_regular(at, fd).splitlines()
        except OSError:
            continue
        if any(line.strip() and not line.startswith("#") for line in lines):
            found.append(_Rules(len(directory) + 1, pathspec.GitIgnoreSpec.from_lines(lines)))
    return found


def _read_regular(path: str, dir_fd: int | None = None) -> str:
    """The text of ``path`` (relative to ``dir_fd`` when given) when it is a regular file;
    ``OSError`` otherwise.  Opened without blocking (a FIFO's open would wait for a writer),
    then checked before any read.  A symlinked ignore file is followed, as git and ``rg`` do
    (it decides what is listed, and its text is never shown)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return fh.read().decode("utf-8", "replace")


def _ignored(rules: list[_Rules], path: str, is_dir: bool) -> bool:
    """Git's answer: the last rule that matches decides, deeper files after shallower."""
    verdict = False
    for rule in rules:
        sub = path[rule.skip :] + ("/" if is_dir else "")
        result = rule.spec.check_file(sub)
        if result.include is not None:
            verdict = result.include
    return verdict
