"""The built-in workspace tools on the ``serve`` face, over real stdio.

A scripted coding task on a repository with a bug and a failing test — list, grep (a
.gitignore'd copy is not found), glob, read, edit, run the tests: green at the end.  The
look-around calls ask nothing; the edit and the command go through ``approval/request`` with
what they would do (the diff, the command); every call's events say what happened; host tools
still run beside them.  Then the modes (``read_only`` refuses without asking, also when only
the session says so; ``allow_all`` asks nothing), a profile narrowing the set, and the errors a
host gets for a run that cannot have them.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sidecar.client import RpcError, SidecarClient
from sidecar.tools.bounds import count_tokens
from tests.bodies import assert_prefix_kept
from tests.conftest import SidecarFactory
from tests.e2e.workspace_kit import fixture_repo

pytestmark = pytest.mark.anyio

HOST_TOOL = {
    "name": "open_ticket",
    "description": "Open a ticket.",
    "parameters": {"type": "object", "properties": {"title": {"type": "string"}}},
}


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"toolCalls": [{"id": call_id, "name": name, "arguments": arguments}]}


class Host:
    """The host's side: events, approvals (answered from a list), host tool calls."""

    def __init__(self, client: SidecarClient, answers: list[bool] | None = None) -> None:
        self.client = client
        self.events: list[dict[str, Any]] = []
        self.asked: list[dict[str, Any]] = []
        self.executed: list[dict[str, Any]] = []
        self.answers = list(answers or [])
        client.on_notification(self._notified)
        client.on_request("approval/request", self._approve)
        client.on_request("tool/execute", self._execute)

    def _notified(self, method: str, params: Any) -> None:
        if method == "run/event":
            self.events.append(params)

    async def _approve(self, params: Any) -> Any:
        self.asked.append(params)
        ok = self.answers.pop(0) if self.answers else False
        return {"approved": ok} if ok else {"approved": False, "reason": "no"}

    async def _execute(self, params: Any) -> Any:
        self.executed.append(params)
        return {"content": [{"type": "text", "text": "ticket 7 opened"}]}

    async def run(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        started = await self.client.request("run/start", params)
        run_id = started["runId"]

        async def done() -> None:
            while not any(
                e["runId"] == run_id and e["type"] == "run.completed" for e in self.events
            ):
                await asyncio.sleep(0.01)

        await asyncio.wait_for(done(), 60)
        return [e for e in self.events if e["runId"] == run_id]


def by_call(events: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {e["payload"]["callId"]: e["payload"] for e in events if e["type"] == kind}


def text(payload: dict[str, Any]) -> str:
    return "".join(part["text"] for part in payload["content"])


async def _session(client: SidecarClient, root: Path, **extra: Any) -> str:
    created = await client.request(
        "session/create", {"title": "tools", "workspaceRoots": [str(root)], **extra}
    )
    return str(created["sessionId"])


async def test_a_coding_task_with_builtin_tools(sidecars: SidecarFactory, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    fixture_repo(repo)
    (repo / "big.py").write_text("".join(f"x_{i} = {i}  # TODO\n" for i in range(5000)))
    (repo / "many.txt").write_text("".join(f"needle {i}\n" for i in range(20_000)))
    test_cmd = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    client = await sidecars.start()
    host = Host(client, answers=[True, True])
    sid = await _session(client, repo)
    events = await host.run(
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "fix the failing test"}],
            "tools": [HOST_TOOL],
            "builtinTools": {},
            "maxRounds": 20,
            "script": {
                "rounds": [
                    call("list_dir", "l1"),
                    call("grep", "g1", pattern=r"return a - b"),
                    call("glob", "f1", pattern="**/*.py"),
                    call("read_file", "r1", path="calc/add.py"),
                    call("edit_file", "e1", path="calc/add.py", old_text="a - b", new_text="a + b"),
                    call("run_command", "c1", command=test_cmd),
                    call("read_file", "r2", path="big.py"),
                    call("grep", "g2", pattern="needle"),
                    call("open_ticket", "t1", title="fixed add"),
                    {"text": "fixed"},
                ]
            },
        }
    )
    assert events[-1]["payload"]["status"] == "completed", events[-1]
    requested = by_call(events, "tool.callRequested")
    approvals = by_call(events, "tool.approval")
    stored = by_call(events, "tool.resultStored")
    # looked around without asking; the edit and the command were asked, with what they do
    assert [a["callId"] for a in host.asked] == ["e1", "c1"]
    edit, command = host.asked
    assert edit["builtin"] and edit["effect"] == "edit" and edit["mode"] == "ask"
    assert edit["change"] == {
        "path": "calc/add.py",
        "oldText": "def add(a, b):\n    return a - b\n",
        "newText": "def add(a, b):\n    return a + b\n",
        "created": False,
        "omitted": False,
    }
    assert command["command"] == test_cmd and command["cwd"] == "."
    assert {k: (v["verdict"], v["approved"]) for k, v in approvals.items()} == {
        "e1": ("ask", True),
        "c1": ("ask", True),
    }
    # each call's events show it: built-in ones carry their result, host ones go to the host
    assert {k for k, v in requested.items() if v.get("builtin")} == {
        "l1",
        "g1",
        "f1",
        "r1",
        "e1",
        "c1",
        "r2",
        "g2",
    }
    assert requested["t1"].get("builtin") is None
    assert [requested[k]["title"] for k in ("l1", "g1", "r1", "e1")] == [
        "List .",
        "Search `return a - b`",
        "Read calc/add.py",
        "Edit calc/add.py",
    ]
    assert requested["c1"]["title"].startswith("Run `") and requested["c1"]["effect"] == "execute"
    assert [x["callId"] for x in host.executed] == ["t1"]
    listing = text(stored["l1"])
    assert "calc/" in listing and "build" not in listing
    assert text(stored["g1"]).splitlines() == [
        "1 match in 1 file",
        "calc/add.py: 1 match",
        "  2:     return a - b",
    ]
    assert "build" not in text(stored["f1"])
    assert stored["e1"]["change"]["newText"].endswith("a + b\n")
    assert stored["c1"]["exitCode"] == 0 and "1 passed" in text(stored["c1"])
    assert (repo / "calc" / "add.py").read_text() == "def add(a, b):\n    return a + b\n"
    # a 5,000-line read and a grep of 20,000 matches: bounded, and they say how to go on
    read = text(stored["r2"]).splitlines()
    assert stored["r2"]["truncated"] and read[0] == "   1\tx_0 = 0  # TODO"
    assert read[-1].startswith(f"[lines 1-{len(read) - 1} of 5000 shown; read on with offset=")
    assert count_tokens(text(stored["r2"])) <= 10_000
    found = text(stored["g2"])
    assert stored["g2"]["truncated"] and found.startswith("20000 matches in 1 file")
    assert count_tokens(found) <= 10_000
    # what the model saw: the built-in tools first (catalog order), the host's after
    frozen = await client.request("input/get", {"inputId": events[0]["payload"]["inputId"]})
    assert [t["name"] for t in frozen["tools"]] == [
        "list_dir",
        "glob",
        "grep",
        "read_file",
        "write_file",
        "edit_file",
        "run_command",
        "recall",
        "update_plan",
        "open_ticket",
    ]
    # history holds every result, as the model read it
    page = await client.request("session/read", {"sessionId": sid, "afterSeq": 0, "limit": 100})
    results = {
        p["callId"]: p
        for e in page["entries"]
        for p in e.get("content", [])
        if p.get("type") == "toolResult"
    }
    assert set(results) == set(requested)
    assert results["r2"]["content"] == stored["r2"]["content"]


