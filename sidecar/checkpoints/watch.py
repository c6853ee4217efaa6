"""Which directories of a root changed since the last capture: an inotify watcher per root,
as git's fsmonitor does, so that a checkpoint of an unchanged tree costs no syscall per file.

A :class:`Watcher` belongs to one root in one process (kept by the ``Checkpoints`` service;
nothing of it is on disk, two processes on one store each have their own).  The capture adds
a watch to every directory it enters, *before* listing it (by ``/proc/self/fd/N`` of the
descriptor the walk holds: the directory listed is the one watched), never inside ``.git``
or an ignored directory (they are never entered).  At the start of the next capture
:meth:`Watcher.begin` drains the queue without blocking: the kernel queues an event before
the write that caused it returns, so every change made before the capture, by any local
process, is in it.  What it gives (:class:`Since`):

- ``dirty``: the directories with an event (a name in them created, deleted, renamed,
  written, chmod-ed; the directory itself chmod-ed or deleted), and those the watcher cannot
  vouch for: watched but not remembered by the last capture (its files were racy), or
  remembered but not watched (its watch could not be added, or is gone);
- ``visit``: ``dirty`` and every ancestor of a dirty directory.  Everything else is reused
  whole from the memo of the last capture, without a syscall.

``None`` instead of a :class:`Since` means a full walk (the stat-checked one, every file
``lstat``-ed), with the watches rebuilt when they may lie: the first capture; the queue
overflowed (``IN_Q_OVERFLOW``); a directory moved or renamed (the ``wd -> path`` map would
lie), or one's file system unmounted; a capture that ended early (an error, too many files:
the events it drained were not acted upon); a full walk every :data:`VERIFY_S` anyway (what
inotify cannot see: writes through ``mmap``, a hard link written from outside the root — the
stat walk sees them by their times).  A watch that cannot be added for want of watches
(``ENOSPC``: ``fs.inotify.max_user_watches``) turns the watcher off for the root (a log line,
``off`` says why): every capture is then the stat walk, as without a watcher.

No watcher at all (:func:`watcher_for` gives ``None``): not Linux, no ``inotify_init1``, or
the root on (or holding a mount of) a file system where changes made elsewhere raise no
event here (nfs, cifs/smb, fuse, 9p, virtiofs, ceph...: :data:`REMOTE`).

``ctypes`` on libc rather than a package: three calls and a 16-byte header to unpack
(``inotify_simple`` is the same ``ctypes`` in a hundred lines; see ``docs/dependencies.md``).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection

__all__ = ["REMOTE", "VERIFY_S", "Since", "Watcher", "remote_file_system", "watcher_for"]

logger = logging.getLogger(__name__)

VERIFY_S = 600.0
"""A full stat walk at least this often (seconds), whatever the watcher says."""

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x1000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_CREATE
    | IN_DELETE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
_MOVED = IN_MOVED_FROM | IN_MOVED_TO
_HEADER = struct.Struct("iIII")

REMOTE = frozenset(
    {
        "nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "lustre",
        "gpfs", "davfs", "ncpfs", "coda", "virtiofs", "vboxsf", "vmhgfs", "ocfs2", "gfs2",
    }
)  # fmt: skip
"""File systems where a change made by another machine (or the host) raises no event here;
and every ``fuse`` one (``fuse``, ``fuse.sshfs``, ``fuseblk``...)."""


class _Libc:
    """``inotify_init1``, ``inotify_add_watch``, ``inotify_rm_watch`` of libc (errno kept)."""

    def __init__(self) -> None:
        lib = ctypes.CDLL(None, use_errno=True)  # the process's own libc (no ldconfig run)
        self.init1 = lib.inotify_init1
        self.init1.argtypes = [ctypes.c_int]
        self.init1.restype = ctypes.c_int
        self.add = lib.inotify_add_watch
        self.add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self.add.restype = ctypes.c_int


_LIBC: _Libc | None = None


def _libc() -> _Libc | None:
    global _LIBC
    if _LIBC is None and sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            _LIBC = _Libc()
    return _LIBC


@dataclass(slots=True)
class Since:
    """What changed since the last capture (see the module docstring)."""

    dirty: set[str]
    visit: set[str]
    gitignores: set[str] = field(default_factory=set)
    """Directories whose ``.gitignore`` had an event (its compiled rules are dropped)."""


class Watcher:
    """The inotify watches of one root (see the module docstring).  Not thread-safe: the
    service holds the root's lock around a capture, and a capture is the only user."""

    def __init__(self, root: str, libc: _Libc) -> None:
        self.root = root
        self._libc = libc
        self._fd = -1
        self._rel_of: dict[int, str] = {}
        self._wd_of: dict[str, int] = {}
        self._dirty: set[str] = set()
        self._gitignores: set[str] = set()
        self._lost: str | None = "first capture"
        self._last_full = 0.0
        self.off: str | None = None
        """Why the watcher is off for good (every capture the stat walk); ``None``: on."""
        self.full_walks = 0
        """Captures that were full walks (the first, losses, verifications)."""
        self._open()

    # --- the capture's side ------------------------------------------------------------------

    def begin(self, remembered: Collection[str]) -> Since | None:
        """Drain the queue: what changed since the last capture, or ``None`` for a full
        walk (watches rebuilt if they may lie).  ``remembered``: the directories the
        capture's memo holds."""
        if self.off is not None:
            return None
        self._drain()
        now = time.monotonic()
        if self._lost is None and now - self._last_full > VERIFY_S:
            self._lost = "periodic full walk"  # the watches are right: only files checked
        elif self._lost is not None:
            self._restart()
        if self._lost is not None:
            logger.debug("checkpoints of %s: full walk (%s)", self.root, self._lost)
            self._lost = None
            self._last_full = now
            self.full_walks += 1
            return None
        dirty = self._dirty
        dirty.update(self._wd_of.keys() ^ set(remembered))  # watched xor remembered
        self._dirty = set()
        visit = set(dirty)
        for rel in dirty:
            while rel:
                rel = rel[: rel.rindex("/", 0, len(rel) - 1) + 1] if "/" in rel[:-1] else ""
                if rel in visit:
                    break
                visit.add(rel)
        gitignores, self._gitignores = self._gitignores, set()
        return Since(dirty, visit, gitignores)

    def enter(self, dir_fd: int, rel: str) -> None:
        """Watch the directory held by ``dir_fd`` (``rel``: ``""`` or ``a/b/``) before it is
        listed; nothing when it is watched already."""
        if self._fd < 0 or rel in self._wd_of:
            return
        wd = self._libc.add(self._fd, f"/proc/self/fd/{dir_fd}".encode(), MASK)
        if wd < 0:
            err = ctypes.get_errno()
            if err == errno.ENOSPC:
                self._turn_off(
                    "the inotify watch limit is reached (fs.inotify.max_user_watches): "
                    "checkpoints of this root walk every file"
                )
            else:  # not watched: walked (stat-checked) at every capture
                logger.debug("no watch on %s%s: %s", self.root, rel, os.strerror(err))
            return
        old = self._rel_of.get(wd)
        if old is not None and old != rel:  # one directory under two names: cannot vouch
            self._lost = "a directory seen under two names"
        self._rel_of[wd] = rel
        self._wd_of[rel] = wd

    def lose(self, why: str) -> None:
        """The next capture is a full walk, watches rebuilt (the events drained by a
        capture that did not finish were not acted upon)."""
        if self._lost is None:
            self._lost = why

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._rel_of.clear()
        self._wd_of.clear()

    # --- the queue ---------------------------------------------------------------------------

    def _open(self) -> None:
        fd = self._libc.init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            self._turn_off(f"no inotify instance: {os.strerror(ctypes.get_errno())}")
            return
        self._fd = fd

    def _restart(self) -> None:
        self.close()
        self._dirty.clear()
        self._gitignores.clear()
        self._open()

    def _turn_off(self, why: str) -> None:
        logger.warning("checkpoints of %s: watcher off: %s", self.root, why)
        self.off = why
        self.close()

    def _drain(self) -> None:
        while self._fd >= 0:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return
            except InterruptedError:
                continue
            self._events(data)

    def _events(self, data: bytes) -> None:
        offset, end = 0, len(data)
        while offset + _HEADER.size <= end:
            wd, mask, _cookie, size = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size
            name = data[offset : offset + size].rstrip(b"\0")
            offset += size
            if mask & IN_Q_OVERFLOW:
                self.lose("the event queue overflowed")
                continue
            rel = self._rel_of.get(wd)
            if rel is None:
                continue
            if mask & IN_IGNORED:  # the watch is gone (directory deleted, unmounted)
                del self._rel_of[wd]
                if self._wd_of.get(rel) == wd:
                    del self._wd_of[rel]
                self._dirty.add(rel)
                continue
            if mask & (IN_MOVE_SELF | IN_UNMOUNT) or (mask & IN_ISDIR and mask & _MOVED):
                self.lose("a directory moved")  # every path below it changed
            self._dirty.add(rel)
            if name == b".gitignore":
                self._gitignores.add(rel)


