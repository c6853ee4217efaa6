"""Runs over real stdio: the scripted model/tool loop, the journal, subscribe, cancel, crash."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sidecar.client import RpcError, SidecarClient
from tests.conftest import SidecarFactory, assert_valid_frames

pytestmark = pytest.mark.anyio

TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


class Host:
    """The test's side of a run: collects events, answers tool/execute."""

    def __init__(self, client: SidecarClient) -> None:
        self.client = client
        self.events: list[dict[str, Any]] = []
        self.tool_calls: list[dict[str, Any]] = []
        self.cancels: list[Any] = []
        self.lagged: list[dict[str, Any]] = []
        self.block = asyncio.Event()
        self.block_from_call = 10**9
        client.on_notification(self._notified)
        client.on_request("tool/execute", self._execute)

    def _notified(self, method: str, params: Any) -> None:
        if method == "run/event":
            self.events.append(params)
        elif method == "$/cancelRequest":
            self.cancels.append(params["id"])
        elif method == "run/lagged":
            self.lagged.append(params)

    async def _execute(self, params: Any) -> Any:
        self.tool_calls.append(params)
        if len(self.tool_calls) >= self.block_from_call:
            await self.block.wait()  # never set: the call stays pending
        return {"content": [{"type": "text", "text": f"contents of {params['arguments']['path']}"}]}

    def of(self, run_id: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["runId"] == run_id]

    async def until_done(self, run_id: str, timeout: float = 15) -> list[dict[str, Any]]:
        async def wait() -> None:
            while not any(e["type"] == "run.completed" for e in self.of(run_id)):
                await asyncio.sleep(0.01)

        await asyncio.wait_for(wait(), timeout)
        return self.of(run_id)

    async def catch_up(self, run_id: str, timeout: float = 30) -> list[dict[str, Any]]:
        """Recover from ``run/lagged`` as every front end does (after ``retryAfterMs``,
        ``run/subscribe`` from ``lastSentSeq``) until the run's ``run.completed`` arrived."""
        handled = 0

        async def recover() -> None:
            nonlocal handled
            while not any(e["type"] == "run.completed" for e in self.of(run_id)):
                mine = [lag for lag in self.lagged if lag["runId"] == run_id]
                if len(mine) == handled:
                    await asyncio.sleep(0.01)
                    continue
                lagged = mine[handled]
                handled += 1
                await asyncio.sleep(lagged["retryAfterMs"] / 1000)
                params = {"runId": run_id, "afterSeq": lagged["lastSentSeq"]}
                await self.client.request("run/subscribe", params)

        await asyncio.wait_for(recover(), timeout)
        return self.of(run_id)

    async def until(self, predicate: Any, timeout: float = 10) -> None:
        async def wait() -> None:
            while not predicate():
                await asyncio.sleep(0.01)

        await asyncio.wait_for(wait(), timeout)


async def _session(client: SidecarClient) -> str:
    created = await client.request("session/create", {"title": "runs"})
    return str(created["sessionId"])


TWO_ROUNDS = {
    "rounds": [
        {
            "deltas": ["Reading ", "a.py"],
            "toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a.py"}}],
            "usage": {"inputTokens": 100, "outputTokens": 10, "cacheReadTokens": 80},
        },
        {"toolCalls": [{"id": "c2", "name": "read_file", "arguments": {"path": "b.py"}}]},
        {"text": "Both files read."},
    ]
}