async def test_modes_decide_what_asks(sidecars: SidecarFactory, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    fixture_repo(repo)
    client = await sidecars.start()
    host = Host(client)
    script = {
        "rounds": [
            call("read_file", "r1", path="calc/add.py"),
            call("write_file", "w1", path="calc/add.py", content="overwritten\n"),
            call("run_command", "c1", command="touch ran.txt"),
            {"text": "done"},
        ]
    }
    turn = [{"type": "text", "text": "go"}]

    # read_only: the write and the command are refused without asking; the read runs
    sid = await _session(client, repo)
    events = await host.run(
        {
            "sessionId": sid,
            "userTurn": turn,
            "builtinTools": {"mode": "read_only"},
            "script": script,
        }
    )
    stored = by_call(events, "tool.resultStored")
    assert host.asked == []
    assert not stored["r1"]["isError"]
    assert stored["w1"]["isError"] and text(stored["w1"]).startswith("refused: write_file")
    assert stored["c1"]["isError"] and "read_only" in text(stored["c1"])
    assert (repo / "calc" / "add.py").read_text().startswith("def add")
    assert not (repo / "ran.txt").exists()
    verdicts = {k: v["verdict"] for k, v in by_call(events, "tool.approval").items()}
    assert verdicts == {"w1": "refuse", "c1": "refuse"}

    # a session an ACP client set to read_only is read-only for a serve run too
    sid = await _session(client, repo, meta={"acp": {"approvalMode": "read_only"}})
    events = await host.run(
        {"sessionId": sid, "userTurn": turn, "builtinTools": {}, "script": script}
    )
    assert host.asked == [] and not (repo / "ran.txt").exists()
    assert by_call(events, "tool.resultStored")["w1"]["isError"]

    # ask (the default), denied: nothing written, the model is told
    sid = await _session(client, repo)
    events = await host.run(
        {"sessionId": sid, "userTurn": turn, "builtinTools": {}, "script": script}
    )
    assert [a["callId"] for a in host.asked] == ["w1", "c1"]
    assert text(by_call(events, "tool.resultStored")["w1"]) == "not approved: no"
    assert not (repo / "ran.txt").exists()

    # accept_edits: the write runs unasked, the command is asked
    host.asked.clear()
    events = await host.run(
        {
            "sessionId": sid,
            "userTurn": turn,
            "builtinTools": {"mode": "accept_edits"},
            "script": script,
        }
    )
    assert [a["callId"] for a in host.asked] == ["c1"]
    assert (repo / "calc" / "add.py").read_text() == "overwritten\n"

    # allow_all: nothing asked, everything runs
    host.asked.clear()
    events = await host.run(
        {
            "sessionId": sid,
            "userTurn": turn,
            "builtinTools": {"mode": "allow_all"},
            "script": script,
        }
    )
    assert host.asked == [] and (repo / "ran.txt").exists()


async def test_a_profile_narrows_the_tools(sidecars: SidecarFactory, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    fixture_repo(repo)
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client, repo)
    profile = {"name": "look only", "builtinTools": {"tools": ["grep", "read_file", "glob"]}}
    events = await host.run(
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "look"}],
            "profile": profile,
            "builtinTools": {"tools": ["read_file", "grep", "run_command"]},
            "script": {"rounds": [{"text": "looked"}]},
        }
    )
    frozen = await client.request("input/get", {"inputId": events[0]["payload"]["inputId"]})
    assert [t["name"] for t in frozen["tools"]] == ["grep", "read_file"]
    # a profile alone turns them on
    events = await host.run(
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "look"}],
            "profile": profile,
            "script": {"rounds": [call("glob", "f1", pattern="*.py"), {"text": "x"}]},
        }
    )
    assert by_call(events, "tool.callRequested")["f1"]["builtin"] is True
    assert host.executed == []
    # a run that names none turns them off, whatever its profile says
    events = await host.run(
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "look"}],
            "profile": profile,
            "builtinTools": {"tools": []},
            "tools": [{**HOST_TOOL, "name": "grep"}],
            "script": {"rounds": [{"text": "x"}]},
        }
    )
    frozen = await client.request("input/get", {"inputId": events[0]["payload"]["inputId"]})
    assert [t["name"] for t in frozen["tools"]] == ["grep"]


