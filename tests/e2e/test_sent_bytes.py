"""The body sent is the body planned: a request's prefix is the previous request's bytes.

Real runs (``run/start`` over stdio, a host answering ``tool/execute``) against a loopback
provider that records every body as it came over the socket (``bench.loopback``): the model
calls a two-argument tool every turn, writing its arguments in its own key order.  For every
request, every unit the previous request sent — each tool, each system block, each message —
comes back in the same bytes (``cache_control`` markers aside: they move to the newest content),
within a run, across turns and across a restart of the process; for each provider the sidecar
speaks, and, through ``snapshot/lower``, for every lowering of the same snapshots.

The units are cut from the recorded bytes by ``tests.bodies``, independently of the sidecar's
own ``sidecar.context.sent``: a body is parsed keeping its key order and each unit written back
compact, so two units are equal only if the provider saw the same bytes.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from acp import text_block

from bench.loopback import LoopbackModel, Reply, ToolUse, last_is_tool_results
from sidecar.client import SidecarClient
from tests.bodies import assert_prefix_kept, compact, units
from tests.conftest import SidecarFactory
from tests.e2e.acp_kit import acp_agent, initialize
from tests.e2e.test_runs import Host

pytestmark = pytest.mark.anyio

KEY_ENV = "CS_TEST_PROVIDER_KEY"
MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o", "gemini": "gemini-2.5-flash"}
#: The arguments as the model writes them: not in sorted order (``content`` < ``path``).
ARGUMENTS = '{"path":"notes.txt","content":"hello notes\\n"}'
NOTES_TOOL = {
    "name": "write_notes",
    "description": "Write the notes file.",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
}
LONG = "The store keeps one JSONL file per session, appends only, indexes by seq. " * 40
TARGETS = ("anthropic-messages", "openai-chat", "openai-responses", "gemini", "system-as-user")


def _script(calls: itertools.count[int]) -> Any:
    """A model that writes the notes at the start of every turn, then answers."""

    def reply(provider: str, body: dict[str, Any]) -> Reply:
        n = next(calls)
        if last_is_tool_results(provider, body):
            return Reply(f"Done ({n}). " + LONG[:400])
        return Reply("Writing the notes.", (ToolUse(f"call_{n}", "write_notes", ARGUMENTS),))

    return reply


async def _turn(client: SidecarClient, sid: str, text: str, binding: dict[str, Any]) -> Host:
    host = Host(client)
    run = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": text}],
            "tools": [NOTES_TOOL],
            "profile": {"modelBinding": binding},
        },
    )
    events = await host.until_done(run["runId"])
    assert events[-1]["payload"] == {"status": "completed"}, events[-1]
    return host


@pytest.mark.parametrize("provider", ["anthropic", "openai", "gemini"])
async def test_each_request_repeats_the_previous_ones_bytes_across_turns_and_a_restart(
    sidecars: SidecarFactory, provider: str
) -> None:
    model = LoopbackModel(provider, _script(itertools.count(1)))
    base_url = await model.start()
    env = {KEY_ENV: "k", "NO_PROXY": "127.0.0.1,localhost"}
    binding = {
        "provider": provider,
        "modelId": MODELS[provider],
        "baseUrl": base_url,
        "connectionRef": f"env:{KEY_ENV}",
    }
    snapshots: list[str] = []
    try:
        client = await sidecars.start(env=env)
        created = await client.request("session/create", {"title": "bytes"})
        sid = created["sessionId"]
        entry = {"kind": "message", "role": "user", "content": [{"type": "text", "text": LONG}]}
        await client.request("session/append", {"sessionId": sid, "entries": [entry]})
        for text in ("Write the notes.", "Again, please."):
            host = await _turn(client, sid, text, binding)
            snapshots += [
                e["payload"]["snapshotId"] for e in host.events if e["type"] == "context.assembled"
            ]
        await client.close()
        client = await sidecars.start(env=env)  # the same store, a new process
        host = await _turn(client, sid, "Once more.", binding)
        snapshots += [
            e["payload"]["snapshotId"] for e in host.events if e["type"] == "context.assembled"
        ]
        lowered = {
            target: [
                (await client.request("snapshot/lower", {"snapshotId": s, "target": target}))[
                    "body"
                ]
                for s in snapshots
            ]
            for target in TARGETS
        }
    finally:
        await model.stop()

    bodies = model.bodies
    assert len(bodies) == 6  # three turns: the call, then the answer
    target = {"anthropic": "anthropic-messages", "openai": "openai-chat"}.get(provider, "gemini")
    assert_prefix_kept(target, bodies)  # within a run, across turns, across the restart
    # the two-argument call of turn 1 goes back as the model wrote it, in every later request
    for body in bodies[1:]:
        assert _calls_sent(provider, body)[0] == ARGUMENTS, _calls_sent(provider, body)
    assert len(_calls_sent(provider, bodies[-1])) == 3
    # prompt_cache_key goes only to api.openai.com: another server may refuse the field
    assert not any("prompt_cache_key" in body for body in bodies)
    # every lowering of the same snapshots keeps its prefix too
    assert len(snapshots) == 6
    # and each round's snapshot is the prompt it sent: lowered for the provider's own target,
    # the same units as the body the provider received
    for index, (sent, stored) in enumerate(zip(bodies, lowered[target], strict=True)):
        assert units(stored) == units(sent), f"request {index + 1}: its snapshot differs"
    for name, lowered_bodies in lowered.items():
        assert_prefix_kept(name, lowered_bodies)


def _calls_sent(provider: str, body: dict[str, Any]) -> list[str]:
    """The tool calls' arguments in a body, as compact JSON in the order sent."""
    if provider == "openai":
        return [
            call["function"]["arguments"]
            for m in body["messages"]
            for call in m.get("tool_calls", [])
        ]
    if provider == "anthropic":
        blocks = [
            b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
        ]
        return [compact(b["input"]).decode() for b in blocks if b.get("type") == "tool_use"]
    parts = [p for c in body["contents"] for p in c.get("parts", [])]
    return [compact(p["functionCall"]["args"]).decode() for p in parts if "functionCall" in p]


