"""How soon the event loop gets the interpreter back from a worker thread.

CPython runs one thread at a time; a thread that waits for the interpreter asks the running
one to let go after the switch interval (5 ms by default).  A face's event loop lets go
at every wait — each ``select``, each fsync of an append, each write to the client — and must
win the interpreter back afterwards from the thread computing in the CPU lane
(``sidecar/aio.py``: an assembly, a tokenisation).  An append that waits three times thus
waited up to 15 ms for a 1 ms job.  Both faces set the interval to :data:`INTERVAL_S`: the
lane's job lets go a little more often (only when the loop asks), the loop waits at most
that long each time.

``make soak`` (5 minutes, lane in place, median of the windows' p99): ``session/append``
37.7 -> 30.0 ms, ``session/create`` 50.3 -> 41.0 ms; in its first window, 27 -> 15 ms.
"""

from __future__ import annotations

import sys

__all__ = ["INTERVAL_S", "tune"]

#: The switch interval both faces run with, seconds (CPython's default: 0.005).
INTERVAL_S = 0.001


def tune() -> None:
    """Set the switch interval (at a face's start)."""
    sys.setswitchinterval(INTERVAL_S)
