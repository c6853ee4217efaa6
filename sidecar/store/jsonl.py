"""Append-only JSONL files whose acknowledged lines survive a crash at any instant.

An append writes every line of a batch with one ``write`` and then ``fsync``s; only after
``fsync`` returns is the batch acknowledged.  A process killed mid-write can leave a torn last
line (or a tail of complete-but-unacknowledged lines, which is harmless).  On open, a torn
tail is detected, saved to ``<name>.torn`` for forensics, and cut off; damage anywhere else is
reported as corruption rather than silently dropped.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sidecar.errors import StoreCorruptError, StoreIOError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["AppendLog", "LoadedLog", "fsync_dir", "write_file_atomic"]

logger = logging.getLogger(__name__)


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (new or renamed files) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new file."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


@dataclass(slots=True)
class LoadedLog:
    """What :meth:`AppendLog.open` found on disk."""

    records: list[dict[str, Any]]
    lines: list[bytes]
    """Each record's bytes, without the trailing newline."""
    repaired_bytes: int
    """How many bytes of torn tail were cut off (0 when the file was clean)."""


class AppendLog:
    """One append-only JSONL file, opened for durable appends."""

    def __init__(self, path: Path, fd: int, size: int) -> None:
        self.path = path
        self._fd = fd
        self._size = size

    @property
    def size(self) -> int:
        return self._size

    @classmethod
    def open(cls, path: Path, *, writable: bool = True) -> tuple[AppendLog | None, LoadedLog]:
        """Read every record, repair a torn tail (when ``writable``), and open for appends."""
        data = path.read_bytes() if path.exists() else b""
        records, lines, good_len = _parse(path, data)
        repaired = len(data) - good_len
        if repaired and writable:
            _cut_tail(path, data, good_len)
        if not writable:
            return None, LoadedLog(records, lines, repaired)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return cls(path, fd, good_len), LoadedLog(records, lines, repaired)

    def append(self, payload: bytes) -> None:
        """Write ``payload`` (complete lines) and make it durable, or leave no trace and raise."""
        before = self._size
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)
        except OSError as exc:
            self._rollback(before)
            raise StoreIOError(
                f"could not write {self.path.name}: {exc.strerror or exc}",
                details={"path": str(self.path)},
            ) from exc
        self._size = before + len(payload)

    def write(self, payload: bytes) -> None:
        """Write complete lines without fsync (see :meth:`sync`); for journals whose events
        must survive a process kill (the page cache holds them) but may batch their fsyncs."""
        view = memoryview(payload)
        while view:
            view = view[os.write(self._fd, view) :]
        self._size += len(payload)

    def sync(self) -> None:
        os.fsync(self._fd)

    def _rollback(self, size: int) -> None:
        try:
            os.ftruncate(self._fd, size)
            os.fsync(self._fd)
        except OSError:
            logger.exception("could not roll back %s to %d bytes", self.path, size)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _parse(path: Path, data: bytes) -> tuple[list[dict[str, Any]], list[bytes], int]:
    """Parse complete lines; return records, their bytes and the length of the good prefix."""
    records: list[dict[str, Any]] = []
    lines: list[bytes] = []
    pos = 0
    end = len(data)
    while pos < end:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break  # torn: no newline after the last bytes
        line = data[pos:nl]
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("not an object")
        except ValueError:
            if data.find(b"\n", nl + 1) < 0:
                break  # no complete record follows: a torn tail, repairable
            raise StoreCorruptError(
                f"{path.name}: unreadable record at byte {pos}",
                details={"path": str(path), "offset": pos},
            ) from None
        records.append(record)
        lines.append(line)
        pos = nl + 1
    return records, lines, pos


def _cut_tail(path: Path, data: bytes, good_len: int) -> None:
    torn = data[good_len:]
    logger.warning("%s: cutting a torn tail of %d bytes", path, len(torn))
    with open(path.with_name(path.name + ".torn"), "ab") as keep:
        keep.write(torn + b"\n")
        keep.flush()
        os.fsync(keep.fileno())
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, good_len)
        os.fsync(fd)
    finally:
        os.close(fd)
