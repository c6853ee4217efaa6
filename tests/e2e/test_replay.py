"""``run/subscribe`` replays a journal larger than the 4 MiB backlog bound without breaking it.

The replay sends events while the client's unread backlog is under the bound, then pauses
with ``run/lagged {lastSentSeq}`` exactly as live events do; a client that recovers as every
front end does (subscribe again from ``lastSentSeq``) gets every event once, in order.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from tests.e2e.test_runs import Host, _rss_kib

if TYPE_CHECKING:
    from pathlib import Path

    from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio

BOUND = 4 * 1024 * 1024
FRAME = 64 * 1024


async def test_a_replay_past_the_backlog_bound_pauses_and_loses_nothing(
    sidecars: SidecarFactory, store_dir: Path
) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = str((await client.request("session/create", {"title": "replay"}))["sessionId"])
    flood = {"rounds": [{"deltas": ["x" * 2048] * 10_000}]}  # ~22 MB of events
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "flood"}],
            "script": flood,
            "subscribe": False,
        },
    )
    run_id = started["runId"]

    async def ended() -> None:
        while (await client.request("run/get", {"runId": run_id}))["status"] != "completed":
            await asyncio.sleep(0.05)

    await asyncio.wait_for(ended(), 30)
    journal = store_dir / "runs" / run_id / "events.jsonl"
    produced = journal.stat().st_size
    total = len(journal.read_bytes().splitlines())
    assert produced > 4 * BOUND

    # a subscriber that does not read: the replay from seq 0 must not queue the whole journal
    baseline = _rss_kib(client.process.pid)
    client.pause_reading()
    _, subscribed = client.start_request("run/subscribe", {"runId": run_id, "afterSeq": 0})
    probes: list[asyncio.Future[Any]] = []  # answered after the replay, read later
    peak = baseline
    for _ in range(10):
        probes.append(client.start_request("server/info", {})[1])
        peak = max(peak, _rss_kib(client.process.pid))
        await asyncio.sleep(0.05)
    client.resume_reading()
    backlogs = [(await probe)["outboundBacklogBytes"] for probe in probes]
    assert max(backlogs) <= BOUND + FRAME, f"{max(backlogs)} bytes left unread"
    grown = (peak - baseline) * 1024
    assert grown < produced // 2, f"grew {grown} bytes replaying {produced}"
    answer = await subscribed
    assert 0 < answer["replayed"] < total and answer["live"] is False
    assert host.lagged[0]["lastSentSeq"] == answer["replayed"]
    assert host.lagged[0]["code"] == "server.overloaded"

    # recovering as a front end does: every event once, in order
    events = await host.catch_up(run_id)
    assert [e["seq"] for e in events] == list(range(1, total + 1))
    assert events[-1]["type"] == "run.completed"
    assert len(host.lagged) >= 2  # the rest came in bounded pieces too
