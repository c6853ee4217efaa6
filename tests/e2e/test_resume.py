"""``run/resume`` continues a run with exactly what it was started with, after a real kill -9.

The run record keeps every start setting (profile, approvals, tool timeout, round limit,
delegation, compaction, the scripted provider's script), so a resumed run asks for the same
approvals, runs on the same provider, window and tools, and a run recorded before the
settings were kept still resumes, on safe defaults that it names.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest

from sidecar.client import RpcError
from tests.e2e.test_runs import TOOLS, Host

if TYPE_CHECKING:
    from pathlib import Path

    from sidecar.client import SidecarClient
    from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio


class Approver:
    """Answers ``approval/request``: never (the first lifetime), or with a fixed decision."""

    def __init__(self, client: SidecarClient, decision: bool | None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.decision = decision
        self._never = asyncio.Event()
        client.on_request("approval/request", self._ask)

    async def _ask(self, params: Any) -> Any:
        self.requests.append(params)
        if self.decision is None:
            await self._never.wait()  # pending until the kill
        return {"approved": self.decision, "reason": "checked by the test"}


async def _killed(client: SidecarClient) -> None:
    client.kill()
    await client.wait()


async def _session(client: SidecarClient) -> str:
    return str((await client.request("session/create", {"title": "resume"}))["sessionId"])


@pytest.mark.parametrize("approved", [False, True], ids=["deny", "allow"])
async def test_a_run_killed_during_a_pending_approval_asks_again_when_resumed(
    sidecars: SidecarFactory, approved: bool
) -> None:
    client = await sidecars.start()
    host = Host(client)
    approver = Approver(client, None)
    sid = await _session(client)
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "read a"}],
            "tools": TOOLS,
            "approvalRequired": ["read_file"],
            "toolTimeoutMs": 600_000,
            "script": {
                "rounds": [
                    {"toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a"}}]},
                    {"text": "done"},
                ]
            },
        },
    )
    run_id = started["runId"]
    await host.until(lambda: len(approver.requests) == 1)
    await _killed(client)
    assert host.tool_calls == []  # asked, never answered

    restarted = await sidecars.start()
    host2 = Host(restarted)
    approver2 = Approver(restarted, approved)
    run = await restarted.request("run/get", {"runId": run_id})
    assert run["settings"]["approvalRequired"] == ["read_file"]
    assert run["settings"]["toolTimeoutMs"] == 600_000
    resumed = await restarted.request("run/resume", {"runId": run_id})
    events = await host2.until_done(resumed["runId"])
    assert events[-1]["payload"] == {"status": "completed"}
    assert [r["callId"] for r in approver2.requests] == ["c1"]  # asked again
    stored = [e["payload"] for e in events if e["type"] == "tool.resultStored"]
    assert [(s["callId"], s["isError"]) for s in stored] == [("c1", not approved)]
    assert [c["callId"] for c in host2.tool_calls] == (["c1"] if approved else [])
    # the script goes on where the killed run stopped: its second round answers
    deltas = [e["payload"]["text"] for e in events if e["type"] == "model.delta"]
    assert deltas == ["done"]
    again = await restarted.request("run/get", {"runId": resumed["runId"]})
    rest = again["settings"].pop("scriptBlob")  # the rounds not yet played
    assert rest != run["settings"].pop("scriptBlob")
    assert again["settings"] == run["settings"]  # a resume of the resume asks the same


async def test_a_profile_bound_run_resumes_on_the_same_provider_window_and_tools(
    sidecars: SidecarFactory,
) -> None:
    client = await sidecars.start()
    host = Host(client)
    host.block_from_call = 1  # the first tool call never answers: the kill finds it pending
    sid = await _session(client)
    # the input names a hosted model; the profile binds the run to a local scripted one
    frozen = await client.request(
        "input/freeze",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "read a"}],
            "tools": TOOLS,
            "modelConnection": {
                "provider": "openai",
                "modelId": "gpt-hosted",
                "connectionRef": "env:CONTEXT_SIDECAR_TEST_NO_SUCH_KEY",
            },
        },
    )
    profile = await client.request(
        "profile/create",
        {
            "name": "local",
            "modelBinding": {"provider": "scripted", "modelId": "toy-local"},
            "assembly": {"window": 9000, "maxOutput": 512},
            "agentSystemPrompt": "You are the toy agent.",
        },
    )
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "inputId": frozen["inputId"],
            "profileId": profile["profileId"],
            "delegation": True,
            "script": {
                "rounds": [
                    {"toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a"}}]},
                    {"text": "read it"},
                ]
            },
        },
    )
    run_id = started["runId"]
    await host.until(lambda: len(host.tool_calls) == 1)
    first = host.of(run_id)
    await _killed(client)

    restarted = await sidecars.start()
    host2 = Host(restarted)
    resumed = await restarted.request("run/resume", {"runId": run_id})
    events = await host2.until_done(resumed["runId"])
    assert events[-1]["payload"] == {"status": "completed"}
    assert [c["callId"] for c in host2.tool_calls] == ["c1"]  # the pending call, asked again

    def model(events: list[dict[str, Any]]) -> tuple[str, str]:
        created = next(e["payload"] for e in events if e["type"] == "model.requestCreated")
        return created["provider"], created["model"]

    async def prompt(events: list[dict[str, Any]]) -> tuple[int, list[str], str]:
        assembled = next(e["payload"] for e in events if e["type"] == "context.assembled")
        snap = await restarted.request("snapshot/get", {"snapshotId": assembled["snapshotId"]})
        system = " ".join(s["text"] for s in snap["system"])
        return assembled["dashboard"]["window"], sorted(t["name"] for t in snap["tools"]), system

    assert model(events) == model(first) == ("scripted", "toy-local")
    window, tools, system = await prompt(events)
    assert (window, tools, system) == await prompt(first)
    assert window == 9000 and "You are the toy agent." in system
    assert tools == ["agent_delegate", "agent_handoff", "read_file"]
    deltas = [e["payload"]["text"] for e in events if e["type"] == "model.delta"]
    assert deltas == ["read it"]  # the profile's scripted model, where it stopped


async def test_a_run_recorded_before_settings_were_kept_resumes_asking_for_every_tool(
    sidecars: SidecarFactory, store_dir: Path
) -> None:
    client = await sidecars.start()
    host = Host(client)
    host.block_from_call = 1
    sid = await _session(client)
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "read a"}],
            "tools": TOOLS,
            "script": {
                "rounds": [
                    {"toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a"}}]}
                ]
            },
        },
    )
    run_id = started["runId"]
    await host.until(lambda: len(host.tool_calls) == 1)
    await _killed(client)
    # an older sidecar wrote this record: no start settings in it
    path = store_dir / "runs" / run_id / "run.json"
    record = json.loads(path.read_bytes())
    del record["settings"]
    path.write_text(json.dumps(record))

    restarted = await sidecars.start()
    host2 = Host(restarted)
    approver = Approver(restarted, False)
    assert "settings" not in await restarted.request("run/get", {"runId": run_id})
    resumed = await restarted.request("run/resume", {"runId": run_id})
    events = await host2.until_done(resumed["runId"])
    assert events[-1]["payload"]["status"] == "completed"
    created = events[0]["payload"]
    assert created["resumeOf"] == run_id and created["settingsDefaulted"] is True
    # not knowing which tools needed approval, the resumed run asks for every one
    assert [r["callId"] for r in approver.requests] == ["c1"] and host2.tool_calls == []
    run = await restarted.request("run/get", {"runId": resumed["runId"]})
    assert run["settings"]["approvalRequired"] == ["read_file"]


async def test_two_resumes_of_one_run_at_once_start_one_run(
    sidecars: SidecarFactory,
) -> None:
    client = await sidecars.start()
    host = Host(client)
    host.block_from_call = 1
    sid = await _session(client)
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "read a"}],
            "tools": TOOLS,
            "script": {
                "rounds": [
                    {"toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a"}}]},
                    {"text": "done"},
                ]
            },
        },
    )
    await host.until(lambda: len(host.tool_calls) == 1)
    await _killed(client)

    restarted = await sidecars.start()
    host2 = Host(restarted)
    # storing the rest of the script takes a moment off the event loop: the session is
    # claimed across it, so the second resume finds it busy
    answers = await asyncio.gather(
        *(restarted.start_request("run/resume", {"runId": started["runId"]})[1] for _ in range(2)),
        return_exceptions=True,
    )
    runs = [a for a in answers if isinstance(a, dict)]
    refused = [a for a in answers if isinstance(a, RpcError)]
    assert len(runs) == 1 and [e.data_code for e in refused] == ["session.busy"], answers
    await host2.until_done(runs[0]["runId"])
    assert [c["callId"] for c in host2.tool_calls] == ["c1"]


async def test_a_run_killed_after_compacting_resumes_on_its_summary_without_compacting_again(
    sidecars: SidecarFactory,
) -> None:
    client = await sidecars.start()
    host = Host(client)
    host.block_from_call = 1
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
    script = {
        "rounds": [
            {"text": "Goal: answer questions about 40 notes. Progress: read all of them."},
            {"toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a"}}]},
            {"text": "Here is the answer."},
        ]
    }
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "and now?"}],
            "tools": TOOLS,
            "profile": {"assembly": {"window": 6000, "maxOutput": 256}},
            "script": script,
        },
    )
    await host.until(lambda: len(host.tool_calls) == 1)
    assert any(e["type"] == "compaction.completed" for e in host.of(started["runId"]))
    await _killed(client)

    restarted = await sidecars.start()
    host2 = Host(restarted)
    resumed = await restarted.request("run/resume", {"runId": started["runId"]})
    events = await host2.until_done(resumed["runId"])
    assert events[-1]["payload"] == {"status": "completed"}
    types = [e["type"] for e in events]
    assert "compaction.started" not in types  # the killed run's summary still stands
    assembled = next(e["payload"] for e in events if e["type"] == "context.assembled")
    assert assembled["compaction"]["advised"] is False
    snapshot = await restarted.request("snapshot/get", {"snapshotId": assembled["snapshotId"]})
    assert "Goal: answer questions" in snapshot["system"][-1]["text"]
    # the script goes on after the rounds played, the summary's included
    deltas = [e["payload"]["text"] for e in events if e["type"] == "model.delta"]
    assert deltas == ["Here is the answer."]


async def test_a_resumed_run_keeps_its_tool_timeout_and_round_limit(
    sidecars: SidecarFactory,
) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client)
    calls = [
        {"toolCalls": [{"id": f"c{i}", "name": "read_file", "arguments": {"path": str(i)}}]}
        for i in range(4)
    ]
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "read them"}],
            "tools": TOOLS,
            "toolTimeoutMs": 300,
            "maxRounds": 2,
            "script": {
                "rounds": [{"deltas": [f"w{i} " for i in range(400)], "delayMs": 20}, *calls]
            },
        },
    )
    run_id = started["runId"]
    await host.until(lambda: any(e["type"] == "model.delta" for e in host.of(run_id)))
    await _killed(client)  # mid-stream: the first round never settled

    restarted = await sidecars.start()
    host2 = Host(restarted)
    host2.block_from_call = 1  # no tool ever answers: each one times out
    resumed = await restarted.request("run/resume", {"runId": run_id})
    events = await host2.until_done(resumed["runId"])
    failure = events[-1]["payload"]["failure"]
    assert failure["code"] == "agent.max_tool_rounds_exceeded"  # after 2 rounds, not 10
    assert [c["callId"] for c in host2.tool_calls] == ["c0", "c1"]
    history = await restarted.request("session/read", {"sessionId": sid})
    results = [p for e in history["entries"] for p in e["content"] if p["type"] == "toolResult"]
    assert [r["content"][0]["text"] for r in results] == ["tool/execute timed out after 0.3 s"] * 2


async def test_a_kept_run_can_be_resumed_after_a_gc(sidecars: SidecarFactory) -> None:
    """gc keeps what a run record names (its frozen input and script): resume needs them."""
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client)
    frozen = await client.request(
        "input/freeze",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "say it slowly"}],
            "attachments": [{"kind": "snippet", "path": "notes", "content": "only in the input"}],
        },
    )
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "inputId": frozen["inputId"],
            "script": {"rounds": [{"deltas": [f"w{i} " for i in range(400)], "delayMs": 20}]},
        },
    )
    run_id = started["runId"]
    await host.until(lambda: any(e["type"] == "model.delta" for e in host.of(run_id)))
    await _killed(client)

    restarted = await sidecars.start()
    host2 = Host(restarted)
    await restarted.request("store/gc", {"graceSeconds": 0, "keepRecent": 0})
    resumed = await restarted.request("run/resume", {"runId": run_id})
    events = await host2.until_done(resumed["runId"])
    assert events[-1]["payload"] == {"status": "completed"}


async def test_a_resume_with_revision_guidance_still_answers_the_pending_call_first(
    sidecars: SidecarFactory,
) -> None:
    """The guidance is a user message after the killed round's calls, but it answers none of
    them: the call left pending is run again (the one answered before the kill is not), and
    the resumed round's request pairs each call with its one result, the guidance after them.
    Mutation: ``unanswered`` taking any user message after the calls as their answer leaves
    ``c2`` without a result for good, and no test without guidance sees it."""
    client = await sidecars.start()
    host = Host(client)
    host.block_from_call = 2  # c1 is answered, c2 never: the kill finds it pending
    sid = await _session(client)
    calls = [
        {"id": "c1", "name": "read_file", "arguments": {"path": "a"}},
        {"id": "c2", "name": "read_file", "arguments": {"path": "b"}},
    ]
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "read a and b"}],
            "tools": TOOLS,
            "script": {"rounds": [{"toolCalls": calls}, {"text": "b it is"}]},
        },
    )
    run_id = started["runId"]
    await host.until(lambda: len(host.tool_calls) == 2)
    await _killed(client)

    restarted = await sidecars.start()
    host2 = Host(restarted)
    guidance = "Prefer b over a from now on."
    resumed = await restarted.request("run/resume", {"runId": run_id, "revisionGuidance": guidance})
    events = await host2.until_done(resumed["runId"])
    assert events[-1]["payload"] == {"status": "completed"}
    assert [c["callId"] for c in host2.tool_calls] == ["c2"]  # asked again; c1 not redone
    history = await restarted.request("session/read", {"sessionId": sid})
    results = [
        p["callId"] for e in history["entries"] for p in e["content"] if p["type"] == "toolResult"
    ]
    assert results == ["c1", "c2"]  # every call has its one result in history

    # the request the resumed round sends: both calls paired with their results, then guidance
    assembled = next(e["payload"] for e in events if e["type"] == "context.assembled")
    lowered = await restarted.request(
        "snapshot/lower",
        {"snapshotId": assembled["snapshotId"], "target": "anthropic-messages"},
    )
    messages = lowered["body"]["messages"]
    asked, answered = messages[-2:]
    assert asked["role"] == "assistant" and answered["role"] == "user"
    assert [(b["type"], b.get("id")) for b in asked["content"]] == [
        ("tool_use", "c1"),
        ("tool_use", "c2"),
    ]
    blocks = [(b["type"], b.get("tool_use_id")) for b in answered["content"]]
    assert blocks == [("tool_result", "c1"), ("tool_result", "c2"), ("text", None)]
    texts = [b["content"][0]["text"] for b in answered["content"][:2]]
    assert texts == ["contents of a", "contents of b"]
    assert answered["content"][2]["text"] == guidance
    deltas = [e["payload"]["text"] for e in events if e["type"] == "model.delta"]
    assert deltas == ["b it is"]
