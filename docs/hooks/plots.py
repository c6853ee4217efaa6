"""mkdocs hook: the performance plots, drawn at build time from ``bench/results/bench.json``.

The cache suite (``bench/cache.py``) keeps, for the default profile of each session shape, every
request's input tokens as the reference cache simulation billed them — read, written, uncached —
for context-sidecar and for LangChain ``trim_messages`` on the same messages, with the prices
(``extra.perRequest`` of the "cost of the session" rows).  From them this hook draws, as plain
SVG (no plotting library; the same JSON gives the same bytes):

- ``assets/plots/sessions.svg``: each shape's session cost, ours beside LangChain's, with the
  share of input read from the cache;
- ``assets/plots/turns-<shape>.svg``: per turn, the input cost and the cache-read share.

They are added to the site as generated files (nothing is written into ``docs/``), so a page
links them like any image and ``mkdocs build --strict`` fails when one is missing.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mkdocs.structure.files import File

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

__all__ = ["BENCH_FILE", "PLOTS_DIR", "Series", "on_files", "render_plots", "series"]

#: Relative to the directory of ``mkdocs.yml``.
BENCH_FILE = "bench/results/bench.json"
PLOTS_DIR = "assets/plots"
SHAPES = ("coding", "huge results", "chat")
OURS, PEER = "context-sidecar", "LangChain trim_messages"
COLOURS = {OURS: "#1f6feb", PEER: "#d9822b"}
INK, GRID, PAPER = "#24292f", "#d0d7de", "#ffffff"
FONT = "font-family='system-ui, -apple-system, Segoe UI, Roboto, sans-serif'"


@dataclass(frozen=True, slots=True)
class Series:
    """One policy's requests in order: cost (USD) and cache-read share (%) of each."""

    name: str
    cost: tuple[float, ...]
    read_share: tuple[float, ...]

    @property
    def total_cost(self) -> float:
        return sum(self.cost)


def series(bench: dict[str, Any]) -> dict[str, tuple[Series, Series, float, float]]:
    """Per shape: (ours, LangChain's, our read share, LangChain's read share of the session)."""
    rows = {row["what"]: row for row in bench.get("rows", [])}
    out: dict[str, tuple[Series, Series, float, float]] = {}
    for shape in SHAPES:
        cost_row = rows.get(f"cost of the session, {shape}, default profile") or {}
        read_row = rows.get(f"cache-read share, {shape}, default profile") or {}
        per = (cost_row.get("extra") or {}).get("perRequest")
        if not per or "peer" not in per:
            raise ValueError(
                f"{BENCH_FILE} has no per-request bills for {shape!r}: run `make bench` "
                "(the cache suite writes them)"
            )
        prices = per["prices"]
        ours, peer = (
            _series(name, per[key], prices) for name, key in ((OURS, "ours"), (PEER, "peer"))
        )
        out[shape] = (
            ours,
            peer,
            float(read_row.get("ours", 0.0)),
            float(read_row.get("peer", 0.0)),
        )
    return out


def _series(name: str, billed: dict[str, list[int]], prices: dict[str, float]) -> Series:
    cost, share = [], []
    for read, write, uncached in zip(
        billed["read"], billed["write"], billed["uncached"], strict=True
    ):
        total = read + write + uncached
        cost.append(
            (uncached * prices["input"] + write * prices["write"] + read * prices["read"]) / 1e6
        )
        share.append(100 * read / total if total else 0.0)
    return Series(name, tuple(cost), tuple(share))


# ---------------------------------------------------------------------------------------------
# SVG
# ---------------------------------------------------------------------------------------------


def _f(x: float) -> str:
    """A coordinate: one decimal, no trailing zero (stable bytes)."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _el(tag: str, **attrs: float | str) -> str:
    """An empty element; ``stroke_width`` is written ``stroke-width``."""
    cells = " ".join(
        f"{k.replace('_', '-')}='{_f(v) if isinstance(v, float | int) else v}'"
        for k, v in attrs.items()
    )
    return f"<{tag} {cells}/>"


def _text(x: float, y: float, text: str, **attrs: float | str) -> str:
    return _el("text", x=x, y=y, fill=INK, **attrs)[:-2] + f">{_esc(text)}</text>"


def _nice_step(span: float, ticks: int) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) giving about ``ticks`` ticks."""
    raw = span / ticks if span > 0 else 1.0
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 2.5, 5, 10) if raw <= m * magnitude)


def _label(value: float, unit: str) -> str:
    if unit == "$":
        return f"${value:.2f}"
    return f"{value:.0f}{unit}"


def _svg(width: float, height: float, title: str, body: Sequence[str]) -> str:
    return "\n".join(
        [
            f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {_f(width)} {_f(height)}' "
            f"width='{_f(width)}' height='{_f(height)}' role='img' {FONT} font-size='12'>",
            f"<title>{_esc(title)}</title>",
            _el("rect", width=width, height=height, rx=6, fill=PAPER),
            *body,
            "</svg>",
            "",
        ]
    )


def _legend(x: float, y: float) -> list[str]:
    out = []
    for name in (OURS, PEER):
        out.append(_el("rect", x=x, y=y - 9, width=14, height=10, fill=COLOURS[name]))
        out.append(_text(x + 19, y, name))
        x += 30 + 7 * len(name)
    return out


@dataclass(frozen=True, slots=True)
class _Box:
    x: float
    y: float
    w: float
    h: float


