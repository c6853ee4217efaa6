"""Append-only JSONL files whose acknowledged lines survive a crash at any instant.

An append writes every line of a batch with one ``write`` and then ``fsync``s; only after
``fsync`` returns is the batch acknowledged.  A process killed mid-write can leave a torn last
line (or a tail of complete-but-unacknowledged lines, which is harmless).  On open, a torn
tail is detected, saved to ``<name>.torn`` for forensics, and cut off; damage anywhere else is
reported as corruption rather than silently dropped.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sidecar.errors import StoreCorruptError, StoreIOError

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

__all__ = [
    "AppendLog",
    "LoadedLog",
    "fsync_dir",
    "write_file_atomic",
    "write_fully",
    "write_new_file",
]

logger = logging.getLogger(__name__)

_temp_ids = itertools.count()  # next() is atomic under the GIL


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (new or renamed files) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_fully(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (one call may write part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_new_file(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Create ``path`` (it must not exist) with ``data``, fsynced; the caller fsyncs the
    directory when the new name itself must be durable."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        write_fully(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomic(
    path: Path, data: bytes, *, tmp_name: str | None = None, mode: int = 0o644
) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new file.

    ``tmp_name``: the temporary file's name in the same directory (default: one per call, so
    two threads replacing the same file never write into each other's temporary file)."""
    tmp = path.with_name(tmp_name or f".{path.name}.tmp-{os.getpid()}-{next(_temp_ids)}")
    try:
        write_new_file(tmp, data, mode=mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


@dataclass(slots=True)
class LoadedLog:
    """What :meth:`AppendLog.open` found on disk."""

    starts: array[int]
    """Where each record's line starts."""
    end: int
    """Where the good part of the file ends (past the last complete line)."""
    lines: list[bytes]
    """Each record's bytes, without the trailing newline (empty unless ``keep_lines``)."""
    """Each record's bytes, without the trailing newline."""
    repaired_bytes: int
    """How many bytes of torn tail were cut off (0 when the file was clean)."""


_FLAGS = os.O_RDWR | os.O_APPEND
"""An append log's descriptor: appends, and reads (a loaded session reads its lines back)."""


class AppendLog:
    """One append-only JSONL file, opened for durable appends."""

    def __init__(self, path: Path, fd: int, size: int) -> None:
        self.path = path
        self._fd = fd
        self._size = size

    @property
    def size(self) -> int:
        return self._size

    @property
    def fd(self) -> int:
        """The open descriptor (read-write, append mode); valid until :meth:`close`."""
        return self._fd

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        writable: bool = True,
        visit: Callable[[int, dict[str, Any]], None] | None = None,
        keep_lines: bool = True,
    ) -> tuple[AppendLog | None, LoadedLog]:
        """Read every record, repair a torn tail (when ``writable``), and open for appends.

        Each record is parsed (that is how damage is found) and handed to ``visit`` with its
        line index, then dropped: a caller keeps what it needs of a record, never all of them
        at once (100k parsed entries would take ~400 MB, and the allocator keeps it).  With
        ``keep_lines=False`` only where each line starts is kept (see ``FileLines``)."""
        data = path.read_bytes() if path.exists() else b""
        starts, good_len = _parse(path, data, visit)
        lines = _split(data, starts, good_len) if keep_lines else []
        repaired = len(data) - good_len
        if repaired and writable:
            _cut_tail(path, data, good_len)
        loaded = LoadedLog(starts, good_len, lines, repaired)
        if not writable:
            return None, loaded
        # readable too: a loaded session reads its lines back through this descriptor
        fd = os.open(path, _FLAGS | os.O_CREAT, 0o644)
        return cls(path, fd, good_len), loaded

    @classmethod
    def create(cls, path: Path) -> AppendLog:
        """A new, empty log at ``path`` (it must not exist), opened as :meth:`open` opens
        one; neither it nor its directory is fsynced (an empty file holds no data: the caller
        makes its name durable)."""
        return cls(path, os.open(path, _FLAGS | os.O_CREAT | os.O_EXCL, 0o644), 0)

    def append(self, payload: bytes) -> None:
        """Write ``payload`` (complete lines) and make it durable, or leave no trace and raise."""
        self._write(payload, durable=True)

    def write(self, payload: bytes) -> None:
        """Write complete lines without fsync (see :meth:`sync`); for journals whose events
        must survive a process kill (the page cache holds them) but may batch their fsyncs.
        A failed write leaves no trace and raises."""
        self._write(payload, durable=False)

    def _write(self, payload: bytes, *, durable: bool) -> None:
        before = self._size
        try:
            write_fully(self._fd, payload)
            if durable:
                os.fsync(self._fd)
        except OSError as exc:
            self._rollback(before)
            raise StoreIOError(
                f"could not write {self.path.name}: {exc.strerror or exc}",
                details={"path": str(self.path)},
            ) from exc
        self._size = before + len(payload)

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


def _split(data: bytes, starts: array[int], end: int) -> list[bytes]:
    bounds = [*starts, end]
    return [data[bounds[i] : bounds[i + 1] - 1] for i in range(len(starts))]


def _parse(
    path: Path, data: bytes, visit: Callable[[int, dict[str, Any]], None] | None
) -> tuple[array[int], int]:
    """Parse complete lines (each record to ``visit``); return where each starts and the
    length of the good prefix."""
    starts: array[int] = array("q")
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
        if visit is not None:
            visit(len(starts), record)
        starts.append(pos)
        pos = nl + 1
    return starts, pos


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
