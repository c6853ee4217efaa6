"""A debugging aid for long runs: what grows in memory, by type and by allocating traceback.

Off unless ``$CONTEXT_SIDECAR_MEMORY_TRACE`` names a file when ``serve`` starts; then it costs
nothing until the process receives ``SIGUSR1``.  Each ``SIGUSR1`` wakes a daemon thread that
appends to the file:

- a census of the live objects the garbage collector tracks (containers and class instances:
  dicts, tuples, dataclasses...), by type: count and shallow size, and the types that grew
  most since the previous dump and since the first one.  Cheap (a walk of ``gc.get_objects()``:
  a fraction of a second), and usually enough: a structure that grows shows up as a type whose
  count only goes up (``_SessionMemory`` +1 per session, ``Unit`` +n per request kept...);
- the garbage collector's pauses since the previous dump, per generation (count, total,
  longest): a heap that grows makes every full collection longer, and those pauses stop the
  event loop and every worker thread (a request's tail latency);
- with ``$CONTEXT_SIDECAR_MEMORY_TRACE_FRAMES=N`` (N > 0), :mod:`tracemalloc` too, started at
  the first dump with N frames per allocation (so imports and the tokenizer's tables, loaded
  once, are not traced): the tracebacks whose allocations grew most since the previous dump
  and since the first one.  Slow (a soak under it serves several times fewer requests), for
  finding *where* a type found by the census is allocated.

``python -m bench.soak --memory-trace FILE`` sets the variables and signals the sidecar at the
end of the warm-up and of every window.  Not part of the protocol: no method, no capability.
"""

from __future__ import annotations

import gc
import linecache
import logging
import signal
import sys
import threading
import time
import tracemalloc
from collections import Counter
from typing import TYPE_CHECKING

from sidecar.defaults import MEMORY_TRACE_ENV, MEMORY_TRACE_FRAMES_ENV

if TYPE_CHECKING:
    from pathlib import Path
    from types import FrameType

__all__ = ["start"]

logger = logging.getLogger(__name__)

#: Lines per section of a dump.
TOP = 25


def _census() -> tuple[Counter[str], Counter[str]]:
    """(count, shallow bytes) of the live gc-tracked objects, by qualified type name."""
    counts: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    for obj in gc.get_objects():
        kind = type(obj)
        name = f"{kind.__module__}.{kind.__qualname__}"
        counts[name] += 1
        sizes[name] += sys.getsizeof(obj, 0)
    return counts, sizes


def _census_growth(
    out: list[str],
    title: str,
    now: tuple[Counter[str], Counter[str]],
    then: tuple[Counter[str], Counter[str]],
) -> None:
    counts, sizes = now
    grown = [(name, counts[name] - then[0][name]) for name in counts]
    grown = sorted((g for g in grown if g[1] > 0), key=lambda g: -g[1])[:TOP]
    out.append(f"--- objects by type, {title}: the {len(grown)} types that grew most")
    for name, diff in grown:
        out.append(
            f"{diff:+9d} {name} ({counts[name]} now, {sizes[name] / 1e6:.2f} MB shallow, "
            f"{(sizes[name] - then[1][name]) / 1e6:+.2f} MB)"
        )


class _Pauses:
    """The collector's pauses by generation, from ``gc.callbacks``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: float | None = None
        self._stats: dict[int, list[float]] = {}

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started is not None:
            pause = time.perf_counter() - self._started
            with self._lock:
                self._stats.setdefault(info["generation"], []).append(pause)

    def take(self) -> str:
        with self._lock:
            stats, self._stats = self._stats, {}
        parts = [
            f"gen{gen} {len(p)}x, {1000 * sum(p):.0f} ms in all, longest {1000 * max(p):.1f} ms"
            for gen, p in sorted(stats.items())
        ]
        return "--- collector pauses since the previous dump: " + ("; ".join(parts) or "none")


def _filtered(snapshot: tracemalloc.Snapshot) -> tracemalloc.Snapshot:
    return snapshot.filter_traces(
        (
            tracemalloc.Filter(False, tracemalloc.__file__),
            tracemalloc.Filter(False, linecache.__file__),
            tracemalloc.Filter(False, __file__),
            tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
            tracemalloc.Filter(False, "<frozen importlib._bootstrap_external>"),
            tracemalloc.Filter(False, "<unknown>"),
        )
    )


def _traced_growth(
    out: list[str], title: str, now: tracemalloc.Snapshot, then: tracemalloc.Snapshot
) -> None:
    stats = [s for s in now.compare_to(then, "traceback") if s.size_diff > 0][:TOP]
    out.append(f"--- allocations, {title}: the {len(stats)} tracebacks that grew most")
    for stat in stats:
        out.append(
            f"+{stat.size_diff / 1e6:.3f} MB ({stat.size / 1e6:.3f} MB now), "
            f"{stat.count_diff:+d} blocks ({stat.count} now)"
        )
        out.extend(f"    {line}" for line in stat.traceback.format(most_recent_first=True))


def start(path: Path, frames: int = 0) -> None:
    """Dump the growth to ``path`` on every ``SIGUSR1`` (see the module docstring)."""
    wanted = threading.Event()
    started = time.monotonic()
    pauses = _Pauses()
    gc.callbacks.append(pauses)

    def dump_forever() -> None:
        first: tuple[Counter[str], Counter[str]] | None = None
        previous = first
        first_traced: tracemalloc.Snapshot | None = None
        previous_traced = first_traced
        index = 0
        while True:
            wanted.wait()
            wanted.clear()
            at = time.monotonic() - started
            census = _census()
            out = [f"=== dump {index} at {at:.1f} s: {sum(census[0].values()):,} objects tracked"]
            out.append(pauses.take())
            if previous is not None and first is not None:
                _census_growth(out, "since the previous dump", census, previous)
                if first is not previous:
                    _census_growth(out, "since the first dump", census, first)
            first, previous = first or census, census
            if frames > 0 and not tracemalloc.is_tracing():
                tracemalloc.start(frames)
            elif frames > 0:
                snapshot = _filtered(tracemalloc.take_snapshot())
                traced, peak = tracemalloc.get_traced_memory()
                out.append(f"--- traced {traced / 1e6:.1f} MB (peak {peak / 1e6:.1f} MB)")
                if previous_traced is not None and first_traced is not None:
                    _traced_growth(out, "since the previous dump", snapshot, previous_traced)
                    if first_traced is not previous_traced:
                        _traced_growth(out, "since the first dump", snapshot, first_traced)
                first_traced, previous_traced = first_traced or snapshot, snapshot
            with open(path, "a", encoding="utf-8") as file:
                file.write("\n".join(out) + "\n\n")
            index += 1

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        wanted.set()

    threading.Thread(target=dump_forever, name="memory-trace", daemon=True).start()
    signal.signal(signal.SIGUSR1, on_signal)
    logger.warning(
        "%s: each SIGUSR1 appends what grew in memory to %s (%s=%d)",
        MEMORY_TRACE_ENV,
        path,
        MEMORY_TRACE_FRAMES_ENV,
        frames,
    )
