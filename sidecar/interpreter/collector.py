"""The garbage collector's settings for a process that serves all day.

CPython's cyclic collector stops every thread while it runs, and a full (generation 2)
collection walks every container object alive: its pause grows with the heap.  With the
default thresholds (700, 10, 10) a request-scoped object that lives through a few dozen
allocations' worth of time — anything an assembly of tens of milliseconds builds — survives two
young collections and is promoted to the oldest generation, where it dies; that garbage makes
full collections frequent.  ``make soak`` measured about ten full collections per 15 seconds,
each 100-400 ms with 64 sessions loaded: 2-3 s of every 15 stopped, and the p99 of every
method made of those pauses (issue 20).

So both faces set, once (the figures are ``serve``'s; the freeze is ``serve``'s only):

- a young generation of :data:`YOUNG` allocations (not 700): request-scoped objects die young,
  collected by a cheap young collection, and are no longer promoted to be found by a full one;
- once the server has loaded, :func:`gc.freeze`: what exists then (the modules, pygls, the
  wire models, the tokenizer's tables) moves to a permanent generation that full collections
  no longer walk — it lives as long as the process anyway;
- full collections ten times rarer than CPython's (:data:`OLD`): the requests and runs leave
  no garbage cycles (``tests/unit/test_run_garbage.py``; after the warm-up, every collection
  of a 5-minute soak, young or full, found nothing), so a full collection is a walk of the
  whole heap for nothing — 110-185 ms with 64 sessions loaded, once every 75 s under the
  soak's load, and each one the p99 of its window.  Freezing what survives each full
  collection did not shorten the next: the loaded sessions turn over within a minute, so
  the heap walked is new anyway.

Objects are still freed by reference counting as before; only garbage cycles wait longer for
a young collection (bounded by :data:`YOUNG` allocations), or, the rare ones that reach the
oldest generation, for a full collection (bounded by :data:`OLD` middle collections).
"""

from __future__ import annotations

import gc
import logging

__all__ = ["OLD", "YOUNG", "freeze_loaded", "tune"]

logger = logging.getLogger(__name__)

#: Net container allocations between young collections (CPython's default: 700).
YOUNG = 20_000


#: Middle-generation collections between full ones (CPython's default: 10; CPython also waits
#: until a quarter of the oldest generation is new since the last full one).
OLD = 100


def tune() -> None:
    """Set the thresholds (at a face's start)."""
    _, middle, _ = gc.get_threshold()
    gc.set_threshold(YOUNG, middle, OLD)


def freeze_loaded() -> None:
    """Move everything alive now to the permanent generation (once the server has loaded)."""
    gc.collect()
    gc.freeze()
    logger.debug("collector: %d objects frozen", gc.get_freeze_count())
