"""The ``tools`` suite: the built-in grep beside ``rg`` run directly, and what bounding tool
results saves the context.

- grep over a generated tree (50,000 files; 5,000 with ``--quick``) with a ``.gitignore``d
  copy of part of it: ``sidecar.tools.grep`` (ripgrep back end, JSON parsed, grouped and
  bounded) against the same ``rg`` binary run directly with the same rules (its plain output
  read whole), and the pure-Python fallback on the same tree (DESIGN.md §7: <= 1.3x ``rg``).
- tokens a typical session's tool results put into the context (a read of a 5,000-line file,
  a grep with 20,000 matches, a listing of the big tree, a long command output), bounded as
  the tools return them, against the same calls' full output; counted with the real
  tokenizer (cl100k).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
from pathlib import Path

from bench.common import Options, Row, Target, median_ms, paired_median_ms
from sidecar.context.tokens import Tokenizers
from sidecar.tools import Workspace, grep, list_dir, read_file, run_command
from sidecar.tools.grep import ripgrep_path

__all__ = ["run"]

_WORDS = ("alpha", "beta", "gamma", "delta", "return", "value", "items", "count")


def _make_tree(root: Path, files: int) -> None:
    per_dir = 100
    for n in range(files):
        d = root / "src" / f"pkg{n // per_dir:04}"
        if n % per_dir == 0:
            d.mkdir(parents=True, exist_ok=True)
        body = "".join(
            f"def f{i}(x):\n    return x + {i}  # {_WORDS[(n + i) % len(_WORDS)]}\n"
            for i in range(20)
        )
        if n % 97 == 0:
            body += "    raise NeedleError('needle found')\n"
        (d / f"m{n:05}.py").write_text(body)
    ignored = root / "build"
    ignored.mkdir()
    for n in range(min(files // 10, 2000)):
        (ignored / f"copy{n:05}.py").write_text("raise NeedleError('needle found')\n")
    (root / ".gitignore").write_text("build/\n")


def run(options: Options) -> list[Row]:
    rows: list[Row] = []
    files = 5_000 if options.quick else 50_000
    rg = ripgrep_path()
    with tempfile.TemporaryDirectory(prefix="bench-tools-") as tmp:
        root = Path(tmp) / "repo"
        _make_tree(root, files)
        ws = Workspace.of([str(root)])
        pattern = r"NeedleError\('needle"
        runs = max(3, options.runs)

        def ours_once() -> object:
            return grep(ws, pattern, backend="rg")

        ours = median_ms(ours_once, runs) if rg is None else 0.0
        if rg is not None:
            direct = [rg, "-n", "--hidden", "--no-require-git", "--glob", "!.git", pattern, "."]
            ours, peer = paired_median_ms(
                ours_once,
                lambda: subprocess.run(direct, cwd=root, capture_output=True, check=False),
                max(runs, 9),
            )
            rows.append(
                Row(
                    "tools",
                    f"grep over {files:,} files (sidecar.tools, rg back end)",
                    ours,
                    "ms",
                    peer_name="rg run directly",
                    peer=peer,
                    ratio_target=1 / 1.3,
                    notes="target: <= 1.3x the time of rg run directly",
                )
            )
        fallback = median_ms(lambda: grep(ws, pattern, backend="python"), max(1, runs // 2))
        rows.append(
            Row(
                "tools",
                f"grep over {files:,} files, pure-Python fallback",
                fallback,
                "ms",
                peer_name="rg back end",
                peer=ours,
                notes="the fallback is for machines without the rg binary",
            )
        )
        rows.append(_tokens_row(root, ws))
    return rows


def _tokens_row(root: Path, ws: Workspace) -> Row:
    count = Tokenizers.discover().get(None).count
    big = root / "big.py"
    big.write_text("".join(f"value_{i} = compute({i}, items[{i}])\n" for i in range(5000)))
    todo = root / "todo"
    todo.mkdir()
    for f in range(200):
        (todo / f"t{f:03}.py").write_text("".join(f"# TODO item {i}\n" for i in range(100)))
    seq = "seq 1 100000"
    bounded = [
        read_file(ws, "big.py").text,
        grep(ws, "TODO", "todo").text,
        list_dir(ws, "src", depth=2).text,
        asyncio.run(run_command(ws, seq)).text,
    ]
    full = [
        big.read_text(),
        subprocess.run(
            [ripgrep_path() or "grep", "-rn", "TODO", "."], cwd=todo, capture_output=True
        ).stdout.decode(),
        "\n".join(str(p.relative_to(root / "src")) for p in sorted((root / "src").rglob("*"))),
        subprocess.run(["sh", "-c", seq], capture_output=True).stdout.decode(),
    ]
    ours = sum(count(t) for t in bounded)
    peer = sum(count(t) for t in full)
    return Row(
        "tools",
        "tokens of 4 typical tool results (read 5k lines, grep 20k matches, list, long output)",
        ours,
        "tokens",
        peer_name="the same calls unbounded",
        peer=peer,
        target=Target(4 * 10_000 * 1.05, "<= 10k tokens a result"),
        extra={"bounded": [count(t) for t in bounded], "full": [count(t) for t in full]},
        notes=f"env: {os.cpu_count()} cores",
    )
