"""Blocking I/O on the stdio file descriptors, for the faces that serve over them (``serve``,
``acp``): writes to an fd that may share a non-blocking description, and reads from an fd
asyncio cannot watch."""

from __future__ import annotations

import contextlib
import os
import select
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # asyncio stays off the start-up path (``handshake`` writes with write_all)
    import asyncio
    from collections.abc import Callable, Coroutine

__all__ = ["pump_in_thread", "write_all"]


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` (waiting for room when the fd is non-blocking: stdin and
    stdout can share one open file description whose flags another process set)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])


def pump_in_thread(
    fd: int,
    chunk_size: int,
    deliver: Callable[[bytes], Coroutine[Any, Any, None]],
    loop: asyncio.AbstractEventLoop,
    name: str,
) -> None:
    """Read ``fd`` on a daemon thread (for fds asyncio cannot watch: regular files, some
    ttys) and hand each chunk to ``deliver`` on ``loop``, waiting for it (back-pressure); a
    read error counts as EOF, which is delivered as ``b""`` and ends the thread."""

    import asyncio

    def pump() -> None:
        while True:
            try:
                chunk = os.read(fd, chunk_size)
            except OSError:
                chunk = b""
            future = asyncio.run_coroutine_threadsafe(deliver(chunk), loop)
            with contextlib.suppress(Exception):
                future.result()
            if not chunk:
                return

    threading.Thread(target=pump, name=name, daemon=True).start()
