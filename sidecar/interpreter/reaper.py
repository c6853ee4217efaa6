"""Freeing a large structure without holding up every other thread.

CPython frees an object graph in one go when its last reference goes, in one C call that keeps
the interpreter until the last object is freed: no other thread runs meanwhile, not even at the
switch interval.  Dropping a loaded session — the records it parsed, the transcript groups it
built: ~50,000 objects for the soak's 2,000-entry session — stopped the event loop
for 4-9 ms in ``make soak``, whichever thread dropped it, and longer for a longer session.

:func:`dismantle` hands such containers to one background thread ("reaper"), which empties
them an element at a time.  Between two elements the interpreter can change hands (after the
switch interval, :mod:`sidecar.interpreter.switching`), so another thread waits that long at
most, and each element frees only what hangs under it (one record, one group).

Only containers that nobody reads any more may be given: they are emptied in place.  Small ones
(fewer than :data:`SMALL` elements together) are left to reference counting where they are
dropped: for them the hand-over would cost more than it saves.
"""

from __future__ import annotations

import queue
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["SMALL", "dismantle"]

SMALL = 512
"""Fewer elements than this, over all the containers given at once, are freed in place."""

Part = list[Any] | dict[Any, Any]

_queue: queue.SimpleQueue[Sequence[Part]] | None = None
_started = threading.Lock()


def dismantle(parts: Sequence[Part]) -> None:
    """Empty ``parts`` (lists and dicts nobody reads any more) in the reaper thread, one
    element at a time; a total of fewer than :data:`SMALL` elements is left as it is."""
    if sum(len(part) for part in parts) < SMALL:
        return
    _reaper().put(parts)


def _reaper() -> queue.SimpleQueue[Sequence[Part]]:
    global _queue
    with _started:
        if _queue is None:
            _queue = queue.SimpleQueue()
            threading.Thread(target=_reap, args=(_queue,), name="reaper", daemon=True).start()
        return _queue


def _reap(work: queue.SimpleQueue[Sequence[Part]]) -> None:
    while True:
        parts = work.get()
        for part in parts:
            if isinstance(part, dict):
                while part:
                    part.popitem()
            else:
                while part:
                    part.pop()
        del parts