async def test_runs_that_cannot_have_them_are_refused(
    sidecars: SidecarFactory, tmp_path: Path
) -> None:
    client = await sidecars.start()
    Host(client)
    created = await client.request("session/create", {"title": "no roots"})
    turn = [{"type": "text", "text": "x"}]
    with pytest.raises(RpcError) as no_roots:
        await client.request(
            "run/start",
            {"sessionId": created["sessionId"], "userTurn": turn, "builtinTools": {}},
        )
    assert no_roots.value.data["code"] == "params.invalid"
    assert "workspaceRoots" in no_roots.value.message
    sid = await _session(client, tmp_path)
    clash = {**HOST_TOOL, "name": "grep"}
    with pytest.raises(RpcError) as clashed:
        await client.request(
            "run/start",
            {"sessionId": sid, "userTurn": turn, "tools": [clash], "builtinTools": {}},
        )
    assert clashed.value.data["code"] == "params.invalid" and "grep" in clashed.value.message
    with pytest.raises(RpcError) as unknown:
        await client.request(
            "run/start",
            {"sessionId": sid, "userTurn": turn, "builtinTools": {"tools": ["rm_rf"]}},
        )
    assert unknown.value.data["code"] == "params.invalid"
    # the session is free and works after each refusal
    started = await client.request(
        "run/start",
        {"sessionId": sid, "userTurn": turn, "script": {"rounds": [{"text": "ok"}]}},
    )
    assert started["runId"]