async def test_the_acp_face_sends_the_same_bytes_across_turns_and_a_session_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As issue 19 saw it: an ACP editor (the official SDK) on a loopback OpenAI-compatible
    server; the model reads a file with two arguments every turn; the editor restarts the agent
    and loads the session before the third prompt."""
    read_arguments = '{"path":"notes.txt","limit":5}'  # sorted would be limit, path
    counter = itertools.count(1)

    def reply(provider: str, body: dict[str, Any]) -> Reply:
        n = next(counter)
        if last_is_tool_results(provider, body):
            return Reply(f"Read it ({n}).")
        return Reply("Reading.", (ToolUse(f"call_{n}", "read_file", read_arguments),))

    model = LoopbackModel("openai", reply)
    await model.start()
    monkeypatch.setenv(KEY_ENV, "sk-loopback")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    profile = tmp_path / "profile.json"
    binding = {
        "provider": "openai",
        "modelId": "gpt-4o",
        "baseUrl": model.base_url,
        "connectionRef": f"env:{KEY_ENV}",
    }
    profile.write_text(json.dumps({"modelBinding": binding}))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello notes\n" + LONG)
    store = tmp_path / "store"
    args = ("--profile", str(profile))
    try:
        async with acp_agent(tmp_path, store, *args) as (conn, _):
            await initialize(conn)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            for text in ("Read the notes.", "Read them again."):
                answer = await conn.prompt(session_id=sid, prompt=[text_block(text)])
                assert answer.stop_reason == "end_turn"
        async with acp_agent(tmp_path, store, *args) as (conn, _):
            await initialize(conn)
            await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            answer = await conn.prompt(session_id=sid, prompt=[text_block("Once more.")])
            assert answer.stop_reason == "end_turn"
    finally:
        await model.stop()
    bodies = model.bodies
    assert len(bodies) == 6
    assert_prefix_kept("openai-chat", bodies)
    for body in bodies[1:]:
        assert _calls_sent("openai", body)[0] == read_arguments