async def test_scripted_run_with_two_tool_rounds(sidecars: SidecarFactory) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client)
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "Read a.py and b.py"}],
            "tools": TOOLS,
            "script": TWO_ROUNDS,
        },
    )
    events = await host.until_done(started["runId"])
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(events) + 1))  # strictly increasing, no gap
    types = [e["type"] for e in events]
    assert types[0] == "run.created" and types.count("run.completed") == 1
    assert types[-1] == "run.completed" and events[-1]["payload"] == {"status": "completed"}
    assert types.count("context.assembled") == 3 and types.count("tool.resultStored") == 2
    deltas = [e["payload"]["text"] for e in events if e["type"] == "model.delta"]
    assert deltas == ["Reading ", "a.py", "Both files read."]
    usage = next(e for e in events if e["type"] == "model.completed")["payload"]["usage"]
    assert usage["cacheReadTokens"] == 80
    assert [c["callId"] for c in host.tool_calls] == ["c1", "c2"]

    history = await client.request("session/read", {"sessionId": sid})
    shape = [(e["role"], e["content"][-1]["type"]) for e in history["entries"]]
    assert shape == [
        ("user", "text"),
        ("assistant", "toolCall"),
        ("user", "toolResult"),
        ("assistant", "toolCall"),
        ("user", "toolResult"),
        ("assistant", "text"),
    ]
    run = await client.request("run/get", {"runId": started["runId"]})
    assert run["status"] == "completed" and run["rounds"] == 3 and run["headSeq"] == len(events)
    assert run["usage"]["inputTokens"] == 100
    # the second round's prompt holds the first round: assembled, then stored as a snapshot
    snap_id = [e for e in events if e["type"] == "context.assembled"][1]["payload"]["snapshotId"]
    snapshot = await client.request("snapshot/get", {"snapshotId": snap_id})
    assert [m["role"] for m in snapshot["messages"]] == ["user", "assistant", "user"]
    # each round's prompt is in the session's snapshot index: diffed against the round before
    rounds = [e["payload"]["snapshotId"] for e in events if e["type"] == "context.assembled"]
    diff = await client.request("snapshot/diff", {"to": rounds[1]})
    assert diff["fromSnapshot"] == rounds[0]


async def test_resubscribe_sees_every_event_exactly_once(sidecars: SidecarFactory) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client)
    slow = {"rounds": [{"deltas": [f"w{i} " for i in range(40)], "delayMs": 15}]}
    started = await client.request(
        "run/start",
        {"sessionId": sid, "userTurn": [{"type": "text", "text": "talk"}], "script": slow},
    )
    run_id = started["runId"]
    await host.until(lambda: len(host.of(run_id)) >= 10)
    await client.request("run/unsubscribe", {"runId": run_id})
    seen = [e["seq"] for e in host.of(run_id)]
    await asyncio.sleep(0.2)  # events keep being journaled meanwhile
    assert len(host.of(run_id)) == len(seen)  # nothing arrives while unsubscribed
    result = await client.request("run/subscribe", {"runId": run_id, "afterSeq": seen[-1]})
    assert result["replayed"] > 0
    events = await host.until_done(run_id)
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1))  # every event exactly once, in order
    # after the end, a subscription replays the whole journal and says it is over
    again = await client.request("run/subscribe", {"runId": run_id, "afterSeq": 0})
    assert again["replayed"] == len(seqs) and again["live"] is False


async def test_cancel_while_streaming_and_while_a_tool_is_pending(
    sidecars: SidecarFactory,
) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client)
    slow = {"rounds": [{"deltas": [f"w{i} " for i in range(200)], "delayMs": 10}]}
    first = await client.request(
        "run/start",
        {"sessionId": sid, "userTurn": [{"type": "text", "text": "talk"}], "script": slow},
    )
    await host.until(lambda: any(e["type"] == "model.delta" for e in host.of(first["runId"])))
    with pytest.raises(RpcError) as busy:
        await client.request(
            "run/start", {"sessionId": sid, "userTurn": [{"type": "text", "text": "x"}]}
        )
    assert busy.value.data_code == "session.busy" and busy.value.data["retryable"]
    cancelled = await client.request("run/cancel", {"runId": first["runId"]})
    assert cancelled["status"] == "cancelled"
    count = len(host.of(first["runId"]))
    await asyncio.sleep(0.3)
    events = host.of(first["runId"])
    assert len(events) == count and events[-1]["type"] == "run.completed"
    assert events[-1]["payload"] == {"status": "cancelled"}

    host.block_from_call = 1
    second = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "read"}],
            "tools": TOOLS,
            "script": {
                "rounds": [{"toolCalls": [{"name": "read_file", "arguments": {"path": "x"}}]}]
            },
        },
    )
    await host.until(lambda: len(host.tool_calls) == 1)
    done = await client.request("run/cancel", {"runId": second["runId"]})
    assert done["status"] == "cancelled"
    await host.until(lambda: len(host.cancels) == 1)  # the pending tool/execute was withdrawn
    third = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "again"}],
            "script": {"rounds": [{"text": "fine"}]},
        },
    )
    assert (await host.until_done(third["runId"]))[-1]["payload"]["status"] == "completed"


