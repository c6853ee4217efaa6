"""mkdocs hook: the picture of the layers — which package of ``sidecar/`` imports which — drawn
at build time from the source, so it shows the code as it is, never as it was meant to be.

Every import statement of every module counts (also those inside functions and under
``TYPE_CHECKING``, relative ones resolved), read with :mod:`ast`.  A node is a package of
``sidecar/`` (``rpc``, ``acp``, ``store``, ...) or a top-level module that imports one (``cli``,
``demo``, ...); the other top-level modules (``errors``, ``ids``, ``paths``, ...) import no
package and are drawn as one band of shared modules, and ``protocol`` as the band below it,
each saying who imports it.  A node sits one row above the highest node it imports; two nodes
that import each other, directly or round about, share a row and their edge is red.

Writes ``assets/plots/layers.svg`` into the site (nothing into ``docs/``); the layout page
shows it.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mkdocs.structure.files import File

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

__all__ = ["LAYERS_FILE", "Layers", "layers", "layers_svg", "on_files"]

LAYERS_FILE = "assets/plots/layers.svg"
INK, GRID, PAPER, BOX, BACK = "#24292f", "#8c959f", "#ffffff", "#ddf4ff", "#cf222e"
FONT = "font-family='ui-monospace, SFMono-Regular, Menlo, monospace'"


@dataclass(frozen=True, slots=True)
class Layers:
    """The drawn graph: rows of nodes from the bottom up, and the bands below them."""

    rows: tuple[tuple[str, ...], ...]
    edges: frozenset[tuple[str, str]]
    #: Pairs of nodes in one circle (drawn red).
    back: frozenset[tuple[str, str]]
    shared: tuple[str, ...]
    #: Band name -> the nodes that import it.
    users: dict[str, tuple[str, ...]]


def _modules(package: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(name: str, path: Path) -> set[str]:
    """Every module name ``name`` imports (absolute; relative imports resolved)."""
    home = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = home.split(".")[: len(home.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def _unit(module: str) -> str | None:
    """The package or top-level module of ``sidecar`` that ``module`` belongs to."""
    parts = module.split(".")
    return parts[1] if parts[0] == "sidecar" and len(parts) > 1 else None


def layers(root: Path) -> Layers:
    """The layers of ``root / "sidecar"``."""
    sidecar = root / "sidecar"
    packages = {p.name for p in sidecar.iterdir() if (p / "__init__.py").is_file()}
    graph: dict[str, set[str]] = {}
    protocol_users: set[str] = set()
    for name, path in _modules(sidecar).items():
        unit = _unit(name)
        if unit is None:
            continue
        imported = _imports(name, path)
        graph.setdefault(unit, set()).update(
            u for u in (_unit(m) for m in imported) if u is not None and u != unit
        )
        if any(m == "protocol" or m.startswith("protocol.") for m in imported):
            protocol_users.add(unit)
    # a top-level module that imports no package is shared; the rest are nodes
    shared = {
        u for u in graph if u not in packages and not u.startswith("__") and not graph[u] & packages
    }
    # ``python -m sidecar`` (``__main__``) only calls ``cli``: not a layer of its own
    nodes = sorted(u for u in graph if u not in shared and not u.startswith("__"))
    edges = {(a, b) for a in nodes for b in graph[a] if b in nodes}
    group = _circles(nodes, edges)
    level: dict[str, int] = {}

    def row(node: str) -> int:
        if node not in level:
            level[node] = 0  # a circle's members are resolved together below
            below = [b for a in group[node] for (s, b) in edges if s == a and b not in group[node]]
            height = 1 + max((row(b) for b in below), default=-1)
            for member in group[node]:
                level[member] = height
        return level[node]

    for node in nodes:
        row(node)
    rows = _ordered(
        [[n for n in nodes if level[n] == k] for k in range(max(level.values(), default=-1) + 1)],
        edges,
        group,
    )
    back = frozenset((a, b) for a, b in edges if b in group[a])
    users = {
        "shared": tuple(sorted(a for a in nodes if graph[a] & shared)),
        "protocol": tuple(sorted(u for u in protocol_users if u in nodes or u in shared)),
    }
    return Layers(rows, frozenset(edges), back, tuple(sorted(shared)), users)


def _ordered(
    rows: list[list[str]], edges: set[tuple[str, str]], group: dict[str, frozenset[str]]
) -> tuple[tuple[str, ...], ...]:
    """Each row left to right by the mean position of what its nodes import (fewer crossings),
    a circle's members side by side; the bottom row by name."""
    where: dict[str, float] = {}
    out: list[tuple[str, ...]] = []
    for row in rows:

        def key(node: str) -> tuple[float, str, str]:
            members = group[node]
            below = [where[b] for a in members for (s, b) in edges if s == a and b in where]
            mean = sum(below) / len(below) if below else 0.5
            return (mean, min(members), node)

        ordered = tuple(sorted(row, key=key))
        for i, node in enumerate(ordered):
            where[node] = (i + 1) / (len(ordered) + 1)
        out.append(ordered)
    return tuple(out)


