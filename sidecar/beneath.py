"""Opening a checked path by descriptor from its root down, and writing it atomically.

This module owns the last step of confinement (DESIGN §8): a path already resolved and found
inside a root (:class:`sidecar.tools.Workspace`, the context sources) is *opened* without
following anything that appeared since the check.  Python has no ``openat2(RESOLVE_BENEATH)``;
the portable equivalent is a walk: open the root (trusted, as given), then each component with
``os.open(name, O_DIRECTORY | O_NOFOLLOW, dir_fd=parent)`` and the last with ``O_NOFOLLOW``.
A directory swapped for a symlink after the check makes its open fail (``ELOOP`` /
``ENOTDIR``): the path is refused, never followed.  Names are single components: ``..``,
``.``, empty and absolute names are refused before anything is opened.

- :func:`open_file` opens a regular file for reading (``O_NONBLOCK``: a FIFO cannot block;
  ``fstat`` must say regular file);
- :func:`open_dir` opens a directory, and :func:`start_dir` says where a child process starts
  *in* it (``/proc/self/fd/N``); :func:`open_root` and :func:`open_child_dir` are the walk's
  two steps, for a caller that descends a tree itself (the built-in tools' listing walk);
- :func:`write_atomic` writes a temporary file in the (descriptor-held) parent, ``fsync``s it
  and renames it over the name, keeping the old file's mode: a crash leaves the old file or
  the new one, and a hard link to a file elsewhere is replaced, never written through.  Both
  faces write through it (``sidecar.tools.edit`` and the ACP face's disk fallback).

Errors are :class:`OSError`: :class:`Escaped` (``ELOOP``) says a component is a symlink or
not a directory now, :class:`NotAFile` that a name holds no regular file.  Where ``dir_fd``
is not supported (Windows) the walk degrades to opening the full path with the same flags:
the check's guarantee only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "Escaped",
    "NotAFile",
    "open_child_dir",
    "open_dir",
    "open_file",
    "open_root",
    "open_parent",
    "parts_below",
    "start_dir",
    "write_atomic",
]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_READ = (
    os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC | getattr(os, "O_BINARY", 0)
)
_TEMP = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | getattr(os, "O_BINARY", 0)
_WALKS = os.open in os.supports_dir_fd and os.rename in os.supports_dir_fd
_BY_DESCRIPTOR = sys.platform.startswith("linux")


class Escaped(OSError):
    """A component of a checked path is a symlink, or no longer a directory: refused."""

    def __init__(self, name: str) -> None:
        super().__init__(
            errno.ELOOP, f"{name!r} is a symlink or not a directory (refused, not followed)"
        )


class NotAFile(OSError):
    """What a name holds is not a regular file (``mode``: its ``st_mode``)."""

    def __init__(self, mode: int) -> None:
        super().__init__(errno.EINVAL, "not a regular file")
        self.mode = mode


def parts_below(root: Path, path: Path) -> list[str]:
    """The names from ``root`` down to ``path`` (absolute and inside ``root``, or relative to
    it); :class:`ValueError` for a path outside ``root`` or a ``..`` / ``.`` / empty name."""
    if path.is_absolute():
        if path != root and root not in path.parents:
            raise ValueError(f"{path} is not inside {root}")
        names = list(path.parts[len(root.parts) :])
    else:
        names = list(path.parts)
    for name in names:
        if name in ("", ".", "..") or "/" in name or "\x00" in name or os.sep in name:
            raise ValueError(f"{name!r} is not a single name")
    return names


def open_root(root: Path) -> int:
    """A descriptor of the directory ``root``, followed: the root itself is trusted (it was
    resolved and checked when the session named it)."""
    return os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)


def open_child_dir(parent: int, name: str) -> int:
    """The directory ``name`` in the directory held by ``parent``, never through a symlink
    (:class:`Escaped` when it is one now, or no directory)."""
    try:
        return os.open(name, _DIR, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise Escaped(name) from None
        raise


def _walk(root: Path, names: list[str], *, create: bool = False) -> int:
    """A descriptor of the directory ``root/names...`` (created, one by one, with ``create``)."""
    fd = open_root(root)
    try:
        for name in names:
            try:
                child = open_child_dir(fd, name)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):  # made meanwhile: opened below
                    os.mkdir(name, 0o777, dir_fd=fd)
                child = open_child_dir(fd, name)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_dir(root: Path, path: Path) -> int:
    """A descriptor of the directory ``path`` (inside ``root``), reached by descriptor from
    ``root``; the caller closes it."""
    names = parts_below(root, path)
    if not _WALKS:
        return os.open(path, _DIR)
    return _walk(root, names)


def open_parent(root: Path, path: Path, *, create: bool = False) -> tuple[int, str]:
    """A descriptor of the directory holding ``path`` (inside ``root``, not ``root`` itself),
    reached by descriptor from ``root`` — its missing directories made one by one with
    ``create`` — and the last name: for a caller that renames, links or unlinks that name
    itself (a checkpoint's restore).  The caller closes the descriptor."""
    names = parts_below(root, path)
    if not names:
        raise NotAFile(stat.S_IFDIR)
    if not _WALKS:  # pragma: no cover - no dir_fd (Windows)
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path.parent, _DIR), names[-1]
    return _walk(root, names[:-1], create=create), names[-1]


