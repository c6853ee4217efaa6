"""A long-lived sidecar's resources stay bounded: the soak (``make soak``) found one open
file descriptor per finished run and one per session ever touched."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from sidecar.client import SidecarClient
from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio


def _open_fds(client: SidecarClient) -> int:
    return len(os.listdir(f"/proc/{client.process.pid}/fd"))


async def _run_to_end(client: SidecarClient, sid: str, done: dict[str, asyncio.Event]) -> None:
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "hi"}],
            "script": {"rounds": [{"text": "hello"}]},
        },
    )
    event = done.setdefault(started["runId"], asyncio.Event())
    await asyncio.wait_for(event.wait(), 30)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
async def test_finished_runs_and_idle_sessions_hold_no_file_descriptors(
    sidecars: SidecarFactory,
) -> None:
    client = await sidecars.start()
    done: dict[str, asyncio.Event] = {}

    def notified(method: str, params: Any) -> None:
        if method == "run/event" and params["type"] == "run.completed":
            done.setdefault(params["runId"], asyncio.Event()).set()

    client.on_notification(notified)
    sid = (await client.request("session/create", {"title": "warm"}))["sessionId"]
    await _run_to_end(client, sid, done)
    baseline = _open_fds(client)

    for _ in range(60):  # runs one after another on one session
        await _run_to_end(client, sid, done)
    after_runs = _open_fds(client)

    for i in range(300):  # many sessions, each appended to once (each opens its history)
        other = (await client.request("session/create", {"title": f"s{i}"}))["sessionId"]
        await client.request(
            "session/append",
            {
                "sessionId": other,
                "entries": [
                    {"kind": "message", "role": "user", "content": [{"type": "text", "text": "x"}]}
                ],
            },
        )
    after_sessions = _open_fds(client)

    assert after_runs <= baseline + 4, f"{after_runs - baseline} descriptors kept by 60 runs"
    # the loaded sessions (64 at most) each keep their history and, held, their writer lock
    assert after_sessions <= baseline + 2 * 64 + 16, (
        f"{after_sessions - baseline} descriptors kept by 300 sessions"
    )
    # everything still reads back after the caches let go
    run_list = await client.request("run/list", {"sessionId": sid, "limit": 100})
    assert len(run_list["runs"]) == 61
    first = run_list["runs"][-1]["runId"]
    replay = await client.request("run/subscribe", {"runId": first, "afterSeq": 0})
    assert replay["replayed"] > 0 and replay["status"] == "completed"
    sessions = await client.request("session/list", {"limit": 500})
    assert len(sessions["sessions"]) == 301