def watcher_for(root: str) -> Watcher | None:
    """A watcher for ``root``, or ``None`` where inotify cannot vouch for it (see the module
    docstring; the reason is logged)."""
    libc = _libc()
    if libc is None or not os.path.isdir("/proc/self/fd"):  # watches are added through it
        return None
    remote = remote_file_system(root)
    if remote is not None:
        logger.info("checkpoints of %s: no watcher (a %s file system)", root, remote)
        return None
    return Watcher(root, libc)


def remote_file_system(root: str, mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """The type of a file system holding ``root`` or mounted under it where inotify misses
    changes made elsewhere (:data:`REMOTE`, ``fuse*``); ``None`` when all are local.  An
    unreadable mount table counts as remote (``"unknown"``)."""
    try:
        with open(mountinfo, encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return "unknown"
    real = os.path.realpath(root).rstrip("/") + "/"
    holder: tuple[int, str] = (-1, "")
    below: list[str] = []
    for line in lines:
        fields = line.split(" ")
        try:
            point = _unescape(fields[4]).rstrip("/") + "/"
            fs_type = fields[fields.index("-", 6) + 1]
        except (IndexError, ValueError):
            continue
        if real.startswith(point):
            if len(point) >= holder[0]:
                holder = (len(point), fs_type)
        elif point.startswith(real):
            below.append(fs_type)
    for fs_type in (holder[1], *below):
        if fs_type in REMOTE or fs_type.startswith("fuse"):
            return fs_type
    return None


def _unescape(field: str) -> str:
    """A mountinfo path: space, tab, newline and backslash are written as octal escapes."""
    if "\\" not in field:
        return field
    raw = field.encode("utf-8", "surrogateescape").decode("unicode_escape")
    return raw.encode("latin-1").decode("utf-8", "surrogateescape")
