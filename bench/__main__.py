"""``make bench`` = ``python -m bench``: every suite, one table, one JSON file.

Each row is measured in this run, on this machine, with its peer measured alongside; the
table goes to stdout (Markdown, as the docs' performance page quotes it) and the JSON to
``bench/results/bench.json``.  When that file already holds an earlier run, the table gains a
column comparing our figure with it, so a change that slows something down shows at once.

A figure (or a whole suite) that fails becomes a row saying why: the table and the JSON are
written all the same, and the exit code is then 1.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import traceback
from pathlib import Path
from typing import Any

from bench.common import Options, Row, machine, render_table

SUITES = ("assembly", "rpc", "store", "cache", "tools", "checkpoints")
DEFAULT_OUT = Path("bench/results/bench.json")


def _previous(path: Path) -> dict[tuple[str, str, str | None], float]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {
        (r["suite"], r["what"], r.get("peer_name")): r["ours"]
        for r in data.get("rows", [])
        if r.get("ours") is not None  # a failed row has no figure
    }


def _with_drift(table: str, rows: list[Row], before: dict[Any, float]) -> str:
    """Append a "vs previous run" column (>1: better now)."""
    lines = table.splitlines()
    out = [lines[0] + " vs previous run |", lines[1] + "---:|"]
    for line, row in zip(lines[2:], rows, strict=True):
        then = before.get((row.suite, row.what, row.peer_name))
        if row.error or then is None or then <= 0 or row.ours <= 0:
            cell = "—"
        else:
            gain = then / row.ours if row.better == "lower" else row.ours / then
            cell = f"{gain:.2f}x"
        out.append(f"{line} {cell} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--only", default=",".join(SUITES), help="comma-separated suites")
    parser.add_argument("--runs", type=int, default=5, help="repetitions per figure (>= 5)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a smoke run")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    options = Options(runs=args.runs, quick=args.quick)
    rows: list[Row] = []
    for name in args.only.split(","):
        try:
            suite = importlib.import_module(f"bench.{name}")
            rows += suite.run(options)
        except Exception as exc:  # one suite failing must not cost the whole table
            traceback.print_exc(file=sys.stderr)
            rows.append(Row(name, "the whole suite", math.nan, "", error=repr(exc)))
    before = _previous(args.out)
    table = render_table(rows)
    if before:
        table = _with_drift(table, rows, before)
    sys.stdout.write(table + "\n")
    noted = [r for r in rows if r.notes and not r.error]
    if noted:
        sys.stdout.write("\n" + "".join(f"- {r.suite}: {r.what}: {r.notes}\n" for r in noted))
    failed = [r for r in rows if r.error]
    missed = [r for r in rows if r.met is False and not r.error]
    if failed:
        sys.stdout.write(
            "\nFigures that could not be measured: "
            + "; ".join(f"{r.suite}: {r.what} ({r.error})" for r in failed)
            + "\n"
        )
    if missed:
        sys.stdout.write(
            "\nTargets missed: " + "; ".join(f"{r.suite}: {r.what}" for r in missed) + "\n"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "machine": machine(),
                "options": vars(args) | {"out": str(args.out)},
                "rows": [r.to_json() for r in rows],
            },
            indent=2,
        )
        + "\n"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
