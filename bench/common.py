"""What every benchmark suite shares: the row model, statistics, the table and the JSON file.

A suite is a module with ``run(options: Options) -> list[Row]``.  Each :class:`Row` is one
measured fact: our figure, the peer's figure measured in the same run on the same machine, the
ratio (always "how many times better we are", whichever direction is better for the unit) and
the DESIGN.md §7 target it answers, if any.
"""

from __future__ import annotations

import math
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "Options",
    "Row",
    "Target",
    "machine",
    "median_ms",
    "percentile",
    "render_table",
    "samples_ms",
]

Better = Literal["lower", "higher"]


@dataclass(frozen=True, slots=True)
class Options:
    #: Repetitions per measurement; every figure is a median (or a percentile) of them.
    runs: int = 5
    #: Smaller sizes and fewer samples, for a smoke run (``make bench-quick``).
    quick: bool = False


@dataclass(frozen=True, slots=True)
class Target:
    """A DESIGN.md §7 target: ``ours <= value`` (better lower) or ``ours >= value``."""

    value: float
    text: str

    def met(self, ours: float, better: Better) -> bool:
        return ours <= self.value if better == "lower" else ours >= self.value


@dataclass(frozen=True, slots=True)
class Row:
    suite: str
    what: str
    ours: float
    unit: str
    better: Better = "lower"
    peer_name: str | None = None
    peer: float | None = None
    target: Target | None = None
    #: Ratio target (e.g. >= 300x vs LangChain), when §7 states one.
    ratio_target: float | None = None
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: Why the figure could not be measured (the row then shows the failure, not a figure).
    error: str = ""

    @property
    def ratio(self) -> float | None:
        """How many times better than the peer (> 1: we win)."""
        if self.error or self.peer is None or self.peer <= 0 or self.ours <= 0:
            return None
        return self.peer / self.ours if self.better == "lower" else self.ours / self.peer

    @property
    def met(self) -> bool | None:
        if self.error:
            return False
        checks: list[bool] = []
        if self.target is not None:
            checks.append(self.target.met(self.ours, self.better))
        if self.ratio_target is not None:
            checks.append(self.ratio is not None and self.ratio >= self.ratio_target)
        return all(checks) if checks else None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.error:
            data["ours"] = None  # NaN is not JSON
        data["ratio"] = self.ratio
        data["met"] = self.met
        return data


def samples_ms(fn: Callable[[], object], runs: int, *, warm: int = 1) -> list[float]:
    for _ in range(warm):
        fn()
    out: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def median_ms(fn: Callable[[], object], runs: int, *, warm: int = 1) -> float:
    return statistics.median(samples_ms(fn, runs, warm=warm))


def paired_median_ms(
    a: Callable[[], object], b: Callable[[], object], runs: int, *, warm: int = 1
) -> tuple[float, float]:
    """Medians of ``a`` and ``b`` run alternately (a, b, a, b, ...): on a shared, noisy
    machine a burst of load falls on both sides instead of on whichever ran during it."""
    for _ in range(warm):
        a()
        b()
    times_a: list[float] = []
    times_b: list[float] = []
    for _ in range(runs):
        for fn, times in ((a, times_a), (b, times_b)):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times_a), statistics.median(times_b)


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (p99 of 1000 samples = the 990th smallest)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit in ("/s", "entries/s", "events/s", "req/s"):
        return f"{value:,.0f} {unit}"
    if unit == "MB":
        return f"{value:,.0f} MB"
    if value >= 100:
        return f"{value:,.0f} {unit}"
    if value >= 10:
        return f"{value:.1f} {unit}"
    return f"{value:.2f} {unit}"


def _cell(text: str, limit: int = 160) -> str:
    """``text`` fit for one Markdown table cell."""
    flat = " ".join(text.replace("|", "\\|").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def render_table(rows: Sequence[Row]) -> str:
    lines = [
        "| suite | what | context-sidecar | peer | peer figure | ratio | §7 target | met |",
        "|---|---|---:|---|---:|---:|---|:-:|",
    ]
    for r in rows:
        ratio = f"{r.ratio:,.1f}x" if r.ratio is not None else "—"
        targets = [t for t in (r.target.text if r.target else None,) if t]
        if r.ratio_target is not None:
            targets.append(f"ratio >= {r.ratio_target:g}x")
        met = {True: "yes", False: "**no**", None: ""}[r.met]
        ours = f"**failed**: {_cell(r.error)}" if r.error else _fmt(r.ours, r.unit)
        lines.append(
            f"| {r.suite} | {r.what} | {ours} | {r.peer_name or '—'} "
            f"| {_fmt(r.peer, r.unit)} | {ratio} | {'; '.join(targets) or '—'} | {met} |"
        )
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    import os

    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
