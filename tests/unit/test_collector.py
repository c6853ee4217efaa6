"""The interpreter's settings for both faces (``sidecar/interpreter/``): with CPython's defaults the
soak spent 2-3 s of every 15 in full collections that grew with the heap (issue 20)."""

from __future__ import annotations

import gc
import sys
import threading
import time
import weakref
from collections.abc import Iterator

import anyio
import pytest

from sidecar.aio import in_cpu_lane
from sidecar.interpreter import collector, switching
from sidecar.interpreter.collector import (
    OLD,
    YOUNG,
    Survivors,
    deferring,
    freeze_loaded,
    tune,
)


@pytest.fixture
def restored() -> Iterator[None]:
    thresholds = gc.get_threshold()
    try:
        yield
    finally:
        installed = collector._SURVIVORS
        if installed is not None:  # tune() installs it for the process: not for the tests'
            gc.callbacks.remove(installed)
            collector._SURVIVORS = None
        gc.unfreeze()
        gc.set_threshold(*thresholds)


@pytest.fixture
def survivors() -> Iterator[Survivors]:
    """A :class:`Survivors` in ``gc.callbacks`` (sweeping past 50 new memory blocks)."""
    gc.collect()
    gc.unfreeze()
    found = Survivors(growth=0.0, floor=50)
    gc.callbacks.append(found)
    try:
        yield found
    finally:
        gc.callbacks.remove(found)
        gc.unfreeze()


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


def _in_a_generation(obj: object) -> bool:
    """Whether a collection would walk ``obj`` (frozen objects are in none)."""
    return any(o is obj for o in gc.get_objects())


@pytest.mark.usefixtures("restored")
def test_request_scoped_objects_die_young() -> None:
    tune()
    assert gc.get_threshold()[0] == YOUNG
    assert gc.get_threshold()[2] == OLD >= 100  # full collections find nothing: rarely
    gc.collect()
    # what a request builds and drops within a few thousand allocations is never promoted:
    # no young collection runs while it lives, so no full collection has it to walk
    before = gc.get_stats()[0]["collections"]
    request = [{"seq": i, "content": [{"text": str(i)}]} for i in range(YOUNG // 4)]
    del request
    assert gc.get_stats()[0]["collections"] == before


@pytest.mark.usefixtures("restored")
def test_the_loaded_server_is_frozen_out_of_full_collections() -> None:
    loaded = [{"module": i} for i in range(1_000)]
    freeze_loaded()
    assert gc.get_freeze_count() >= len(loaded)


def test_serve_takes_the_interpreter_back_from_a_worker_within_a_quarter_millisecond() -> None:
    interval = sys.getswitchinterval()
    try:
        switching.tune()
        assert sys.getswitchinterval() == switching.INTERVAL_S <= 0.00025
    finally:
        sys.setswitchinterval(interval)


def test_what_survives_a_collection_is_frozen_not_promoted(survivors: Survivors) -> None:
    # a loaded session's records live across many young collections: each would promote them,
    # and every tenth (a middle one) walk them again; frozen, no later collection walks them
    loaded = [{"seq": i, "content": [{"text": str(i)}]} for i in range(100)]
    assert _in_a_generation(loaded)
    gc.collect(0)
    assert not _in_a_generation(loaded)
    assert not _in_a_generation(loaded[42]["content"])
    gc.collect(1)  # a middle collection has nothing of it to walk
    assert not _in_a_generation(loaded)
    assert survivors.sweeps == 0  # 100 lists and dicts...: past the limit, but no thread here
    assert survivors.due.is_set()


def test_a_cycle_that_dies_frozen_is_collected_by_the_sweep(survivors: Survivors) -> None:
    survivors.floor = 10_000_000  # not due yet
    leaked = Node()
    gone = weakref.ref(leaked)
    gc.collect(0)  # it survives (still referenced): frozen
    del leaked
    gc.collect()
    assert gone() is not None  # a frozen cycle waits for the sweep: that is the price
    survivors.floor = 50
    sweeper = threading.Thread(target=survivors.serve, daemon=True)
    sweeper.start()
    kept = [[i] for i in range(1_000)]  # the heap grows past the limit...
    gc.collect(0)
    deadline = time.monotonic() + 10
    while survivors.sweeps == 0 and time.monotonic() < deadline:  # ... and the thread sweeps
        time.sleep(0.01)
    assert gone() is None
    assert survivors.sweeps == 1
    assert not _in_a_generation(kept)  # what the sweep found alive is frozen again
    assert not survivors.due.is_set()


@pytest.mark.usefixtures("restored")
def test_no_collection_runs_while_the_cpu_lane_computes() -> None:
    # An assembly holds tens of thousands of objects while it runs and drops most of them when
    # it ends; a young collection in its middle walked them all, with every thread stopped
    # (25-58 ms once 64 sessions were loaded: the slowest pauses of ``make soak``).  Collections
    # wait for the job's end, when only what it keeps is left to walk.
    gc.set_threshold(YOUNG, 10, OLD)
    starts: list[str] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            starts.append(threading.current_thread().name)

    def job() -> tuple[int, int, int]:
        before = len(starts)
        held = [{"i": i} for i in range(3 * YOUNG)]  # past the young threshold, three times
        return before, len(starts), len(held)

    gc.collect()
    gc.callbacks.append(seen)
    try:
        before, after, held = anyio.run(in_cpu_lane, job)
        assert gc.isenabled()
        kept = [{"i": i} for i in range(2 * YOUNG)]  # and after it, collections as before
    finally:
        gc.callbacks.remove(seen)
    assert held == 3 * YOUNG
    assert after == before, f"collections during the job: {starts[before:after]}"
    assert len(starts) > after
    assert len(kept) == 2 * YOUNG


def test_collections_stay_off_until_the_last_job_beside_them_ends() -> None:
    inside = threading.Event()
    release = threading.Event()
    seen: list[bool] = []

    def long_job() -> None:
        inside.set()
        release.wait(10)

    worker = threading.Thread(target=deferring, args=(long_job,))
    try:
        worker.start()
        assert inside.wait(10)
        deferring(lambda: None)  # a short job beside the long one ends first
        seen.append(gc.isenabled())
    finally:
        release.set()
        worker.join(10)
    assert seen == [False]
    assert gc.isenabled()
    gc.disable()  # off before: left off
    try:
        deferring(lambda: None)
        assert not gc.isenabled()
    finally:
        gc.enable()
