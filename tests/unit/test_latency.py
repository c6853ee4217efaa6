"""``server/info``'s ``latencies`` (``sidecar/methods/latency.py``) and how ``make soak`` reads
them (``bench/soak.py``): the buckets, the in-flight bound, the percentile of a period."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest

from bench.soak import _stats, inside_stats, latency_drift
from sidecar.methods.latency import BOUNDS_MS, MAX_IN_FLIGHT, Latencies


def test_the_bounds_grow_by_a_quarter_from_a_twentieth_of_a_millisecond_to_forty_seconds() -> None:
    assert BOUNDS_MS[0] == 0.05
    assert all(abs(b / a - 1.25) < 0.01 for a, b in pairwise(BOUNDS_MS))
    assert 30_000 < BOUNDS_MS[-1] < 60_000


def test_a_request_counts_in_the_first_bucket_whose_bound_it_does_not_exceed() -> None:
    latencies = Latencies()
    for ms in (0.0, 0.05, 0.0501, BOUNDS_MS[10], BOUNDS_MS[10] + 1e-6, BOUNDS_MS[-1] * 2):
        latencies.record("m", ms)
    counts = latencies.wire()["counts"]
    assert isinstance(counts, dict)
    row = counts["m"]
    assert len(row) == len(BOUNDS_MS) + 1
    assert row[0] == 2  # 0 and 0.05 itself
    assert row[1] == 1
    assert row[10] == 1
    assert row[11] == 1
    assert row[-1] == 1  # over the last bound
    assert sum(row) == 6


def test_only_answered_requests_count_and_in_flight_ones_are_bounded() -> None:
    latencies = Latencies()
    latencies.started(1, "session/append")
    latencies.answered(1)
    latencies.answered(1)  # twice: counted once
    latencies.answered("never started")
    latencies.started(2, "session/create")  # in flight: not counted yet
    counts = latencies.wire()["counts"]
    assert isinstance(counts, dict)
    assert {m: sum(row) for m, row in counts.items()} == {"session/append": 1}
    for i in range(MAX_IN_FLIGHT + 5):  # never answered: the oldest are forgotten
        latencies.started(("x", i), "run/start")
    assert len(latencies._started) == MAX_IN_FLIGHT
    latencies.answered(("x", MAX_IN_FLIGHT + 4))
    latencies.answered(2)  # forgotten: one of the oldest
    counts = latencies.wire()["counts"]
    assert isinstance(counts, dict)
    assert {m: sum(row) for m, row in counts.items()} == {"session/append": 1, "run/start": 1}


def test_the_soak_reads_a_window_as_the_difference_of_two_readings() -> None:
    latencies = Latencies()
    for _ in range(50):
        latencies.record("session/append", 1.0)
    before = latencies.wire()
    for _ in range(99):
        latencies.record("session/append", 1.0)
    latencies.record("session/append", 20.0)
    latencies.record("session/create", 3.0)
    window = inside_stats(before, latencies.wire())
    append = window["session/append"]
    assert append["n"] == 100  # not 150: the first 50 were before
    p50, p99 = append["p50_ms"], append["p99_ms"]
    assert p50 is not None and 1.0 <= p50 < 1.25
    assert p99 is not None and 1.0 <= p99 < 1.25  # the 99th of 100 is still a 1 ms one
    latencies.record("session/append", 20.0)
    latencies.record("session/append", 20.0)
    p99_after = inside_stats(before, latencies.wire())["session/append"]["p99_ms"]
    assert p99_after is not None and 20.0 <= p99_after < 25.0
    assert window["session/create"]["n"] == 1
    assert inside_stats(None, latencies.wire())["session/append"]["n"] == 152


def _soak_windows(
    per_window: list[dict[str, list[float]]],
) -> tuple[list[dict[str, Any]], list[dict[str, list[float]]]]:
    windows = [
        {"index": i, "methods": {m: _stats(v) for m, v in values.items()}}
        for i, values in enumerate(per_window)
    ]
    return windows, per_window


def test_a_method_with_few_requests_a_window_is_checked_on_pooled_windows() -> None:
    """``session/create`` comes ~20 times a window: its p99 there is its slowest request,
    which varies by half between windows with nothing drifting.  Such a method is compared
    over the first windows pooled to 100 requests against the last windows pooled the same
    way (a p99 of 100: the second slowest); a method with enough requests a window is still
    compared window to window."""
    slowest = [10.0, 16.0, 12.0, 14.0, 11.0, 13.0, 15.0, 12.0, 14.0, 16.0]
    calm = [
        {"session/create": [5.0] * 19 + [slow], "session/append": [1.0] * 150} for slow in slowest
    ]
    result = latency_drift(*_soak_windows(calm))
    create = result["session/create"]
    assert create["last_ratio"] == pytest.approx(1.6)  # one window: its slowest request
    assert create["pooled"]["first"] == {"windows": [0, 1, 2, 3, 4], "n": 100, "p99_ms": 14.0}
    assert create["pooled"]["last"] == {"windows": [5, 6, 7, 8, 9], "n": 100, "p99_ms": 15.0}
    assert create["met"]
    assert result["session/append"]["pooled"] is None  # 150 a window: its own p99
    assert result["session/append"]["met"]

    slower = [{m: [2.0 * v for v in vs] for m, vs in w.items()} for w in calm[5:]]
    result = latency_drift(*_soak_windows(calm[:5] + slower))
    assert result["session/create"]["pooled"]["ratio"] == pytest.approx(30 / 14)  # a drift: seen
    assert not result["session/create"]["met"]
    assert not result["session/append"]["met"]