def start_dir(dir_fd: int, path: Path) -> str:
    """Where a child process starts that should start in the directory held by ``dir_fd``
    (:func:`open_dir`): ``/proc/self/fd/N`` on Linux — the directory checked, which a swap
    after the check cannot move (the child's ``chdir`` comes before its descriptors are
    closed; were that ever not so, the start fails rather than lands elsewhere) — else
    ``path``, the check's guarantee only."""
    return f"/proc/self/fd/{dir_fd}" if _BY_DESCRIPTOR else str(path)


def open_file(root: Path, path: Path) -> int:
    """A read-only descriptor of the regular file ``path`` (inside ``root``), reached by
    descriptor from ``root``, its last name not followed; the caller closes it.

    :class:`Escaped` when a name is a symlink; :class:`NotAFile` for anything else that is
    not a regular file (the root itself included)."""
    names = parts_below(root, path)
    if not names:
        raise NotAFile(stat.S_IFDIR)
    if _WALKS:
        parent = _walk(root, names[:-1])
        try:
            fd = os.open(names[-1], _READ, dir_fd=parent)
        except OSError as exc:
            raise (Escaped(names[-1]) if exc.errno == errno.ELOOP else exc) from None
        finally:
            os.close(parent)
    else:
        fd = os.open(path, _READ)
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotAFile(mode)
    return fd


def write_atomic(root: Path, path: Path, data: bytes) -> bool:
    """Put ``data`` at ``path`` (inside ``root``): missing parents made one by one, by
    descriptor; a temporary file beside it written, ``fsync``-ed and renamed over it, the old
    file's mode kept (a new file: ``0o666`` less the umask, as any editor makes one).  Returns
    whether the file is new.  What is at ``path`` must be a regular file or nothing."""
    names = parts_below(root, path)
    if not names:
        raise NotAFile(stat.S_IFDIR)
    name = names[-1]
    if not _WALKS:
        return _write_by_path(path, data)
    parent = _walk(root, names[:-1], create=True)
    try:
        try:
            old = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
        except FileNotFoundError:
            old = None
        if old is not None and not stat.S_ISREG(old):
            raise Escaped(name) if stat.S_ISLNK(old) else NotAFile(old)
        tmp, fd = _temp(parent, name, 0o600 if old is not None else 0o666)
        try:
            try:
                _write_all(fd, data)
                if old is not None:
                    os.fchmod(fd, stat.S_IMODE(old))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            raise
        # the rename itself survives a crash (not every file system syncs a directory)
        with contextlib.suppress(OSError):
            os.fsync(parent)
    finally:
        os.close(parent)
    return old is None


def _temp(parent: int, name: str, mode: int) -> tuple[str, int]:
    for _ in range(16):
        tmp = f".{name[:200]}.{secrets.token_hex(4)}.tmp"
        try:
            return tmp, os.open(tmp, _TEMP, mode, dir_fd=parent)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_by_path(path: Path, data: bytes) -> bool:  # pragma: no cover - no dir_fd (Windows)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        old: int | None = os.lstat(path).st_mode
    except FileNotFoundError:
        old = None
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, _TEMP, 0o600 if old is not None else 0o666)
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if old is not None:
            os.chmod(tmp, stat.S_IMODE(old))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return old is None
