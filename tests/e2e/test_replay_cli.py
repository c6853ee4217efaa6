"""``context-sidecar replay`` on a real Claude Code session (the smallest shared one, 7 main-thread
requests): the real command in a subprocess, its figures checked against a recomputation from
a plain scan of the log — the recorded bill is the usage of each API response (one per
``requestId``, sidechains left out) at Sonnet 4's list prices — and each policy's totals
against its own per-request figures; the replayed session is in the store it was given.  A
truncated log is one line naming the file and the line, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sidecar.store import Store

SESSION = (
    Path(__file__).parents[2]
    / "tests/data/transcripts/real/claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
)
#: Sonnet 4 list prices, USD per million tokens (Anthropic's pricing page).
INPUT, WRITE_5M, WRITE_1H, READ, OUTPUT = 3.00, 3.75, 6.00, 0.30, 15.00


def _replay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sidecar", "replay", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _scan(path: Path) -> tuple[int, float, float]:
    """(API responses of the main thread, their input-side cost, their output cost).  A
    response's lines repeat its usage; the output is the largest (earlier lines carry a
    mid-stream count)."""
    usage: dict[str, dict[str, Any]] = {}
    output: dict[str, int] = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") != "assistant" or record.get("isSidechain"):
            continue
        key = record["requestId"]
        usage.setdefault(key, record["message"]["usage"])
        output[key] = max(output.get(key, 0), record["message"]["usage"]["output_tokens"])
    spent = said = 0.0
    for key, u in usage.items():
        split = u.get("cache_creation") or {}
        one_hour = split.get("ephemeral_1h_input_tokens", 0)
        five = split.get("ephemeral_5m_input_tokens", u["cache_creation_input_tokens"] - one_hour)
        spent += (
            u["input_tokens"] * INPUT
            + five * WRITE_5M
            + one_hour * WRITE_1H
            + u["cache_read_input_tokens"] * READ
        ) / 1e6
        said += output[key] * OUTPUT / 1e6
    return len(usage), spent, said


def test_replay_reports_the_recorded_bill_and_each_policys_figures(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = _replay(str(SESSION), "--json", "--store", str(store))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    responses, spent, said = _scan(SESSION)
    assert responses == 7
    assert report["requests"] == responses
    assert report["recorded"]["inputCost"] == pytest.approx(spent)
    assert report["recorded"]["outputCost"] == pytest.approx(said)
    names = [p["policy"] for p in report["policies"]]
    assert names[:2] == ["context-sidecar", "keep everything, compact at the window"]
    for policy in report["policies"]:
        rows = report["perRequest"][policy["policy"]]
        assert [r["request"] for r in rows] == list(range(responses))
        for row in rows:
            billed = row["read"] + row["write5m"] + row["write1h"] + row["uncached"]
            assert billed == row["promptTokens"] > row["tokensInView"] > 0
            assert row["userTurnsInView"] >= 1
        assert policy["inputCost"] == pytest.approx(sum(r["cost"] for r in rows))
        read = sum(r["read"] for r in rows)
        total = sum(r["promptTokens"] for r in rows)
        assert policy["readShare"] == pytest.approx(100 * read / total)
        written = sum(r["write5m"] + r["write1h"] for r in rows)
        assert policy["writesPerNewToken"] == pytest.approx(written / report["newTokens"])
        assert policy["meanTokensInView"] == pytest.approx(
            sum(r["tokensInView"] for r in rows) / responses
        )
        # a 5-minute TTL: every write is a 5-minute one
        assert all(r["write1h"] == 0 for r in rows)
    # the replayed session is a real one, in the store it was given
    opened = Store(store, read_only=True)
    try:
        session = opened.sessions.get(report["sessionId"])
    finally:
        opened.close()
    assert session.head_seq >= 1

    # the readable report says the same
    shown = _replay(str(SESSION), "--ttl", "1h")
    assert shown.returncode == 0, shown.stderr
    assert f"{spent:9.2f}" in shown.stdout
    assert "switching to context-sidecar" in shown.stdout
    assert "cache TTL 1h" in shown.stdout


def test_a_truncated_log_is_an_error_naming_the_line(tmp_path: Path) -> None:
    lines = SESSION.read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines[:5]) + "\n" + lines[5][: len(lines[5]) // 2] + "\n")
    done = _replay(str(broken))
    assert done.returncode == 2
    assert f"{broken}:6" in done.stderr
    assert "Traceback" not in done.stderr
