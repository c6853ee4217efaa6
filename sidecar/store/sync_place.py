"""Where a durable write waits for its disk: on the event loop or in a worker thread.

A worker thread keeps the event loop free while the disk works, but the hop there and back
(wake a thread, then wake the loop through its self-pipe) costs about as much as a fast
disk's whole ``write`` + ``fsync``: ~0.3 ms each on the machine of docs/performance.md.  So a
write whose disk has been fast lately is made on the loop, and one whose disk has been slow
goes to a thread:

- every durable write is timed, wherever it ran;
- a write slower than :data:`INLINE_LIMIT_S` sends the next ones to a thread at once;
- they come back to the loop once the recent writes (an average that forgets slowly) are
  fast again.

What this costs: the loop may stall for the length of one write that turns out slow (then
the next ones go to a thread); on a disk that is fast, each write stalls it by that write
only, less than the hop would have cost.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from sidecar.aio import in_thread

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["INLINE_LIMIT_S", "SyncPlace"]

#: A durable write at most this long may run on the event loop.
INLINE_LIMIT_S = 0.002
#: Weight of the newest time in the average (the rest is the average so far).
_NEWEST = 0.25


class SyncPlace:
    """One per store (one disk): times its durable writes and says where the next one runs."""

    def __init__(self) -> None:
        self._recent: float | None = None
        """Average time of the recent writes, seconds (None: none timed yet)."""

    @property
    def inline(self) -> bool:
        """Whether the next durable write runs on the event loop."""
        recent = self._recent
        return recent is not None and recent <= INLINE_LIMIT_S

    def timed(self, write: Callable[[], None]) -> None:
        """Run ``write`` (here, whatever thread this is) and remember how long it took."""
        started = time.perf_counter()
        try:
            write()
        finally:
            self._remember(time.perf_counter() - started)

    async def run(self, write: Callable[[], None]) -> None:
        """Run ``write`` where it belongs; either way it runs to its end."""
        if self.inline:
            self.timed(write)
        else:
            await in_thread(self.timed, write)

    def _remember(self, seconds: float) -> None:
        recent = self._recent
        if recent is None or seconds > INLINE_LIMIT_S:
            self._recent = max(seconds, recent or 0.0)  # slow: to a thread from the next one
        else:
            self._recent = recent + _NEWEST * (seconds - recent)