async def test_a_session_with_an_active_run_cannot_be_deleted(sidecars: SidecarFactory) -> None:
    """``session/delete`` while a run waits for a host tool: ``session.busy`` (retryable),
    the session and the run untouched; once the run is over, the delete goes through."""
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client)
    host.block_from_call = 1  # the tool call stays pending: the run stays active
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "read"}],
            "tools": TOOLS,
            "script": {
                "rounds": [{"toolCalls": [{"name": "read_file", "arguments": {"path": "x"}}]}]
            },
        },
    )
    await host.until(lambda: len(host.tool_calls) == 1)
    with pytest.raises(RpcError) as busy:
        await client.request("session/delete", {"sessionId": sid})
    assert busy.value.data_code == "session.busy" and busy.value.data["retryable"]
    assert (await client.request("session/get", {"sessionId": sid}))["headSeq"] >= 1
    assert (await client.request("run/get", {"runId": started["runId"]}))["status"] not in (
        "completed",
        "failed",
        "cancelled",
    )
    await client.request("run/cancel", {"runId": started["runId"]})
    deleted = await client.request("session/delete", {"sessionId": sid})
    assert deleted == {"sessionId": sid, "deleted": True}
    with pytest.raises(RpcError) as gone:
        await client.request("session/get", {"sessionId": sid})
    assert gone.value.data_code == "session.not_found"


async def test_kill_9_mid_run_then_resume_without_redoing_confirmed_tools(
    sidecars: SidecarFactory,
) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client)
    host.block_from_call = 2  # the first call is confirmed, the second never answers
    script = {
        "rounds": [
            {"toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a"}}]},
            {"toolCalls": [{"id": "c2", "name": "read_file", "arguments": {"path": "b"}}]},
            {"text": "all done"},
        ]
    }
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "go"}],
            "tools": TOOLS,
            "script": script,
        },
    )
    run_id = started["runId"]
    await host.until(lambda: len(host.tool_calls) == 2)
    journaled = len(host.of(run_id))
    client.kill()
    await client.wait()

    restarted = await sidecars.start()
    host2 = Host(restarted)
    run = await restarted.request("run/get", {"runId": run_id})
    assert run["status"] == "failed" and run["failure"]["code"] == "agent.interrupted"
    assert run["failure"]["userRetryable"] is True
    replay = await restarted.request("run/subscribe", {"runId": run_id, "afterSeq": 0})
    events = host2.of(run_id)
    assert replay["replayed"] == len(events) == journaled + 1  # intact, plus its terminal event
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "run.completed"

    resumed = await restarted.request(
        "run/resume", {"runId": run_id, "script": {"rounds": [{"text": "all done"}]}}
    )
    done = await host2.until_done(resumed["runId"])
    assert done[0]["payload"]["resumeOf"] == run_id
    assert done[-1]["payload"]["status"] == "completed"
    assert [c["callId"] for c in host2.tool_calls] == ["c2"]  # c1 was confirmed: not redone
    history = await restarted.request("session/read", {"sessionId": sid})
    results = [
        p["callId"] for e in history["entries"] for p in e["content"] if p["type"] == "toolResult"
    ]
    assert results == ["c1", "c2"]


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


