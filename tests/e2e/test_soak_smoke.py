"""``make soak`` in miniature: the real command, a real sidecar and the machine-speed probe beside
it, for a few seconds — what issue 20's acceptance is measured with must run, and its report
must hold what the acceptance reads (the figures themselves are ``make soak``'s, 15 minutes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_short_soak_runs_checks_every_run_and_reports_the_targets(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    soak = ["-m", "bench.soak", "--minutes", "0.2", "--window", "3", "--warmup", "2"]
    done = subprocess.run(
        [sys.executable, *soak, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    windows = result["windows"]
    assert len(windows) == 4
    assert result["totals"]["runs_completed"] > 0
    assert all(w["machine_ms"] is not None and w["machine_ms"] > 0 for w in windows)
    assert all(w["cpu_ms_per_run"] is not None and w["cpu_ms_per_run"] > 0 for w in windows)
    assert result["memory"]["growth_pct"] is not None
    assert {"session/append", "context/assemble", "run/start"} <= set(result["latency"])
    assert "| target |" in done.stdout
