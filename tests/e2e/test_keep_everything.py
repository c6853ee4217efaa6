"""keepEverything on model.completed, through a real ``serve`` and a loopback Anthropic server:
two runs of one session (a tool round, its answer, a second turn), each call's figure checked
against a recomputation from what the run recorded — the session's history as ``session/read``
answers it (the transcript keep-everything sends), the tools and system prompt of each body the
server received, each call's output tokens — with Anthropic's rules worked by hand: the first
call writes its whole prompt, each later one reads the previous call's and writes the rest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import UsageUpdate

from protocol._base import parse_wire
from protocol.entries import MessageEntry
from protocol.runs import KeepEverythingCall
from sidecar.acp.usage import META_KEY
from sidecar.context.cache_sim import AnthropicCache, block_tokens
from sidecar.context.keep_everything import lower_message
from sidecar.context.limits import prices_of
from tests.conftest import SidecarFactory
from tests.e2e.acp_kit import acp_agent, initialize
from tests.e2e.test_cache_accounting import (
    KEY_ENV,
    PROVIDERS,
    FakeAnthropic,
    _long_session,
    _tool_round,
    _turn,
)
from tests.e2e.test_runs import TOOLS, Host
from tests.unit.test_providers import FakeServer, Reply

pytestmark = pytest.mark.anyio

MODEL = "claude-sonnet-4-5"
M = 1_000_000


def _tokens(blocks: list[Any]) -> int:
    return sum(block_tokens(b)[1] for b in blocks)


async def test_each_call_carries_keep_everything_equal_to_a_recomputation(
    sidecars: SidecarFactory,
) -> None:
    text = (PROVIDERS / "anthropic_text.sse").read_bytes()
    provider = FakeAnthropic([_tool_round(2), text, text])
    base_url = await provider.start()
    client = await sidecars.start(env={KEY_ENV: "test-key", "NO_PROXY": "127.0.0.1,localhost"})
    profile = {
        "modelBinding": {
            "provider": "anthropic",
            "modelId": MODEL,
            "baseUrl": base_url,
            "connectionRef": f"env:{KEY_ENV}",
        }
    }
    try:
        host = Host(client)
        sid = await _long_session(client)
        events: list[dict[str, Any]] = []
        for ask in ("Read both handlers.", "And now?"):
            params = {"sessionId": sid, "userTurn": _turn(ask), "tools": TOOLS}
            run = await client.request("run/start", {**params, "profile": profile})
            done = await host.until_done(run["runId"])
            assert done[-1]["payload"] == {"status": "completed"}, done[-1]
            events += done
        page = await client.request("session/read", {"sessionId": sid, "limit": 1000})
    finally:
        await provider.stop()

    history = [parse_wire(MessageEntry, e) for e in page["entries"] if e["kind"] == "message"]
    figures: list[KeepEverythingCall] = []
    outputs: list[int] = []
    answers: list[int] = []  # the seq of the assistant message each call stored
    for event in events:
        payload = event["payload"]
        if event["type"] == "model.completed":
            figures.append(KeepEverythingCall.model_validate(payload["keepEverything"]))
            outputs.append(int(payload["usage"]["outputTokens"]))
        elif event["type"] == "history.appended" and payload["role"] == "assistant":
            answers.append(payload["seqs"][0])
    assert len(figures) == len(provider.bodies) == len(answers) == 3

    prices = prices_of(MODEL)
    assert prices is not None
    sizes = {m.seq: _tokens(lower_message(m)["content"]) for m in history}
    own = AnthropicCache()
    previous, ke_total, own_total = 0, 0.0, 0.0
    for k, (figure, body, output, answer) in enumerate(
        zip(figures, provider.bodies, outputs, answers, strict=True)
    ):
        fixed = _tokens(body.get("tools", [])) + _tokens(body.get("system", []))
        prompt = fixed + sum(size for seq, size in sizes.items() if seq < answer)
        assert figure.tokens == prompt, k
        assert not figure.compacted
        read = previous  # the previous call's whole prompt, within the TTL
        expected = (
            read * prices.cache_read
            + (prompt - read) * prices.cache_write_5m
            + output * prices.output
        ) / M
        assert figure.cost == pytest.approx(expected, abs=1e-8), k
        sent = own.price(body, figure.at)  # the call as the server received it
        own_cost = (
            sent.uncached * prices.input
            + sent.write * prices.cache_write_5m
            + sent.read * prices.cache_read
            + output * prices.output
        ) / M
        assert figure.own_tokens == sent.total
        assert figure.own_cost == pytest.approx(own_cost)
        ke_total += expected
        own_total += own_cost
        previous = prompt
        assert figure.session.calls == k + 1  # across both runs of the session
    assert figures[-1].session.cost == pytest.approx(ke_total, abs=1e-7)
    assert figures[-1].session.own_cost == pytest.approx(own_total, abs=1e-7)


async def test_acp_usage_update_carries_the_comparison_in_meta(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two prompts through ``context-sidecar acp`` against a loopback Anthropic server: each
    ``usage_update`` carries, in ``_meta["context-sidecar"]``, the session's keep-everything
    cost so far, recomputed here from ``session/read`` and the bodies the server got."""
    server = FakeServer()
    await server.start()
    text = (PROVIDERS / "anthropic_text.sse").read_bytes()
    server.script(Reply(body=text), Reply(body=text))
    monkeypatch.setenv(KEY_ENV, "test-key")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    binding = {
        "provider": "anthropic",
        "modelId": MODEL,
        "baseUrl": server.url,
        "connectionRef": f"env:{KEY_ENV}",
    }
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"modelBinding": binding}))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    shown: list[dict[str, Any]] = []
    try:
        async with acp_agent(tmp_path, tmp_path / "store", "--profile", str(profile)) as (
            conn,
            editor,
        ):
            await initialize(conn)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            for ask in ("Where is the index?", "And the lock?"):
                answer = await conn.prompt(session_id=sid, prompt=[text_block(ask)])
                assert answer.stop_reason == "end_turn"
                usage = [u for u in editor.take() if isinstance(u, UsageUpdate)]
                assert usage and usage[-1].field_meta is not None
                shown.append(usage[-1].field_meta[META_KEY])
            page = await conn.ext_method("context-sidecar/session/read", {"sessionId": sid})
    finally:
        await server.stop()

    prices = prices_of(MODEL)
    assert prices is not None
    history = [parse_wire(MessageEntry, e) for e in page["entries"] if e["kind"] == "message"]
    answers = [m.seq for m in history if m.role == "assistant"]
    bodies = [r.body for r in server.requests]
    assert len(answers) == len(bodies) == 2
    sizes = {m.seq: _tokens(lower_message(m)["content"]) for m in history}
    own = AnthropicCache()
    previous, keep, sent_cost = 0, 0.0, 0.0
    for k, (body, stored) in enumerate(zip(bodies, answers, strict=True)):
        fixed = _tokens(body.get("tools", [])) + _tokens(body.get("system", []))
        prompt = fixed + sum(size for seq, size in sizes.items() if seq < stored)
        assert prompt >= 1_024  # cacheable: the rules below hold
        output = 14  # anthropic_text.sse's output_tokens
        keep += (
            previous * prices.cache_read
            + (prompt - previous) * prices.cache_write_5m
            + output * prices.output
        ) / M
        sent = own.price(body)
        sent_cost += (
            sent.uncached * prices.input
            + sent.write * prices.cache_write_5m
            + sent.read * prices.cache_read
            + output * prices.output
        ) / M
        previous = prompt
        figures = shown[k]
        assert figures["calls"] == k + 1 and figures["compactions"] == 0
        assert figures["keepEverythingCost"] == pytest.approx(keep, abs=2e-6)
        assert figures["ownCost"] == pytest.approx(sent_cost, abs=2e-6)
        assert figures["saved"] == pytest.approx(keep - sent_cost, abs=4e-6)
