"""Advisory file locks with a holder record: a session's writer lock, the store's gc lock.

A lock is an ``flock`` on a small file that the kernel releases when the holding process dies
(even by ``kill -9``), so a stale lock cannot outlive its process.  The file itself holds
who has the lock, as one JSON object (:data:`Holder`: pid, face, since, host), written right
after the lock is taken and cleared just before it is given back, so another process can say
who is writing without touching the lock (:func:`read_holder`: a probe with ``flock`` would,
for that instant, refuse the lock to a writer asking for it).

The record is written at offset 0 over an emptied file (``ftruncate`` to 0, then ``pwrite``
at 0): a shorter record over a longer one must not keep the old one's tail (a pid ``99``
written over ``12345`` would read ``99345``).  A record whose process is gone (``kill -9``
leaves its record behind, with the lock free) is read as no holder.

The lock file is never removed: a process that opened it just before the removal would lock
a file nobody else can see, and two processes would hold "the" lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["FileLock", "Holder", "holder_record", "read_holder"]

Holder = dict[str, Any]
"""``{"pid": int, "face": str, "since": timestamp, "host": str}``."""

_HOST = socket.gethostname()
#: How long a refused process waits for the holder's record to appear (the holder writes it
#: right after taking the lock; an empty file in between).
RECORD_WAIT_S = 0.1


def holder_record(face: str, since: str) -> Holder:
    """This process as a lock's holder."""
    return {"pid": os.getpid(), "face": face, "since": since, "host": _HOST}


def _write_record(fd: int, data: bytes) -> None:
    """Replace the file's content with ``data``: emptied first, then written at offset 0."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def read_holder(path: Path) -> Holder | None:
    """The live holder named in a lock file, or None (free, unreadable, or its process gone:
    on this host a pid that no longer exists holds nothing)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        record = json.loads(data) if data else None
    except ValueError:
        return None
    if not isinstance(record, dict) or type(record.get("pid")) is not int:
        return None
    if record.get("host") == _HOST and not _alive(record["pid"]):
        return None
    return record


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, another user's
    return True


class FileLock:
    """One lock file; this process holds it between :meth:`try_acquire` and :meth:`release`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self.holder: Holder | None = None
        """What this process wrote into the file, while it holds the lock."""

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self, holder: Holder) -> bool:
        """Take the lock if it is free and write ``holder`` into it; True when this process
        holds it afterwards (at once: never waits)."""
        if self._fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        try:
            _write_record(fd, json.dumps(holder, separators=(",", ":")).encode() + b"\n")
        except OSError:
            os.close(fd)  # gives the lock back
            raise
        self._fd = fd
        self.holder = holder
        return True

    def read(self) -> Holder | None:
        """The live holder the file names (see :func:`read_holder`)."""
        return read_holder(self.path)

    def refused_by(self) -> Holder | None:
        """Who holds the lock :meth:`try_acquire` was just refused: :meth:`read`, read again
        for up to :data:`RECORD_WAIT_S` while the file names nobody — the holder takes the
        lock, then writes its record, and a refusal in between read an empty file (two
        processes appending to one free session at once: the loser was told "another
        process")."""
        deadline = time.monotonic() + RECORD_WAIT_S
        holder = self.read()
        while holder is None and time.monotonic() < deadline:
            time.sleep(0.002)
            holder = self.read()
        return holder

    def release(self) -> None:
        """Clear the record and give the lock back (idempotent)."""
        fd = self._fd
        if fd is None:
            return
        self._fd = None
        self.holder = None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # while still held: nobody reads this holder after
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