async def test_a_slow_client_bounds_memory_and_loses_nothing(
    sidecars: SidecarFactory, store_dir: Any
) -> None:
    client = await sidecars.start()
    host = Host(client)
    lagged: list[dict[str, Any]] = []
    client.on_notification(
        lambda method, params: lagged.append(params) if method == "run/lagged" else None
    )
    sid = await _session(client)
    baseline = _rss_kib(client.process.pid)
    flood = {"rounds": [{"deltas": ["x" * 2048] * 12000}]}  # ~27 MB of events
    started = await client.request(
        "run/start",
        {"sessionId": sid, "userTurn": [{"type": "text", "text": "flood"}], "script": flood},
    )
    run_id = started["runId"]
    client.pause_reading()
    journal = store_dir / "runs" / run_id / "events.jsonl"
    probes = []  # server/info answers queue up unread; they report the backlog at the time
    peak = baseline
    for _ in range(1200):
        probes.append(client.start_request("server/info", {})[1])
        peak = max(peak, _rss_kib(client.process.pid))
        if journal.exists() and b'"run.completed"' in journal.read_bytes()[-400:]:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the run did not finish while the client was not reading")
    produced = journal.stat().st_size
    assert produced > 24 * 1024 * 1024
    assert (peak - baseline) < 400 * 1024, f"grew {(peak - baseline) // 1024} MiB"
    client.resume_reading()
    backlogs = [(await p)["outboundBacklogBytes"] for p in probes]
    # the unread backlog stays under the cap (4 MiB + one frame), however much is produced
    assert max(backlogs) <= 4 * 1024 * 1024 + 64 * 1024 < produced
    assert max(backlogs) > 1024 * 1024  # and the client really was not reading
    await host.until(lambda: bool(lagged))
    assert lagged[0]["runId"] == run_id and lagged[0]["code"] == "server.overloaded"
    assert lagged[0]["retryAfterMs"] > 0
    live = host.of(run_id)
    assert [e["seq"] for e in live] == list(range(1, lagged[0]["lastSentSeq"] + 1))
    events = await host.catch_up(run_id)
    total = len(journal.read_bytes().splitlines())
    assert [e["seq"] for e in events] == list(range(1, total + 1))  # nothing lost, no dupes
    assert events[-1]["type"] == "run.completed"


async def test_approval_timeout_loop_and_round_limit(sidecars: SidecarFactory) -> None:
    client = await sidecars.start()
    host = Host(client)
    decisions = iter([{"approved": True}, {"approved": False, "reason": "not on Fridays"}])

    async def approve(params: Any) -> Any:
        return next(decisions)

    client.on_request("approval/request", approve)
    sid = await _session(client)
    call = {"name": "read_file", "arguments": {"path": "a"}}
    # approval: the first call is approved and runs, the second is denied and never runs
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "x"}],
            "tools": TOOLS,
            "approvalRequired": ["read_file"],
            "script": {
                "rounds": [
                    {"toolCalls": [call]},
                    {"toolCalls": [{**call, "arguments": {"path": "b"}}]},
                    {"text": "ok"},
                ]
            },
        },
    )
    events = await host.until_done(run["runId"])
    stored = [e["payload"] for e in events if e["type"] == "tool.resultStored"]
    assert [s["isError"] for s in stored] == [False, True]
    assert [c["arguments"]["path"] for c in host.tool_calls] == ["a"]

    # a tool that never answers times out into an error result the model sees
    host.block_from_call = len(host.tool_calls) + 1
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "y"}],
            "tools": TOOLS,
            "toolTimeoutMs": 300,
            "script": {"rounds": [{"toolCalls": [call]}, {"text": "gave up"}]},
        },
    )
    events = await host.until_done(run["runId"])
    assert events[-1]["payload"]["status"] == "completed"
    history = await client.request(
        "session/read", {"sessionId": sid, "beforeSeq": 10**6, "limit": 2}
    )
    result = history["entries"][0]["content"][0]
    assert result["isError"] and "timed out" in result["content"][0]["text"]
    host.block_from_call = 10**9

    # the same call three times is stopped as a loop
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "z"}],
            "tools": TOOLS,
            "script": {"rounds": [{"toolCalls": [call]}] * 5},
        },
    )
    events = await host.until_done(run["runId"])
    assert events[-1]["payload"]["failure"]["code"] == "agent.tool_loop_detected"

    # the round limit
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "w"}],
            "tools": TOOLS,
            "maxRounds": 2,
            "script": {
                "rounds": [
                    {"toolCalls": [{**call, "arguments": {"path": str(i)}}]} for i in range(5)
                ]
            },
        },
    )
    events = await host.until_done(run["runId"])
    failure = events[-1]["payload"]["failure"]
    assert failure["code"] == "agent.max_tool_rounds_exceeded" and failure["userRetryable"]

    # a provider error ends the run as failed, with the provider's code and retry hint
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "v"}],
            "script": {
                "rounds": [
                    {"error": {"code": "model.overloaded", "message": "busy", "retryable": True}}
                ]
            },
        },
    )
    events = await host.until_done(run["runId"])
    failure = events[-1]["payload"]["failure"]
    assert failure["code"] == "model.overloaded" and failure["retryable"] is True
    listed = await client.request("run/list", {"sessionId": sid})
    assert len(listed["runs"]) == 5 and listed["runs"][0]["runId"] == run["runId"]


