"""Async helpers the core needs.

``run_to_completion`` protects a commit (write + fsync + publish in memory) from
cancellation.  pygls cancels a handler's asyncio task natively on ``$/cancelRequest`` and on
``shutdown``; anyio shields do not stop a native ``Task.cancel()``.  If a commit were torn
between its fsync and its publish, the file and the in-memory index would disagree and the
next append would reuse seq numbers.  So the commit runs in its own task; if the caller is
cancelled meanwhile, the cancellation is absorbed, the commit finishes, and the caller
returns the real result (LSP allows answering a cancelled request normally when the work was
already done, and for a durable write that is the only truthful answer).

``in_thread`` is ``anyio.to_thread.run_sync``: for work that waits (a disk, a subprocess).
``in_cpu_lane`` is for work that computes (assembly, tokenising, lowering): one such job at a
time per event loop.  The interpreter runs one thread at a time anyway, so a second job
beside the first adds no throughput; what it adds is a thread the event loop must win the
interpreter back from whenever it wakes.  CPython hands the interpreter over after 5 ms to
any of the threads that wait for it, not to the one that asked; with four assemblies in
threads (``make soak``: three runs and a ``context/assemble``) the loop lost several turns
per wake-up, and a 1 ms ``session/append`` answered in 50.  With one job in the lane it
waits for one thread at most, and the jobs' own latency is first-come first-served instead
of all of them slowed together.

None of these imports asyncio or anyio until it is called: the store imports this module,
and ``serve`` opens the store, and answers its first requests from it, before the event loop
exists (:mod:`sidecar.rpc.first_requests`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, TypeVar, TypeVarTuple

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Awaitable, Callable

    from anyio import CapacityLimiter
    from anyio.lowlevel import RunVar

__all__ = ["in_cpu_lane", "in_lane", "in_thread", "run_to_completion"]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


async def in_thread(fn: Callable[[*Ts], T], *args: *Ts) -> T:
    """Run ``fn(*args)`` in a worker thread (``anyio.to_thread.run_sync``) and return its
    result."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(fn, *args)


async def in_cpu_lane(fn: Callable[[*Ts], T], *args: *Ts) -> T:
    """Run ``fn(*args)`` in a worker thread, after the lane's previous jobs (see above)."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(_lane_job, fn, *args, limiter=_lane())


def in_lane() -> bool:
    """Whether this thread runs a CPU-lane job now.  The lane never waits for an fsync:
    every assembly queues behind it (``tests/unit/test_lane_waits_for_no_fsync.py``)."""
    return getattr(_HERE, "lane", False)


def _lane_job(fn: Callable[[*Ts], T], *args: *Ts) -> T:
    from sidecar.interpreter.collector import deferring

    _HERE.lane = True
    try:
        return deferring(fn, *args)
    finally:
        _HERE.lane = False


_HERE = threading.local()


def _lane() -> CapacityLimiter:
    """This event loop's CPU lane (one token), made on first use."""
    import anyio
    from anyio.lowlevel import RunVar

    global _LANE
    if _LANE is None:
        _LANE = RunVar("sidecar_cpu_lane")
    try:
        return _LANE.get()
    except LookupError:
        lane = anyio.CapacityLimiter(1)
        _LANE.set(lane)
        return lane


_LANE: RunVar[CapacityLimiter] | None = None


async def run_to_completion(fn: Callable[[], Awaitable[T]]) -> T:
    """Await ``fn()`` in a task of its own that the caller's cancellation cannot interrupt."""
    import asyncio

    task: asyncio.Task[T] = asyncio.get_running_loop().create_task(_call(fn))
    absorbed = 0
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done() and task.cancelled():
                raise  # the loop itself is going down
            absorbed += 1
    current = asyncio.current_task()
    if current is not None:
        for _ in range(absorbed):
            current.uncancel()
    return result


async def _call(fn: Callable[[], Awaitable[T]]) -> T:
    return await fn()