def _circles(nodes: list[str], edges: set[tuple[str, str]]) -> dict[str, frozenset[str]]:
    """Each node's circle: the nodes it reaches that reach it back (itself included)."""
    reach: dict[str, set[str]] = {}
    for start in nodes:
        seen, todo = {start}, [start]
        while todo:
            here = todo.pop()
            for a, b in edges:
                if a == here and b not in seen:
                    seen.add(b)
                    todo.append(b)
        reach[start] = seen
    return {n: frozenset(m for m in reach[n] if n in reach[m]) for n in nodes}


# ---------------------------------------------------------------------------------------------
# SVG
# ---------------------------------------------------------------------------------------------


def _f(x: float) -> str:
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _wrap(words: list[str], width: int) -> list[str]:
    lines, line = [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line] if line else lines


Place = dict[str, tuple[float, float, float]]


def _ports(edges: list[tuple[str, str]], place: Place, end: int) -> dict[tuple[str, str], float]:
    """Where each edge leaves its source (``end`` 0) or enters its target (1): spread along
    the box's edge in the order of the other ends, so arrows do not pile up."""
    out: dict[tuple[str, str], float] = {}
    for node in {e[end] for e in edges}:
        mine = sorted((e for e in edges if e[end] == node), key=lambda e: place[e[1 - end]][0])
        x, _, w = place[node]
        for i, edge in enumerate(mine):
            out[edge] = x + w * (i + 1) / (len(mine) + 1)
    return out


def _route(
    start: tuple[float, float], end: tuple[float, float], place: Place, box_h: float
) -> list[tuple[float, float]]:
    """A line from ``start`` down to ``end`` that steps beside every box in its way."""
    points = [start]
    rows = sorted({y for _, y, _ in place.values() if start[1] < y + box_h / 2 < end[1]})
    for y in rows:
        middle = y + box_h / 2
        (x0, y0) = points[-1]
        x = x0 + (end[0] - x0) * (middle - y0) / (end[1] - y0)
        for bx, by, bw in place.values():
            if by == y and bx - 8 <= x <= bx + bw + 8:
                x = bx - 10 if x - bx < bx + bw - x else bx + bw + 10
                points.append((x, middle))
                break
    return [*points, end]


