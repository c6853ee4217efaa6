"""The context dashboard page (editors/dashboard/dashboard.html) rendering a real sidecar's data.

A real sidecar freezes an input, assembles and reads a snapshot of a session whose old tool
results are masked (a small masking profile), runs a scripted run, and assembles the next turn
against the first (so its cache prediction reads from the previous request); the page is then
rendered in headless Chromium by ``editors/dashboard/check-page.mjs`` (npm ``playwright-core``),
which reports what the page shows and saves a screenshot.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from sidecar.client import SidecarClient
from tests.conftest import SidecarFactory
from tests.e2e.history_kit import tool_turns

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "editors" / "dashboard"
PAGE = DASHBOARD / "dashboard.html"
CHECK_SCRIPT = DASHBOARD / "check-page.mjs"
CHROMIUM = Path("/usr/bin/chromium")
PLAYWRIGHT = DASHBOARD / "node_modules" / "playwright-core"
ARTIFACT = REPO / ".artifacts" / "dashboard.png"
README_SHOT = DASHBOARD / "screenshot.png"
FIXTURE = REPO / "tests" / "data" / "workspaces" / "webapp"
DEPS_HINT = "run `make dashboard-deps` (apt-get chromium, `npm ci` in editors/dashboard)"


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def msg(role: str, t: str) -> dict[str, Any]:
    return {"kind": "message", "role": role, "content": [text(t)]}


# Small enough that old tool results below are masked (8 of ~805 tokens; the newest 2,000 kept).
MASKING = {"assembly": {"masking": {"protectTokens": 2000, "batchTokens": 1000}}}


class Host:
    """Collects a run's `run/event` notifications (the pattern of tests/e2e/test_runs.py)."""

    def __init__(self, client: SidecarClient) -> None:
        self.events: list[dict[str, Any]] = []
        client.on_notification(self._notified)

    def _notified(self, method: str, params: Any) -> None:
        if method == "run/event":
            self.events.append(params)

    def of(self, run_id: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["runId"] == run_id]

    async def until_done(self, run_id: str, timeout: float = 15) -> list[dict[str, Any]]:
        async def wait() -> None:
            while not any(e["type"] == "run.completed" for e in self.of(run_id)):
                await asyncio.sleep(0.01)

        await asyncio.wait_for(wait(), timeout)
        return self.of(run_id)


def _require_deps() -> str:
    missing = [str(p) for p in (CHROMIUM, PLAYWRIGHT, CHECK_SCRIPT, PAGE) if not p.exists()]
    node = shutil.which("node")
    if node is None:
        missing.append("node (on PATH)")
    if missing or node is None:
        pytest.fail(f"dashboard page test needs {', '.join(missing)}: {DEPS_HINT}", pytrace=False)
    return node


async def _real_data(sidecars: SidecarFactory, workspace: Path) -> dict[str, Any]:
    client = await sidecars.start()
    host = Host(client)
    created = await client.request("session/create", {"workspaceRoots": [str(workspace)]})
    sid: str = created["sessionId"]
    await client.request(
        "session/append",
        {
            "sessionId": sid,
            "entries": [
                msg("user", "What does health() return?"),
                msg("assistant", "A status dict with the service name."),
                *tool_turns(8),
            ],
        },
    )
    frozen = await client.request(
        "input/freeze",
        {
            "sessionId": sid,
            "userTurn": [text("Add a /version endpoint.")],
            "clock": {"date": "2026-11-30", "time": "12:00"},
            "attachments": [
                {"kind": "snippet", "path": "error log", "content": "KeyError: 'version'"}
            ],
        },
    )
    assembled = await client.request(
        "snapshot/assemble", {"sessionId": sid, "inputId": frozen["inputId"], "profile": MASKING}
    )
    snapshot: dict[str, Any] = await client.request(
        "snapshot/get", {"snapshotId": assembled["snapshotId"]}
    )
    # the run's turn, frozen on the same day: its prompt is what the next turn is predicted
    # to read from (a run's rounds are the session's latest requests)
    hello = await client.request(
        "input/freeze",
        {
            "sessionId": sid,
            "userTurn": [text("Say hello.")],
            "clock": {"date": "2026-11-30", "time": "12:02"},
        },
    )
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "inputId": hello["inputId"],
            "script": {"rounds": [{"deltas": ["hel", "lo"]}]},
            "profile": MASKING,
        },
    )
    events = await host.until_done(started["runId"])
    # the next turn: its snapshot, and the diff against the first one
    second = await client.request(
        "input/freeze",
        {
            "sessionId": sid,
            "userTurn": [text("And a /health check?")],
            "clock": {"date": "2026-11-30", "time": "12:05"},
        },
    )
    assembled = await client.request(
        "snapshot/assemble", {"sessionId": sid, "inputId": second["inputId"], "profile": MASKING}
    )
    snapshot = await client.request("snapshot/get", {"snapshotId": assembled["snapshotId"]})
    # a stored snapshot keeps no cache prediction: the page gets the assemble answer's
    assert "cache" not in snapshot or snapshot["cache"] is None
    return {
        "snapshot": snapshot,
        "events": events,
        "diff": assembled["diff"],
        "cache": assembled["cache"],
    }