def _panel(box: _Box, lines: Sequence[Series], pick: str, unit: str, title: str) -> list[str]:
    """A line panel: each series' ``pick`` values against the request number (1-based)."""
    columns = [getattr(s, pick) for s in lines]
    n = max(len(c) for c in columns)
    peak = max(max(c) for c in columns)
    step = 20.0 if unit == "%" else _nice_step(peak, 4)
    top = 100.0 if unit == "%" else step * math.ceil(peak / step)

    def x_of(index: int) -> float:
        return box.x + box.w * index / max(n - 1, 1)

    def y_of(value: float) -> float:
        return box.y + box.h - box.h * value / top

    out = [_text(box.x, box.y - 10, title, font_weight=600)]
    for k in range(round(top / step) + 1):
        y = y_of(k * step)
        out.append(_el("line", x1=box.x, x2=box.x + box.w, y1=y, y2=y, stroke=GRID))
        out.append(_text(box.x - 6, y + 4, _label(k * step, unit), text_anchor="end"))
    bottom = box.y + box.h
    xstep = max(1, round(_nice_step(n, 6)))
    for turn in range(xstep, n + 1, xstep):
        x = x_of(turn - 1)
        out.append(_el("line", x1=x, x2=x, y1=bottom, y2=bottom + 4, stroke=INK))
        out.append(_text(x, bottom + 17, str(turn), text_anchor="middle"))
    out.append(_el("line", x1=box.x, x2=box.x + box.w, y1=bottom, y2=bottom, stroke=INK))
    for s, ys in reversed(list(zip(lines, columns, strict=True))):  # ours drawn last, on top
        points = " ".join(f"{_f(x_of(i))},{_f(y_of(v))}" for i, v in enumerate(ys))
        out.append(
            _el(
                "polyline",
                points=points,
                fill="none",
                stroke=COLOURS[s.name],
                stroke_width=1.5,
                stroke_linejoin="round",
            )
        )
    return out


def _versus(ours: Series, peer: Series) -> str:
    return f"1/{peer.total_cost / ours.total_cost:.1f}" if ours.total_cost else "—"


def turns_svg(shape: str, ours: Series, peer: Series, our_read: float, peer_read: float) -> str:
    """Per turn of one shape: the input cost, then the cache-read share, ours against the
    peer's."""
    width, left, right = 760.0, 64.0, 16.0
    w = width - left - right
    return _svg(
        width,
        516,
        f"{shape}: cost and cache-read share per turn, {OURS} against {PEER}",
        [
            _text(
                left,
                24,
                f"{shape}: {len(ours.cost)} turns, one request a turn (Sonnet 4.5 input rates)",
                font_size=14,
                font_weight=600,
            ),
            *_legend(left, 46),
            *_panel(
                _Box(left, 86, w, 150), (ours, peer), "cost", "$", "input cost of each request"
            ),
            *_panel(
                _Box(left, 290, w, 150),
                (ours, peer),
                "read_share",
                "%",
                "share of its input read from the prompt cache",
            ),
            _text(left + w / 2, 478, "turn", text_anchor="middle"),
            _text(
                left,
                502,
                f"the session: ${ours.total_cost:.2f} against ${peer.total_cost:.2f} "
                f"({_versus(ours, peer)}); {our_read:.1f}% read against {peer_read:.1f}%",
            ),
        ],
    )


def sessions_svg(data: dict[str, tuple[Series, Series, float, float]]) -> str:
    """Each shape's session cost, ours beside the peer's, with the share read from the cache."""
    width, left, bar, gap = 760.0, 130.0, 22.0, 6.0
    scale = (width - left - 170) / max(
        max(o.total_cost, p.total_cost) for o, p, _, _ in data.values()
    )
    body = [
        _text(
            16,
            24,
            "input cost of a whole session (USD, Sonnet 4.5 rates), share read from the cache",
            font_size=14,
            font_weight=600,
        ),
        *_legend(16, 48),
    ]
    y = 70.0
    for shape, (ours, peer, our_read, peer_read) in data.items():
        body.append(_text(16, y + bar + gap / 2 + 4, shape, font_weight=600))
        for s, read in ((ours, our_read), (peer, peer_read)):
            length = max(scale * s.total_cost, 1.0)
            body.append(_el("rect", x=left, y=y, width=length, height=bar, fill=COLOURS[s.name]))
            body.append(_text(left + length + 6, y + 15, f"${s.total_cost:.2f} · {read:.1f}% read"))
            y += bar + gap
        body.append(_text(left, y + 10, f"{_versus(ours, peer)} of LangChain's cost", font_size=11))
        y += 34
    return _svg(width, y, f"Session cost and cache-read share, {OURS} against {PEER}", body)


def render_plots(bench: dict[str, Any]) -> dict[str, str]:
    """Every plot's path (under the site) and SVG text."""
    data = series(bench)
    out = {f"{PLOTS_DIR}/sessions.svg": sessions_svg(data)}
    for shape, (ours, peer, our_read, peer_read) in data.items():
        out[f"{PLOTS_DIR}/turns-{shape.replace(' ', '-')}.svg"] = turns_svg(
            shape, ours, peer, our_read, peer_read
        )
    return out


# ---------------------------------------------------------------------------------------------
# The hook
# ---------------------------------------------------------------------------------------------


def on_files(files: Files, config: MkDocsConfig) -> Files:
    root = Path(os.path.abspath(config.config_file_path)).parent
    bench = json.loads((root / BENCH_FILE).read_text(encoding="utf-8"))
    for path, svg in render_plots(bench).items():
        files.append(File.generated(config, path, content=svg))
    return files
