"""The interpreter's settings for both faces (``sidecar/interpreter/``): with CPython's defaults the
soak spent 2-3 s of every 15 in full collections that grew with the heap (issue 20)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from sidecar.interpreter import switching
from sidecar.interpreter.collector import OLD, YOUNG, freeze_loaded, tune


@pytest.fixture
def restored() -> Iterator[None]:
    thresholds = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


@pytest.mark.usefixtures("restored")
def test_request_scoped_objects_die_young() -> None:
    tune()
    assert gc.get_threshold()[0] == YOUNG
    assert gc.get_threshold()[2] == OLD >= 100  # full collections find nothing: rarely
    gc.collect()
    # what a request builds and drops within a few thousand allocations is never promoted:
    # no young collection runs while it lives, so no full collection has it to walk
    before = gc.get_stats()[0]["collections"]
    request = [{"seq": i, "content": [{"text": str(i)}]} for i in range(2_000)]
    del request
    assert gc.get_stats()[0]["collections"] == before


@pytest.mark.usefixtures("restored")
def test_the_loaded_server_is_frozen_out_of_full_collections() -> None:
    loaded = [{"module": i} for i in range(1_000)]
    freeze_loaded()
    assert gc.get_freeze_count() >= len(loaded)


def test_serve_takes_the_interpreter_back_from_a_worker_thread_within_a_millisecond() -> None:
    interval = sys.getswitchinterval()
    try:
        switching.tune()
        assert sys.getswitchinterval() == switching.INTERVAL_S <= 0.001
    finally:
        sys.setswitchinterval(interval)
