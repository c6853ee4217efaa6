"""How long each request took inside the sidecar, by method (``server/info``'s ``latencies``).

A request is timed from the moment its parsed body is dispatched to the moment its answer is
handed to the transport: its handler, the turns of the loop it waited for and the worker
threads it used, not the pipe nor the client.  A client that times the same requests sees
which side its latency comes from (``make soak`` reports both).

Counts go into fixed buckets, each bound 1.25x the previous from 0.05 ms to about 40 s, so a
percentile read from them is within 25%; the counts only grow, and a client diffs two readings
for a period's figures.  Recording is a dictionary lookup and a bisection: no allocation once
a method has its row.
"""

from __future__ import annotations

import bisect
import time

__all__ = ["BOUNDS_MS", "Latencies"]

#: Requests in flight remembered at most (one never answered must not be kept for ever).
MAX_IN_FLIGHT = 10_000

#: Upper bounds of the buckets, milliseconds.
BOUNDS_MS: tuple[float, ...] = tuple(round(0.05 * 1.25**k, 4) for k in range(62))


class Latencies:
    """Bucketed request latencies by method (see the module docstring)."""

    __slots__ = ("_counts", "_started")

    def __init__(self) -> None:
        self._counts: dict[str, list[int]] = {}
        self._started: dict[object, tuple[str, float]] = {}

    def started(self, msg_id: object, method: str) -> None:
        """A request was dispatched."""
        started = self._started
        if len(started) >= MAX_IN_FLIGHT:
            del started[next(iter(started))]  # the oldest
        started[msg_id] = (method, time.perf_counter())

    def answered(self, msg_id: object) -> None:
        """The request's answer was handed to the transport (unknown ids are ignored)."""
        begun = self._started.pop(msg_id, None)
        if begun is not None:
            self.since(*begun)

    def since(self, method: str, began: float) -> None:
        """Count a request of ``method`` answered now, dispatched at ``began``
        (:func:`time.perf_counter`)."""
        self.record(method, (time.perf_counter() - began) * 1000)

    def record(self, method: str, ms: float) -> None:
        row = self._counts.get(method)
        if row is None:
            row = self._counts[method] = [0] * (len(BOUNDS_MS) + 1)
        row[bisect.bisect_left(BOUNDS_MS, ms)] += 1

    def wire(self) -> dict[str, object]:
        """``RequestLatencies`` as wire JSON."""
        return {
            "boundsMs": list(BOUNDS_MS),
            "counts": {method: list(row) for method, row in sorted(self._counts.items())},
        }
