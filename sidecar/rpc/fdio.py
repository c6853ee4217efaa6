"""Blocking writes to a file descriptor that may share a non-blocking description."""

from __future__ import annotations

import os
import select

__all__ = ["write_all"]


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` (waiting for room when the fd is non-blocking: stdin and
    stdout can share one open file description whose flags another process set)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])
