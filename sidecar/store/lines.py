"""The lines of an append-only file, read from disk when asked for.

A loaded session keeps, per entry, only where its line starts (8 bytes) instead of the line
itself: with 100k entries that is ~1 MB instead of ~100 MB, and DESIGN.md's memory target
(<= 250 MB with 100k entries loaded) holds with room.  Lines are read with ``pread`` on a
read-only descriptor; the hot ones are parsed once and cached by the history index, the
transcript groups by the context pipeline, so an assembly reads only what changed.

Lines are appended on the event loop while worker threads read: :meth:`FileLines.extend`
publishes the new line starts in one step before the new end, and a read takes the end
before it looks at how many starts there are, so a line below the head a reader was given
is always read whole and only.  A closed ``FileLines`` refuses reads (it never reopens:
whoever closes it is the last user, see ``sidecar.store.loaded``).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, overload

from sidecar.errors import StoreIOError

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

__all__ = ["FileLines"]


class FileLines(Sequence[bytes]):
    """``Sequence[bytes]`` over the newline-terminated lines of one append-only file."""

    def __init__(self, path: Path, starts: array[int], end: int, *, fd: int | None = None) -> None:
        """``starts``: the offset of each line; ``end``: the offset past the last newline;
        ``fd``: a readable descriptor of the file to borrow (the writer's own), else one is
        opened now (and closed by :meth:`close`)."""
        self.path = path
        self._starts = starts
        self._end = end
        self._owned = fd is None
        self._fd = os.open(path, os.O_RDONLY) if fd is None else fd

    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, index: int) -> bytes: ...

    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...

    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        count = len(self._starts)
        if isinstance(index, slice):
            first, stop, step = index.indices(count)
            if step != 1:
                return [self[i] for i in range(first, stop, step)]
            if first >= stop:
                return []
            base = self._starts[first]
            data = self._read(base, self._stop(stop - 1) - base)
            return [
                data[self._starts[i] - base : self._stop(i) - base - 1] for i in range(first, stop)
            ]
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("line index out of range")
        start = self._starts[index]
        return self._read(start, self._stop(index) - start - 1)

    def _stop(self, index: int) -> int:
        """Offset just past line ``index``'s newline."""
        end = self._end  # before the count: see the module docstring
        return self._starts[index + 1] if index + 1 < len(self._starts) else end

    def _read(self, offset: int, size: int) -> bytes:
        fd = self._fd
        if fd < 0:
            raise StoreIOError(
                f"{self.path.name} was read after it was closed",
                details={"path": str(self.path)},
            )
        chunks = []
        while size > 0:
            chunk = os.pread(fd, size, offset)
            if not chunk:
                raise StoreIOError(
                    f"{self.path.name} is shorter than its index (truncated behind the store?)",
                    details={"path": str(self.path), "offset": offset},
                )
            chunks.append(chunk)
            offset += len(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def extend(self, lines: Iterable[bytes]) -> None:
        """Record lines just appended to the file (each written with its newline)."""
        end = self._end
        starts = array(self._starts.typecode)
        for line in lines:
            starts.append(end)
            end += len(line) + 1
        self._starts.extend(starts)  # one step, then the end: see the module docstring
        self._end = end

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0 and self._owned:
            os.close(fd)
