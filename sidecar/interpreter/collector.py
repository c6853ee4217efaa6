"""The garbage collector's settings for a process that serves all day.

CPython's cyclic collector stops every thread while it runs, and a full (generation 2)
collection walks every container object alive: its pause grows with the heap.  With the
default thresholds (700, 10, 10) a request-scoped object that lives through a few dozen
allocations' worth of time — anything an assembly of tens of milliseconds builds — survives two
young collections and is promoted to the oldest generation, where it dies; that garbage makes
full collections frequent.  ``make soak`` measured about ten full collections per 15 seconds,
each 100-400 ms with 64 sessions loaded: 2-3 s of every 15 stopped, and the p99 of every
method made of those pauses (issue 20).

So both faces set, once (the figures are ``serve``'s; the freeze of the loaded server is
``serve``'s only):

- a young generation of :data:`YOUNG` allocations (not 700): request-scoped objects die young,
  collected by a cheap young collection, and are no longer promoted to be found by a full one;
- once the server has loaded, :func:`gc.freeze`: what exists then (the modules, pygls, the
  wire models, the tokenizer's tables) moves to a permanent generation that full collections
  no longer walk — it lives as long as the process anyway;
- full collections ten times rarer than CPython's (:data:`OLD`): the requests and runs leave
  no garbage cycles (``tests/unit/test_run_garbage.py``; after the warm-up, every collection
  of a 5-minute soak, young or full, found nothing), so a full collection is a walk of the
  whole heap for nothing — 110-185 ms with 64 sessions loaded, once every 75 s under the
  soak's load, and each one the p99 of its window.  (Freezing only what survives each
  full collection did not shorten the next: the loaded sessions turn over within a minute,
  so the heap walked is new anyway; hence the next point);
- what survives any collection is frozen at once (:class:`Survivors`), not promoted: an
  object is walked by one collection in its life, not by a young one, then by a middle one
  (every tenth young collection: 40-60 ms with 64 sessions loaded, twice a window, the
  slowest pauses left after the ones above), then by a full one.  The survivors are what
  lives across 20,000 allocations: a loaded session's records and groups, and what the
  assembly in progress holds; they die by reference counting, frozen or not.  A 4-minute
  soak: no middle collection left, young ones unchanged, the p99 of ``context/assemble`` and
  ``run/start`` in the later windows about a fifth lower.
- no automatic collection while the CPU lane computes (:func:`deferring`, around every job of
  :func:`sidecar.aio.in_cpu_lane`): an assembly holds tens of thousands of objects while it
  runs and drops most of them when it ends.  A young collection in its middle walked them all
  with every thread stopped — 25-58 ms once 64 sessions were loaded, the event loop's longest
  stalls — and froze them as survivors.  After the job only what it keeps is left to walk.
  That is also what made a young generation of :data:`YOUNG` = 5,000 pay: with the lane's
  jobs out of the way, its collections walk survivors only, a quarter as many each time.
  ``make soak`` (4-minute probe runs, after the first 75 s): stalls of the event loop over 20
  ms 18-19 -> 0-2, the longest 45-54 -> 17-19 ms.  The price is paid before the loaded
  sessions fill, while many objects survive: pauses four times as frequent hit more requests,
  and the first window's p99 for appends rose from 17-19 to 24-26 ms
  (``docs/robustness.md``).

Objects are still freed by reference counting as before; only garbage cycles wait longer: for
a young collection (bounded by :data:`YOUNG` allocations) if they die young, else for the
sweep — one full collection of everything, frozen included — that runs when the interpreter's
memory blocks have grown by :data:`SWEEP_GROWTH` since the last one (and by
:data:`SWEEP_FLOOR` blocks at least).  A cycle that leaks therefore costs at most about the
live heap again before it is collected; none does in the soak, where no collection after the
warm-up found garbage.  The sweep runs on a thread of its own ("collector"): a collection
cannot start inside another's callback.  Growth is read from :func:`sys.getallocatedblocks`
(a walk of pymalloc's pools: 0.1 ms), not from :func:`gc.get_freeze_count`, which walks every
frozen object: read after every collection, that walk cost the soak a quarter of its
throughput.
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
from typing import TYPE_CHECKING, Any, TypeVar, TypeVarTuple

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

__all__ = [
    "OLD",
    "SWEEP_FLOOR",
    "SWEEP_GROWTH",
    "YOUNG",
    "Survivors",
    "deferring",
    "freeze_loaded",
    "tune",
]

logger = logging.getLogger(__name__)

#: Net container allocations between young collections (CPython's default: 700; 20,000
#: until collections waited for the CPU lane's jobs, see above).
YOUNG = 5_000


#: Middle-generation collections between full ones (CPython's default: 10; CPython also waits
#: until a quarter of the oldest generation is new since the last full one).
OLD = 100

#: The sweep runs once the interpreter's memory blocks have grown by this fraction since the
#: last sweep...
SWEEP_GROWTH = 1.0
#: ... and by this many blocks at least (the first ones, after a small start-up heap).
SWEEP_FLOOR = 1_000_000


class Survivors:
    """Freezes what survives each collection (a ``gc.callbacks`` entry), and sweeps the
    frozen heap — unfreeze, a full collection, freeze — once the interpreter's memory blocks
    have grown by ``growth`` (and by ``floor`` blocks) since the last sweep."""

    def __init__(self, growth: float = SWEEP_GROWTH, floor: int = SWEEP_FLOOR) -> None:
        self.growth = growth
        self.floor = floor
        self.base = sys.getallocatedblocks()
        """The interpreter's memory blocks after the last sweep (or the start)."""
        self.due = threading.Event()
        """Set when a sweep is due (the "collector" thread waits for it)."""
        self.sweeps = 0
        self._sweeping = False

    @property
    def limit(self) -> int:
        """The memory blocks past which a sweep is due."""
        return self.base + max(self.floor, int(self.base * self.growth))

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or self._sweeping:
            return
        gc.freeze()
        if sys.getallocatedblocks() > self.limit:
            self.due.set()

    def rebase(self) -> None:
        """Count the heap as it is now as swept (after :func:`freeze_loaded`)."""
        self.base = sys.getallocatedblocks()

    def sweep(self) -> int:
        """Collect everything, frozen included, then freeze what is left: the unreachable
        objects found."""
        self._sweeping = True
        try:
            gc.unfreeze()
            found = gc.collect()
            gc.freeze()
        finally:
            self._sweeping = False
        self.due.clear()
        self.sweeps += 1
        self.rebase()
        logger.info("collector: swept, %d unreachable, %d blocks", found, self.base)
        return found

    def serve(self) -> None:
        """The "collector" thread: sweep whenever one is due."""
        while True:
            self.due.wait()
            self.sweep()


