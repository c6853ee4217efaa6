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

The interval costs the waiting thread, not the running one: the lane's job is asked to let go
once per wait of another thread whatever the interval, so a shorter one shortens every wait
and adds few switches (two computing threads, the loop and the lane, do switch more often).
A ``session/create`` lets go about a dozen times (mkdir, four fsyncs, a rename, opens and
closes) and its p99 was mostly those waits.  1 ms -> 0.25 ms, ``make soak`` (4 minutes, two
runs a side, alternating; median of the windows' p99 after the fill): ``session/append``
15.6 / 12.4 -> 11.9 / 9.1 ms, ``session/create`` 24.2 / 22.4 -> 18.8 / 13.9 ms;
``context/assemble`` and ``run/start`` the same within the noise, as are the runs completed
(8,670 / 9,381 -> 8,695 / 9,420) and the CPU used (61-68%).
"""

from __future__ import annotations

import sys

__all__ = ["INTERVAL_S", "tune"]

#: The switch interval both faces run with, seconds (CPython's default: 0.005).
INTERVAL_S = 0.00025


def tune() -> None:
    """Set the switch interval (at a face's start)."""
    sys.setswitchinterval(INTERVAL_S)
