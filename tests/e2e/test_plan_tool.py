"""The model's todo list (``update_plan``) on the ``serve`` face, over real stdio.

A scripted run keeps a plan: each well-formed call is a ``plan.updated`` event with the whole
list (the host needn't parse tool arguments) and a one-line result; a malformed one is an error
result saying what is wrong, with no event; nothing is asked, in any mode.  The list lives in
the conversation as tool calls, never in the system prompt, so the cached prefix stays put.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SidecarFactory
from tests.e2e.test_builtin_tools import Host, _session, by_call, call, text

pytestmark = pytest.mark.anyio

FIRST = [
    {"content": "read calc/add.py", "status": "in_progress", "priority": "high"},
    {"content": "fix the sign", "status": "pending"},
]
SECOND = [
    {"content": "read calc/add.py", "status": "completed", "priority": "high"},
    {"content": "fix the sign", "status": "in_progress", "extra": "ignored"},
]


@pytest.mark.parametrize("mode", ["ask", "plan"])
async def test_the_plan_is_events_and_tool_calls(
    sidecars: SidecarFactory, tmp_path: Path, mode: str
) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client, tmp_path)
    events = await host.run(
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "fix add"}],
            "builtinTools": {"mode": mode},
            "script": {
                "rounds": [
                    call("update_plan", "p1", entries=FIRST),
                    call("update_plan", "p2", entries=[{"content": "x"}]),
                    call("update_plan", "p3", entries=SECOND),
                    {"text": "done"},
                ]
            },
        }
    )
    assert events[-1]["payload"]["status"] == "completed", events[-1]
    assert host.asked == []  # read-only: never asked, not even in plan mode
    requested = by_call(events, "tool.callRequested")
    assert requested["p1"]["builtin"] and requested["p1"]["effect"] == "read"
    assert requested["p1"]["title"] == "Update the plan (2 steps)"
    plans = [e["payload"] for e in events if e["type"] == "plan.updated"]
    assert plans == [
        {"callId": "p1", "entries": [FIRST[0], {**FIRST[1], "priority": "medium"}]},
        {
            "callId": "p3",
            "entries": [
                SECOND[0],
                {"content": "fix the sign", "status": "in_progress", "priority": "medium"},
            ],
        },
    ]
    # each plan event comes between its call and its result
    order = [(e["type"], e["payload"].get("callId")) for e in events]
    for cid in ("p1", "p3"):
        at = order.index(("plan.updated", cid))
        assert (
            order.index(("tool.callRequested", cid)) < at < order.index(("tool.resultStored", cid))
        )
    stored = by_call(events, "tool.resultStored")
    assert text(stored["p1"]) == "plan updated (2 entries)" and not stored["p1"]["isError"]
    assert stored["p2"]["isError"] and "entries.0.status" in text(stored["p2"])
    assert not [e for e in events if e["type"] == "tool.approval"]
    # the model's last request: the plan is tool calls in the conversation, not the system
    snapshot_id = [e for e in events if e["type"] == "context.assembled"][-1]["payload"][
        "snapshotId"
    ]
    snapshot = await client.request("snapshot/get", {"snapshotId": snapshot_id})
    assert "update_plan" in [t["name"] for t in snapshot["tools"]]
    assert "fix the sign" not in json.dumps(snapshot["system"])
    calls: list[dict[str, Any]] = [
        part
        for message in snapshot["messages"]
        for part in (message.get("content") or [])
        if isinstance(part, dict) and part.get("type") == "toolCall"
    ]
    assert [(c["name"], c["arguments"]) for c in calls if c["callId"] in ("p1", "p3")] == [
        ("update_plan", {"entries": FIRST}),
        ("update_plan", {"entries": SECOND}),
    ]