async def test_a_run_compacts_first_when_the_transcript_is_too_long(
    sidecars: SidecarFactory,
) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client)
    words = "alpha beta gamma delta epsilon " * 40  # ~200 tokens a message
    await client.request(
        "session/append",
        {
            "sessionId": sid,
            "entries": [
                {
                    "kind": "message",
                    "role": "user" if i % 2 == 0 else "assistant",
                    "content": [{"type": "text", "text": f"{i}: {words}"}],
                }
                for i in range(40)
            ],
        },
    )
    profile = {"assembly": {"window": 6000, "maxOutput": 256}}
    script = {
        "rounds": [
            {"text": "Goal: answer questions about 40 notes. Progress: read all of them."},
            {"text": "Here is the answer."},
        ]
    }
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "and now?"}],
            "profile": profile,
            "script": script,
        },
    )
    events = await host.until_done(run["runId"])
    types = [e["type"] for e in events]
    assert events[-1]["payload"] == {"status": "completed"}
    assert types.index("compaction.started") < types.index("compaction.completed")
    assembled = [e["payload"] for e in events if e["type"] == "context.assembled"]
    assert assembled[0]["compaction"]["advised"] is False  # advised before, compacted since
    done = next(e["payload"] for e in events if e["type"] == "compaction.completed")
    assert done["throughSeq"] == 40 and 1 < done["keepFromSeq"] <= 40
    snapshot = await client.request("snapshot/get", {"snapshotId": assembled[0]["snapshotId"]})
    summary = snapshot["system"][-1]
    assert summary["category"] == "summary" and "Goal: answer questions" in summary["text"]
    assert [m["content"][0]["text"] for m in snapshot["messages"]][-1] == "and now?"
    history = await client.request("session/read", {"sessionId": sid, "afterSeq": 40})
    kinds = [e["kind"] for e in history["entries"]]
    assert kinds == ["message", "compaction", "message"]  # user turn, checkpoint, answer
    deltas = [e["payload"]["text"] for e in events if e["type"] == "model.delta"]
    assert deltas == ["Here is the answer."]  # the summary is not streamed as an answer


