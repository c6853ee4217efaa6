"""``server/info``'s ``latencies`` (``sidecar/methods/latency.py``) and how ``make soak`` reads
them (``bench/soak.py``): the buckets, the in-flight bound, the percentile of a period."""

from __future__ import annotations

from itertools import pairwise

from bench.soak import inside_stats
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