def _tool_turns(n: int, size: int) -> list[dict[str, Any]]:
    """``n`` turns, each reading a file whose result is ``size`` words."""
    entries: list[dict[str, Any]] = []
    for i in range(n):
        call_id = f"old_{i}"
        result = {"type": "text", "text": f"contents of m{i}.py: " + f"word{i} " * size}
        entries += [
            {"kind": "message", "role": "user", "content": [{"type": "text", "text": f"step {i}"}]},
            {
                "kind": "message",
                "role": "assistant",
                "content": [
                    {
                        "type": "toolCall",
                        "callId": call_id,
                        "name": "read_file",
                        "arguments": {"path": f"m{i}.py"},
                    }
                ],
            },
            {
                "kind": "message",
                "role": "user",
                "content": [{"type": "toolResult", "callId": call_id, "content": [result]}],
            },
            {"kind": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        ]
    return entries


async def test_recall_brings_a_masked_result_back(sidecars: SidecarFactory, tmp_path: Path) -> None:
    client = await sidecars.start()
    host = Host(client)
    sid = await _session(client, tmp_path)
    entries = _tool_turns(8, 800)
    entries[2]["content"][0]["content"][0]["text"] += "huge " * 30_000  # m0.py: over the bound
    await client.request("session/append", {"sessionId": sid, "entries": entries})
    profile = {"assembly": {"masking": {"protectTokens": 2000, "batchTokens": 1000}}}
    assembled = await client.request(
        "context/assemble",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "?"}],
            "profile": profile["assembly"],
        },
    )
    masked = [i for i in assembled["ledger"] if i["visibility"] == "masked"]
    assert len(masked) >= 2
    first, second = sorted(masked, key=lambda i: i["fromSeq"])[:2]
    placeholder = json.dumps(assembled["messages"])
    # no recall tool in this request: the placeholder says how the host brings it back
    assert second["itemId"] in placeholder and "session/recover" in placeholder
    assert "recall" not in placeholder
    offered = await client.request(
        "context/assemble",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "?"}],
            "profile": profile["assembly"],
            "tools": [{"name": "recall", "description": "bring a masked result back"}],
        },
    )
    placeholder = json.dumps(offered["messages"])
    assert f"call the recall tool with ledger id {second['itemId']}" in placeholder
    events = await host.run(
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "what was in m1.py?"}],
            "profile": profile,
            "builtinTools": {"tools": ["recall"]},
            "script": {
                "rounds": [
                    call("recall", "k1", id=second["itemId"]),
                    call("recall", "k2", id=first["itemId"]),
                    call("recall", "k3", id="ctx_transcript_0000000000000000"),
                    call("recall", "k4", id="../../etc/passwd"),
                    {"text": "it read word1"},
                ]
            },
        }
    )
    stored = by_call(events, "tool.resultStored")
    assert host.asked == []  # recall is a read: never asked
    back = text(stored["k1"])
    assert back.startswith(f"[recalled {second['itemId']}: the tool result at seq ")
    assert "contents of m1.py: word1 word1" in back and not stored["k1"]["truncated"]
    # bounded like any result: the 30,000-word result comes back cut, saying so
    huge = text(stored["k2"])
    assert stored["k2"]["truncated"] and "cut to 10,000 tokens" in huge
    assert count_tokens(huge) <= 10_100
    assert stored["k3"]["isError"] and "no tool result" in text(stored["k3"])
    assert stored["k4"]["isError"] and "ledger id" in text(stored["k4"])
    # what the model saw next: the recalled output, in the last request's messages
    snapshot_id = [e for e in events if e["type"] == "context.assembled"][-1]["payload"][
        "snapshotId"
    ]
    snapshot = await client.request("snapshot/get", {"snapshotId": snapshot_id})
    assert "contents of m1.py: word1 word1" in json.dumps(snapshot["messages"][-8:])


