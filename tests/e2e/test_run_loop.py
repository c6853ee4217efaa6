"""The run loop's edges over real stdio: compaction that cannot make room, a loop stopped
mid-round, and the retry flags of every failure the loop builds."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sidecar.client import SidecarClient
from tests.conftest import SidecarFactory
from tests.e2e.test_runs import TOOLS, Host, _session

pytestmark = pytest.mark.anyio

WORDS = "alpha beta gamma delta epsilon "


async def _long_session(client: SidecarClient, *, last_words: int) -> str:
    """Ten ~100-token messages, then a user message of ``last_words`` words: the newest
    part a compaction keeps verbatim is that last message, whatever its size."""
    sid = await _session(client)
    entries = [
        {
            "kind": "message",
            "role": "user" if i % 2 == 0 else "assistant",
            "content": [{"type": "text", "text": f"{i}: {WORDS * 20}"}],
        }
        for i in range(10)
    ]
    entries.append(_user("w " * last_words))
    await client.request("session/append", {"sessionId": sid, "entries": entries})
    return sid


def _user(text: str) -> dict[str, Any]:
    return {"kind": "message", "role": "user", "content": [{"type": "text", "text": text}]}


def _of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["payload"] for e in events if e["type"] == kind]


PROFILE = {"assembly": {"window": 2000, "maxOutput": 256}}


async def test_a_compaction_that_cannot_make_room_is_tried_once(sidecars: SidecarFactory) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = await _long_session(client, last_words=2500)  # the kept part alone is over
    script = {
        "rounds": [
            {"text": "Goal: keep going."},  # the one compaction call
            {"toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a"}}]},
            {"text": "done"},
        ]
    }
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "next"}],
            "tools": TOOLS,
            "profile": PROFILE,
            "script": script,
        },
    )
    events = await host.until_done(run["runId"])
    assert events[-1]["payload"] == {"status": "completed"}
    # one paid summary call for the whole run, not one per attempt or per round
    assert len(_of(events, "compaction.started")) == 1
    assert len(_of(events, "compaction.completed")) == 1
    failed = _of(events, "compaction.failed")
    assert len(failed) == 1
    assert failed[0]["code"] == "agent.compaction_failed"
    assert "did not reduce the transcript below the threshold" in failed[0]["message"]
    assert failed[0]["transcriptTokens"] > failed[0]["thresholdTokens"]
    # the model's own rounds got the script's answer rounds (no summary call took them)
    assert [c["callId"] for c in host.tool_calls] == ["c1"]
    assert [d["text"] for d in _of(events, "model.delta")] == ["done"]
    assembled = _of(events, "context.assembled")
    assert len(assembled) == 2 and all(a["compaction"]["advised"] for a in assembled)
    # the failure is said before the round goes on over the threshold
    types = [e["type"] for e in events]
    assert types.index("compaction.failed") < types.index("context.assembled")


async def test_a_compaction_that_would_archive_nothing_is_not_paid_for(
    sidecars: SidecarFactory,
) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client)
    # one message: all of it is the recent part a compaction keeps verbatim
    await client.request("session/append", {"sessionId": sid, "entries": [_user("w " * 3000)]})
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "next"}],
            "profile": PROFILE,
            "script": {"rounds": [{"text": "answer"}]},
        },
    )
    events = await host.until_done(run["runId"])
    assert events[-1]["payload"] == {"status": "completed"}
    assert _of(events, "compaction.started") == []  # a summary would stand for nothing
    failed = _of(events, "compaction.failed")
    assert len(failed) == 1 and "nothing older" in failed[0]["message"]
    assert [d["text"] for d in _of(events, "model.delta")] == ["answer"]  # not a summary


async def test_failed_summaries_give_up_with_retry_flags(sidecars: SidecarFactory) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = await _long_session(client, last_words=10)
    overloaded = {"code": "model.overloaded", "message": "busy", "retryable": True}
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "next"}],
            "profile": PROFILE,
            "script": {"rounds": [{"text": " "}, {"error": overloaded}, {"error": overloaded}]},
        },
    )
    events = await host.until_done(run["runId"])
    failed = _of(events, "compaction.failed")
    assert [f["attempt"] for f in failed] == [1, 2, 3]
    assert failed[0]["code"] == "agent.compaction_failed" and failed[0]["retryable"] is False
    assert failed[1]["code"] == "model.overloaded" and failed[1]["retryable"] is True
    failure = events[-1]["payload"]["failure"]
    assert failure["code"] == "agent.compaction_failed"
    assert failure["retryable"] is True and failure["userRetryable"] is True


def _calls_and_results(entries: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    parts = [p for e in entries if e["kind"] == "message" for p in e["content"]]
    calls = [p["callId"] for p in parts if p["type"] == "toolCall"]
    results = [p["callId"] for p in parts if p["type"] == "toolResult"]
    return calls, results


async def test_a_loop_stopped_mid_round_answers_every_call(sidecars: SidecarFactory) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client)
    same = {"name": "read_file", "arguments": {"path": "a"}}
    script = {
        "rounds": [
            {"toolCalls": [{**same, "id": "r1"}]},
            {"toolCalls": [{**same, "id": "r2"}]},
            {  # the third repeat stops the run before the two calls after it
                "toolCalls": [
                    {**same, "id": "r3"},
                    {"id": "b1", "name": "read_file", "arguments": {"path": "b"}},
                    {"id": "b2", "name": "read_file", "arguments": {"path": "c"}},
                ]
            },
        ]
    }
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "go"}],
            "tools": TOOLS,
            "script": script,
        },
    )
    events = await host.until_done(run["runId"])
    failure = events[-1]["payload"]["failure"]
    assert failure["code"] == "agent.tool_loop_detected"
    assert failure["retryable"] is False and failure["userRetryable"] is True
    assert [c["callId"] for c in host.tool_calls] == ["r1", "r2"]  # nothing after the stop ran
    history = await client.request("session/read", {"sessionId": sid})
    calls, results = _calls_and_results(history["entries"])
    assert calls == results == ["r1", "r2", "r3", "b1", "b2"]
    last = history["entries"][-1]["content"]
    assert [p["isError"] for p in last] == [True]
    assert "not run: loop detected" in last[0]["content"][0]["text"]
    stored = [p["callId"] for p in _of(events, "tool.resultStored")]
    assert stored == ["r1", "r2", "r3", "b1", "b2"]

    # the next prompt pairs every call with its result (no "interrupted" notes)
    frozen = await client.request(
        "input/freeze",
        {"sessionId": sid, "userTurn": [{"type": "text", "text": "again"}], "tools": TOOLS},
    )
    snap = await client.request(
        "snapshot/assemble", {"sessionId": sid, "inputId": frozen["inputId"]}
    )
    lowered = await client.request(
        "snapshot/lower", {"snapshotId": snap["snapshotId"], "target": "anthropic-messages"}
    )
    messages = lowered["body"]["messages"]
    blocks = [b for m in messages if isinstance(m["content"], list) for b in m["content"]]
    uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
    answers = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    assert uses == answers == ["r1", "r2", "r3", "b1", "b2"]
    assert not any("interrupted" in str(b.get("text", "")) for b in blocks)


async def test_a_handoff_mid_round_answers_the_calls_after_it(sidecars: SidecarFactory) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client)
    script = {
        "rounds": [
            {
                "toolCalls": [
                    {"id": "h1", "name": "agent_handoff", "arguments": {"task": "finish"}},
                    {"id": "x1", "name": "read_file", "arguments": {"path": "a"}},
                ]
            },
            {"text": "finished"},
        ]
    }
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "go"}],
            "tools": TOOLS,
            "delegation": True,
            "script": script,
        },
    )
    events = await host.until_done(run["runId"])
    assert events[-1]["payload"] == {"status": "completed"}
    assert host.tool_calls == []
    history = await client.request("session/read", {"sessionId": sid})
    calls, results = _calls_and_results(history["entries"])
    assert calls == results == ["h1", "x1"]
    last = history["entries"][-1]
    assert last["role"] == "assistant" and last["content"][0]["text"] == "finished"


async def test_a_host_assembly_that_times_out_fails_the_sub_agent_only(
    sidecars: SidecarFactory,
) -> None:
    client = await sidecars.start(
        capabilities={"experimental": {"contextSidecar": {"assembly": True}}}
    )
    host = Host(client)

    async def never(params: Any) -> Any:
        await host.block.wait()  # never set

    client.on_request("assembly/request", never)
    sid = await _session(client)
    script = {
        "rounds": [
            {"toolCalls": [{"id": "d1", "name": "agent_delegate", "arguments": {"task": "t"}}]},
            {"text": "went on without it"},
        ]
    }
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "go"}],
            "delegation": True,
            "toolTimeoutMs": 300,
            "script": script,
        },
    )
    events = await host.until_done(run["runId"])
    assert events[-1]["payload"] == {"status": "completed"}
    done = _of(events, "agent.completed")
    assert done[0]["failed"] is True and "assembly/request" in done[0]["answer"]
    assert [d["text"] for d in _of(events, "model.delta")] == ["went on without it"]


async def test_a_cold_cache_compaction_is_taken_once_and_never_a_failure(
    sidecars: SidecarFactory,
) -> None:
    """``cache.compactWhenCold``: the session's last model call is 20 minutes old (a 5-minute
    cache has expired, the next request writes the prompt again anyway) and the transcript is
    past the share though far under the threshold: the run compacts once, before its first
    round, and goes on; when the summary leaves it past the share (the cache is still cold),
    no second summary is paid for and no ``compaction.failed`` is said."""
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client)
    old = time.time() - 20 * 60
    entries = []
    for i in range(40):  # ~32k tokens: past the ~20k a compaction keeps verbatim
        entries.append(_user(f"question {i}: {WORDS * 80}"))
        answer = {
            "kind": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": f"answer {i}: {WORDS * 80}"}],
            "meta": {"transcript": {"at": old + i}},
        }
        entries.append(answer)
    await client.request("session/append", {"sessionId": sid, "entries": entries})
    limits = {"window": 200_000, "maxOutput": 256}
    profile = {"assembly": {**limits, "cache": {"compactWhenCold": 0.1}}}
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "next"}],
            "profile": profile,
            "script": {"rounds": [{"text": "Goal: keep going."}, {"text": "answer"}]},
        },
    )
    events = await host.until_done(run["runId"])
    assert events[-1]["payload"] == {"status": "completed"}
    assembled = _of(events, "context.assembled")
    first = assembled[0]["compaction"]
    assert first["advised"] and first["reason"] == "coldCache"
    assert first["transcriptTokens"] < first["thresholdTokens"]
    assert len(_of(events, "compaction.started")) == 1  # one summary, not one per attempt
    assert len(_of(events, "compaction.completed")) == 1
    assert _of(events, "compaction.failed") == []  # a saving not taken again is no failure
    assert [d["text"] for d in _of(events, "model.delta")] == ["answer"]
    # switched off: the same session is assembled without advice
    answer = await client.request(
        "context/assemble",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "next"}],
            "profile": {**limits, "cache": {"compactWhenCold": None}},
        },
    )
    assert answer["compaction"]["advised"] is False and answer["compaction"]["reason"] is None