_SURVIVORS: Survivors | None = None

_DEFERRAL = threading.Lock()
_deferring = 0
_resume = False


def deferring(fn: Callable[[*Ts], T], *args: *Ts) -> T:
    """``fn(*args)`` with automatic collections off until it returns (and every other
    ``deferring`` call running beside it), then back on unless they were off before."""
    global _deferring, _resume
    with _DEFERRAL:
        if _deferring == 0:
            _resume = gc.isenabled()
            gc.disable()
        _deferring += 1
    try:
        return fn(*args)
    finally:
        with _DEFERRAL:
            _deferring -= 1
            if _deferring == 0 and _resume:
                gc.enable()


def tune() -> None:
    """Set the thresholds and freeze what survives each collection (at a face's start;
    once per process)."""
    global _SURVIVORS
    _, middle, _ = gc.get_threshold()
    gc.set_threshold(YOUNG, middle, OLD)
    if _SURVIVORS is None:
        _SURVIVORS = Survivors()
        gc.callbacks.append(_SURVIVORS)
        threading.Thread(target=_SURVIVORS.serve, name="collector", daemon=True).start()


def freeze_loaded() -> None:
    """Move everything alive now to the permanent generation (once the server has loaded)."""
    gc.collect()
    gc.freeze()
    if _SURVIVORS is not None:
        _SURVIVORS.rebase()
    if logger.isEnabledFor(logging.DEBUG):  # the count walks every frozen object
        logger.debug("collector: %d objects frozen", gc.get_freeze_count())