async def test_delegate_to_a_sub_agent(sidecars: SidecarFactory) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client)
    script = {
        "rounds": [
            {
                "toolCalls": [
                    {
                        "id": "d1",
                        "name": "agent_delegate",
                        "arguments": {"task": "What is in a.py?"},
                    }
                ]
            },
            {"toolCalls": [{"id": "s1", "name": "read_file", "arguments": {"path": "a.py"}}]},
            {"text": "a.py holds the handlers."},
            {"text": "The sub-agent says a.py holds the handlers."},
        ]
    }
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "check a.py"}],
            "tools": TOOLS,
            "delegation": True,
            "script": script,
        },
    )
    events = await host.until_done(run["runId"])
    assert events[-1]["payload"] == {"status": "completed"}
    first = next(e for e in events if e["type"] == "context.assembled")
    snapshot = await client.request("snapshot/get", {"snapshotId": first["payload"]["snapshotId"]})
    assert {"agent_delegate", "agent_handoff"} <= {t["name"] for t in snapshot["tools"]}
    child = [e for e in events if e["payload"].get("agent") == "d1"]
    kinds = [e["type"] for e in child]
    assert kinds[0] == "agent.started" and kinds[-1] == "agent.completed"
    assert child[-1]["payload"]["answer"] == "a.py holds the handlers."
    assert [c["callId"] for c in host.tool_calls] == ["s1"]  # the child's tool ran at the host
    history = await client.request("session/read", {"sessionId": sid})
    parts = [(e["role"], e["content"][-1]["type"]) for e in history["entries"]]
    # the sub-agent's own conversation stays out of the session history
    assert parts == [
        ("user", "text"),
        ("assistant", "toolCall"),
        ("user", "toolResult"),
        ("assistant", "text"),
    ]
    result = history["entries"][2]["content"][0]
    assert result["content"][0]["text"] == "a.py holds the handlers."


async def test_handoff_assembled_by_the_host(sidecars: SidecarFactory) -> None:
    client = await sidecars.start(
        capabilities={"experimental": {"contextSidecar": {"assembly": True}}}
    )
    host = Host(client)
    requests: list[dict[str, Any]] = []

    async def assemble(params: Any) -> Any:
        requests.append(params)
        task = params["turn"][0]["content"][0]["text"]
        return {
            "system": "You are the release agent.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": f"HOST-BUILT {task}"}]}
            ],
        }

    client.on_request("assembly/request", assemble)
    sid = await _session(client)
    script = {
        "rounds": [
            {
                "toolCalls": [
                    {
                        "id": "h1",
                        "name": "agent_handoff",
                        "arguments": {"task": "Write the release notes."},
                    }
                ]
            },
            {"text": "Release notes: fixed everything."},
        ]
    }
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "release"}],
            "delegation": True,
            "script": script,
        },
    )
    events = await host.until_done(run["runId"])
    assert events[-1]["payload"] == {"status": "completed"}
    assert len(requests) == 1 and requests[0]["scope"] == "handoff"
    assert len(requests[0]["fingerprint"]) == 64 and requests[0]["callId"] == "h1"
    assert any(
        e["type"] == "context.assembled" and e["payload"].get("assembledBy") == "host"
        for e in events
    )
    history = await client.request("session/read", {"sessionId": sid})
    last = history["entries"][-1]
    assert last["role"] == "assistant"
    assert last["content"][0]["text"] == "Release notes: fixed everything."


async def test_the_run_start_answer_precedes_the_runs_first_event(
    sidecars: SidecarFactory,
) -> None:
    """Read in stdout's byte order, the ``run/start`` answer comes before any ``run/event`` of
    its run: a client that registers its listener once the answer is in loses nothing."""
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client)
    for turn in range(5):
        msg_id, answer = client.start_request(
            "run/start",
            {
                "sessionId": sid,
                "userTurn": [{"type": "text", "text": f"turn {turn}"}],
                "tools": TOOLS,
                "script": TWO_ROUNDS,
            },
        )
        run_id = (await answer)["runId"]
        await host.until_done(run_id)
        frames = assert_valid_frames(client.stdout_bytes)
        answered = next(i for i, f in enumerate(frames) if f.get("id") == msg_id)
        first_event = next(
            i
            for i, f in enumerate(frames)
            if f.get("method") == "run/event" and f["params"]["runId"] == run_id
        )
        assert "result" in frames[answered]
        assert answered < first_event, f"turn {turn}: run/event {first_event} before the answer"
        assert [e["seq"] for e in host.of(run_id)][:2] == [1, 2]
