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
    per_window: list[dict[str, list[float]]], seconds: float = 15.0
) -> tuple[list[dict[str, Any]], list[dict[str, list[float]]]]:
    windows = [
        {
            "index": i,
            "from_s": i * seconds,
            "to_s": (i + 1) * seconds,
            "methods": {m: _stats(v) for m, v in values.items()},
        }
        for i, values in enumerate(per_window)
    ]
    return windows, per_window


def test_the_p99_is_checked_on_the_first_and_last_minute_pooled() -> None:
    """One 15-second window's p99 is its second or third slowest request and varies by a
    quarter between windows with nothing drifting: every method is compared over the first
    windows pooled to a minute against the last minute, and over 500 requests at least (a
    method that comes ~20 times a window is pooled until then: its fifth slowest)."""
    slowest = [10.0, 16.0, 12.0, 14.0, 11.0, 13.0, 15.0, 12.0, 14.0, 16.0] * 6  # 15 minutes
    calm = [
        {"session/create": [5.0] * 19 + [slow], "session/append": [1.0] * 148 + [slow, slow]}
        for slow in slowest
    ]
    result = latency_drift(*_soak_windows(calm))
    create = result["session/create"]
    assert create["last_ratio"] == pytest.approx(1.6)  # one window: its slowest request
    head, tail = create["pooled"]["first"], create["pooled"]["last"]
    assert (head["windows"], head["seconds"], head["n"]) == (list(range(25)), 375.0, 500)
    assert tail["windows"] == list(range(35, 60))
    assert create["pooled"]["ratio"] == pytest.approx(1.0)  # 15.01 ms: the 6th/5th slowest
    assert create["met"]
    append = result["session/append"]
    assert append["pooled"]["first"]["windows"] == [0, 1, 2, 3]  # a minute: 600 requests
    assert append["pooled"]["last"]["windows"] == [56, 57, 58, 59]
    assert append["last_ratio"] == pytest.approx(16 / 10)
    assert append["pooled"]["ratio"] == pytest.approx(1.2)  # 12 -> 14.4 ms, near the 6th slowest
    assert append["worst_ratio"] == pytest.approx(1.6)
    assert append["met"]

    slower = [{m: [2.0 * v for v in vs] for m, vs in w.items()} for w in calm[30:]]
    result = latency_drift(*_soak_windows(calm[:30] + slower))
    assert result["session/create"]["pooled"]["ratio"] == pytest.approx(2.0)  # a drift: seen
    assert not result["session/create"]["met"]
    assert not result["session/append"]["met"]


def test_a_short_soak_pools_a_quarter_of_it_and_never_the_same_window_twice() -> None:
    calm = [{"session/append": [1.0] * 300} for _ in range(6)]
    append = latency_drift(*_soak_windows(calm, seconds=10.0))["session/append"]  # a minute
    assert append["pooled"]["first"]["windows"] == [0, 1]  # 15 s and 500 requests
    assert append["pooled"]["last"]["windows"] == [4, 5]
    windows, values = _soak_windows(calm * 3)  # 4.5 minutes of 15-second windows
    windows[3]["to_s"] -= 0.001  # the fourth window closed a millisecond early
    append = latency_drift(windows, values)["session/append"]
    assert append["pooled"]["first"]["windows"] == [0, 1, 2, 3]  # still the minute
    few = [{"session/create": [5.0] * 60} for _ in range(8)]  # 480: not enough for a p99
    result = latency_drift(*_soak_windows(few))
    assert result["session/create"]["pooled"] is None  # the one window against the other
    assert result["session/create"]["met"]


def test_the_machines_speed_over_the_two_pools_is_reported_beside_the_ratio() -> None:
    """A shared machine changes speed over minutes: the reference work's CPU time over the
    pooled windows is put beside the latency ratio — as context: the verdict is the latency
    ratio's, and nothing is divided by it."""
    calm = [{"session/append": [1.0] * 590 + [10.0] * 10} for _ in range(20)]
    slower = [{"session/append": [1.0] * 590 + [16.0] * 10} for _ in range(20)]
    windows, values = _soak_windows(calm + slower)
    for window in windows:
        window["machine_ms"] = 5.0 if window["index"] < 20 else 8.0  # 1.6x slower
    append = latency_drift(windows, values)["session/append"]
    assert append["pooled"]["ratio"] == pytest.approx(1.6)
    assert append["pooled"]["machine_ratio"] == pytest.approx(1.6)
    assert not append["met"]  # what is checked is the latency itself
    for window in windows[:4]:  # the first minute without the measurement (an old JSON)
        del window["machine_ms"]
    append = latency_drift(windows, values)["session/append"]
    assert append["pooled"]["machine_ratio"] is None