def layers_svg(graph: Layers) -> str:
    width, box_h, row_gap, margin = 760.0, 30.0, 62.0, 16.0
    band_lines = {
        "shared": _wrap(
            [
                "shared modules:",
                *(f"{m}," for m in graph.shared[:-1]),
                *graph.shared[-1:],
                "— imported by",
                *(f"{u}," for u in graph.users["shared"][:-1]),
                *graph.users["shared"][-1:],
            ],
            96,
        ),
        "protocol": _wrap(
            [
                "protocol (the wire contract) — imported by",
                *(f"{u}," for u in graph.users["protocol"][:-1]),
                *graph.users["protocol"][-1:],
            ],
            96,
        ),
    }
    band_h = {k: 14.0 * len(v) + 14 for k, v in band_lines.items()}
    rows_top = 40.0
    place: Place = {}  # node -> (x, y, box width)
    for k, row in enumerate(reversed(graph.rows)):
        y = rows_top + k * (box_h + row_gap)
        widths = [12 + 8.4 * len(n) for n in row]
        gap = (width - 2 * margin - sum(widths)) / (len(row) + 1)
        x = margin + gap
        for node, w in zip(row, widths, strict=True):
            place[node] = (x, y, w)
            x += w + gap
    body = [
        f"<defs><marker id='arrow' viewBox='0 0 8 8' refX='8' refY='4' markerWidth='7' "
        f"markerHeight='7' orient='auto-start-reverse'><path d='M0,0 L8,4 L0,8 z' "
        f"fill='{GRID}'/></marker></defs>",
        f"<text x='{margin}' y='24' fill='{INK}' font-size='13' font-weight='600'>sidecar/: "
        "which package imports which (an arrow points at what is imported)</text>",
    ]
    down = sorted(e for e in graph.edges if e not in graph.back)
    leaving = _ports(down, place, 0)
    arriving = _ports(down, place, 1)
    for a, b in down:
        _, ay, _ = place[a]
        _, by, _ = place[b]
        points = _route((leaving[a, b], ay + box_h), (arriving[a, b], by), place, box_h)
        body.append(
            f"<polyline points='{' '.join(f'{_f(x)},{_f(y)}' for x, y in points)}' fill='none' "
            f"stroke='{GRID}' stroke-width='1' stroke-linejoin='round' marker-end='url(#arrow)'/>"
        )
    for a, b in sorted(graph.back):
        if a < b:  # one red line for the pair
            (ax, ay, aw), (bx, by, bw) = place[a], place[b]
            left, right = ((ax + aw, bx), (ax, bx + bw))[ax > bx]
            mid = _f(ay + box_h / 2)
            body.append(
                f"<line x1='{_f(left)}' y1='{mid}' x2='{_f(right)}' y2='{_f(by + box_h / 2)}' "
                f"stroke='{BACK}' stroke-width='2' stroke-dasharray='5 3'/>"
            )
    for node, (x, y, w) in sorted(place.items()):
        red = any(node in pair for pair in graph.back)
        body.append(
            f"<rect x='{_f(x)}' y='{_f(y)}' width='{_f(w)}' height='{_f(box_h)}' rx='4' "
            f"fill='{BOX}' stroke='{BACK if red else INK}'/>"
        )
        body.append(
            f"<text x='{_f(x + w / 2)}' y='{_f(y + 19)}' text-anchor='middle' fill='{INK}'>"
            f"{_esc(node)}</text>"
        )
    y = rows_top + len(graph.rows) * (box_h + row_gap) - row_gap / 2
    for band in ("shared", "protocol"):
        body.append(
            f"<rect x='{margin}' y='{_f(y)}' width='{_f(width - 2 * margin)}' "
            f"height='{_f(band_h[band] - 6)}' rx='4' fill='{PAPER}' stroke='{INK}'/>"
        )
        for i, line in enumerate(band_lines[band]):
            body.append(
                f"<text x='{_f(margin + 10)}' y='{_f(y + 17 + 14 * i)}' fill='{INK}'>"
                f"{_esc(line)}</text>"
            )
        y += band_h[band]
    if graph.back:
        body.append(
            f"<text x='{margin}' y='{_f(y + 8)}' fill='{BACK}'>dashed red: packages that import "
            "each other, directly or round about</text>"
        )
        y += 16
    return "\n".join(
        [
            f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {_f(width)} {_f(y + margin)}' "
            f"width='{_f(width)}' height='{_f(y + margin)}' role='img' {FONT} font-size='12'>",
            "<title>The layers of sidecar/: which package imports which</title>",
            f"<rect width='{_f(width)}' height='{_f(y + margin)}' rx='6' fill='{PAPER}'/>",
            *body,
            "</svg>",
            "",
        ]
    )


def on_files(files: Files, config: MkDocsConfig) -> Files:
    root = Path(os.path.abspath(config.config_file_path)).parent
    files.append(File.generated(config, LAYERS_FILE, content=layers_svg(layers(root))))
    return files