async def test_dashboard_renders_a_real_snapshot_and_run(
    sidecars: SidecarFactory, tmp_path: Path
) -> None:
    node = _require_deps()
    workspace = tmp_path / "webapp"
    shutil.copytree(FIXTURE, workspace)
    data = await _real_data(sidecars, workspace)
    snapshot, events = data["snapshot"], data["events"]
    dashboard = snapshot["dashboard"]
    assert events and events[-1]["type"] == "run.completed"
    assert dashboard["used"] > 0 and snapshot["ledger"]

    data_file = tmp_path / "dashboard-data.json"
    data_file.write_text(json.dumps(data), encoding="utf-8")
    shot = tmp_path / "dashboard.png"
    begin = time.monotonic()
    proc = subprocess.run(
        [node, str(CHECK_SCRIPT), str(PAGE), str(data_file), str(shot)],
        cwd=DASHBOARD,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    elapsed = time.monotonic() - begin
    assert proc.returncode == 0, f"check-page.mjs failed ({elapsed:.1f}s):\n{proc.stderr}"
    shown: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])

    assert shown["consoleErrors"] == []
    assert shown["categories"] == dashboard["categories"]
    assert shown["totalUsed"] == dashboard["used"]
    assert shown["totalFree"] == dashboard["free"]
    assert shown["totalAvailable"] == dashboard["availableInput"]
    assert shown["ledgerRows"] == len(snapshot["ledger"])
    assert shown["breakpointRows"] == len(snapshot["cacheBreakpoints"])
    assert shown["eventRows"] == len(events)
    diff = data["diff"]
    assert diff["fromSnapshot"] is not None and diff["prefixTokens"] > 0
    assert shown["diffPrefixTokens"] == diff["prefixTokens"]  # the diff against the last turn

    # the cache prediction of this turn, against the previous request of the session
    cache = data["cache"]
    assert cache["againstPrevious"] is True and cache["readTokens"] > 0
    assert cache["cost"] is not None and cache["cost"]["total"] > 0
    assert shown["cache"]["state"] == "predicted" and shown["cache"]["againstPrevious"] is True
    for key in ("readTokens", "writeTokens", "uncachedTokens", "inputTokens"):
        assert shown["cache"][key] == cache[key], key
    assert shown["cache"]["costTotal"] == pytest.approx(cache["cost"]["total"])
    assert cache["cost"]["pricesAsOf"] in shown["cache"]["costText"]
    assert shown["cache"]["firstChange"] == cache["firstChange"]

    # what is masked: every masked ledger item, and the masking state
    masked = sorted(
        (i for i in snapshot["ledger"] if i["visibility"] == "masked"), key=lambda i: i["fromSeq"]
    )
    state = dashboard["masking"]
    assert len(masked) == state["maskedResults"] >= 3
    assert shown["maskedRows"] == [
        {"itemId": i["itemId"], "seq": i["fromSeq"], "tokens": i["tokens"]} for i in masked
    ]
    assert shown["masking"]["state"] == "on"
    assert int(shown["masking"]["maskedResults"]) == state["maskedResults"]
    assert int(shown["masking"]["maskedTokens"]) == state["maskedTokens"]
    assert int(shown["masking"]["nextMoveIn"]) == state["nextMoveIn"]
    assert shown["recoverButtons"] == 0  # a plain browser cannot ask for a recover

    # where the history window starts and when it moves
    window = dashboard["historyWindow"]
    assert shown["historyWindow"]["state"] == "shown"
    assert shown["historyWindow"]["startSeq"] == (
        "" if window["startSeq"] is None else str(window["startSeq"])
    )
    assert shown["historyWindow"]["boundBy"] == window["boundBy"]
    assert int(shown["historyWindow"]["roomLeft"]) == window["roomLeft"]
    assert int(shown["historyWindow"]["quantum"]) == window["quantum"]
    assert f"{window['roomLeft']:,}" in shown["historyWindowText"]

    assert shot.is_file() and shot.stat().st_size > 10_000, "screenshot missing or too small"
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, ARTIFACT)
    if not README_SHOT.exists():
        shutil.copyfile(shot, README_SHOT)