def _list_dir_round() -> bytes:
    """A Messages API stream asking for one list_dir call with two arguments."""
    from tests.e2e.test_cache_accounting import _sse

    usage = {"input_tokens": 30, "cache_read_input_tokens": 0, "output_tokens": 1}
    start = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}
    return _sse(
        [
            {"type": "message_start", "message": {**start, "model": "m", "usage": usage}},
            {"type": "content_block_start", "index": 0, "content_block": tool_use},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"path":".","depth":1}'},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": usage},
            {"type": "message_stop"},
        ]
    )


async def test_the_bodies_sent_keep_their_prefix_across_rounds_and_turns(
    sidecars: SidecarFactory, tmp_path: Path
) -> None:
    """Turn n and turn n+1 through a loopback provider that records every body: the tools,
    the system prompt and every message before the new content are the same bytes."""
    from tests.e2e.test_cache_accounting import KEY_ENV, PROVIDERS, FakeAnthropic

    fixture_repo(tmp_path / "repo")
    text = (PROVIDERS / "anthropic_text.sse").read_bytes()
    provider = FakeAnthropic([_list_dir_round(), text, text])
    base_url = await provider.start()
    client = await sidecars.start(env={KEY_ENV: "k", "NO_PROXY": "127.0.0.1,localhost"})
    binding = {
        "provider": "anthropic",
        "modelId": "claude-sonnet-4-5",
        "baseUrl": base_url,
        "connectionRef": f"env:{KEY_ENV}",
    }
    try:
        host = Host(client)
        sid = await _session(client, tmp_path / "repo")
        for prompt in ("list the repo", "and now?"):
            events = await host.run(
                {
                    "sessionId": sid,
                    "userTurn": [{"type": "text", "text": prompt}],
                    "builtinTools": {},
                    "profile": {"modelBinding": binding},
                }
            )
            assert events[-1]["payload"]["status"] == "completed", events[-1]
    finally:
        await provider.stop()
    bodies = provider.bodies
    assert len(bodies) == 3  # turn 1: the call, then the answer; turn 2: the answer
    # the built-in tools' block never moves; every message before the new content is the same
    # bytes, within the turn and across turns (the call's arguments as the model wrote them)
    assert_prefix_kept("anthropic-messages", bodies)
