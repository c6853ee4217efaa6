"""``context-sidecar replay --json`` on the other three formats (Claude Code's is
``test_replay_cli.py``): a pi session (the head of a shared real one: a pi log cut at a line is
a shorter pi log), a Codex rollout and an OpenCode export.  The real command in a subprocess;
what it says was recorded is checked against a plain scan of each file, done here without the
readers: pi's per-message usage, Codex's cumulative ``total_token_usage`` (no dedupe needed:
the last one is the session's total, cached input included in ``input_tokens``), OpenCode's
``step-finish`` tokens.  Every policy replays every recorded request."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parents[2] / "tests" / "data" / "transcripts"
PI = DATA / "real" / "pi-mono" / "large-session.jsonl"


def _replay(path: Path, tmp: Path) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sidecar",
            "replay",
            "--json",
            "--store",
            str(tmp / "store"),
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return dict(json.loads(done.stdout))


def _pi_head(tmp: Path, lines: int) -> tuple[Path, dict[str, int]]:
    head = PI.read_text().splitlines()[:lines]
    path = tmp / "pi-head.jsonl"
    path.write_text("\n".join(head) + "\n")
    sums = {"requests": 0, "read": 0, "uncached": 0, "write": 0, "output": 0}
    for line in head:
        record = json.loads(line)
        message = record.get("message") or {}
        if record.get("type") == "message" and message.get("role") == "assistant":
            usage = message["usage"]
            sums["requests"] += 1
            sums["read"] += usage["cacheRead"]
            sums["uncached"] += usage["input"]
            sums["write"] += usage["cacheWrite"]
            sums["output"] += usage["output"]
    return path, sums


def _codex(tmp: Path) -> tuple[Path, dict[str, int]]:
    path = DATA / "codex-rollout.jsonl"
    total: dict[str, int] = {}
    for line in path.read_text().splitlines():
        payload = json.loads(line).get("payload") or {}
        if payload.get("type") == "token_count" and payload.get("info"):
            total = payload["info"]["total_token_usage"]
    return path, {
        "read": total["cached_input_tokens"],
        "uncached": total["input_tokens"] - total["cached_input_tokens"],
        "write": 0,  # OpenAI reports no cache writes
        "output": total["output_tokens"],
    }


def _opencode(tmp: Path) -> tuple[Path, dict[str, int]]:
    path = DATA / "opencode-export.json"
    sums = {"requests": 0, "read": 0, "uncached": 0, "write": 0, "output": 0}
    for message in json.loads(path.read_text())["messages"]:
        for part in message["parts"]:
            if part["type"] == "step-finish":
                tokens = part["tokens"]
                sums["requests"] += 1
                sums["read"] += tokens["cache"]["read"]
                sums["uncached"] += tokens["input"]
                sums["write"] += tokens["cache"]["write"]
                sums["output"] += tokens["output"]
    return path, sums


@pytest.mark.parametrize("fmt", ["pi", "codex", "opencode"])
def test_replay_of_each_format_says_what_was_recorded(fmt: str, tmp_path: Path) -> None:
    if fmt == "pi":
        path, expected = _pi_head(tmp_path, 80)
    elif fmt == "codex":
        path, expected = _codex(tmp_path)
    else:
        path, expected = _opencode(tmp_path)
    report = _replay(path, tmp_path)
    assert report["format"] == fmt
    recorded = report["recorded"]
    assert recorded["read"] == expected["read"]
    assert recorded["uncached"] == expected["uncached"]
    assert recorded["write"] == expected["write"]
    assert recorded["outputTokens"] == expected["output"]
    if "requests" in expected:
        assert report["requests"] == expected["requests"]
    assert report["requests"] > 0
    policies = {p["policy"]: p for p in report["policies"]}
    assert {"context-sidecar", "keep everything, compact at the window"} <= set(policies)
    for figures in policies.values():
        assert figures["requests"] == report["requests"]
        assert figures["cost"] > 0
