"""Cache accounting over real stdio: ``context/assemble`` and ``snapshot/assemble`` answers
carry ``cache``; a run against a loopback Anthropic server journals the prediction next to the
usage the server reports, and places a marker at the previous round's last cache entry when a
round of many parallel tool calls puts it out of the 20-block look-back."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from protocol.context import CacheAccounting
from sidecar.client import SidecarClient
from tests.conftest import SidecarFactory
from tests.e2e.test_runs import TOOLS, Host

pytestmark = pytest.mark.anyio

PROVIDERS = Path(__file__).parent.parent / "data" / "providers"
LONG = "The store keeps one JSONL file per session, appends only, and indexes by seq. " * 60
KEY_ENV = "CS_TEST_ANTHROPIC_KEY"


def _msg(role: str, text: str) -> dict[str, Any]:
    return {"kind": "message", "role": role, "content": [{"type": "text", "text": text}]}


def _turn(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


async def _long_session(client: SidecarClient) -> str:
    created = await client.request("session/create", {"title": "cache"})
    sid = str(created["sessionId"])
    await client.request(
        "session/append",
        {"sessionId": sid, "entries": [_msg("user", "Explain. " + LONG), _msg("assistant", LONG)]},
    )
    return sid


async def test_assemble_answers_carry_cache_and_the_next_turn_reads_the_earlier_prefix(
    sidecar: SidecarClient,
) -> None:
    sid = await _long_session(sidecar)
    params = {"sessionId": sid, "date": "2026-11-30", "tools": TOOLS}
    first = await sidecar.request(
        "context/assemble", {**params, "userTurn": _turn("Where is the index?")}
    )
    cache = first["cache"]
    CacheAccounting.model_validate(cache, by_alias=True)
    assert cache["againstPrevious"] is False and cache["readTokens"] == 0
    last = first["cacheBreakpoints"][-1]
    assert cache["writeTokens"] == last["prefixTokens"] > 1024
    assert (
        cache["readTokens"] + cache["writeTokens"] + cache["uncachedTokens"]
        == (cache["inputTokens"])
    )
    assert cache["cost"]["currency"] == "USD" and cache["cost"]["total"] > 0

    await sidecar.request(
        "session/append",
        {
            "sessionId": sid,
            "entries": [
                _msg("user", "Where is the index?"),
                _msg("assistant", "In store/. " + LONG),
            ],
        },
    )
    second = await sidecar.request(
        "context/assemble",
        {**params, "userTurn": _turn("Add a /version endpoint."), "lowerTo": "openai-chat"},
    )
    cache = second["cache"]
    assert cache["againstPrevious"] is True and cache["firstChange"] is None
    assert cache["readTokens"] == last["prefixTokens"]  # everything the first turn cached
    assert (
        cache["writeTokens"]
        == second["cacheBreakpoints"][-1]["prefixTokens"] - last["prefixTokens"]
    )
    assert second["body"]["prompt_cache_key"] == sid  # OpenAI routes the session together
    assert cache["cost"]["cacheRead"] == round(cache["readTokens"] * 0.3 / 1e6, 6)  # Sonnet

    # snapshot/assemble answers too, against the session's previous snapshot
    frozen = await sidecar.request(
        "input/freeze",
        {"sessionId": sid, "userTurn": _turn("Add a /version endpoint."), "tools": TOOLS},
    )
    snap = await sidecar.request(
        "snapshot/assemble", {"sessionId": sid, "inputId": frozen["inputId"]}
    )
    assert snap["cache"]["againstPrevious"] is False  # no snapshot before it in the index
    again = await sidecar.request(
        "snapshot/assemble", {"sessionId": sid, "inputId": frozen["inputId"]}
    )
    assert again["snapshotId"] == snap["snapshotId"]  # the accounting is not in the snapshot
    stored = await sidecar.request("snapshot/get", {"snapshotId": snap["snapshotId"]})
    assert "cache" not in stored
    assert again["cache"]["againstPrevious"] and again["cache"]["writeTokens"] == 0
    assert again["cache"]["readTokens"] == stored["cacheBreakpoints"][-1]["prefixTokens"]


async def test_cache_lifetimes_reach_the_breakpoints_the_body_and_the_price(
    sidecar: SidecarClient,
) -> None:
    """The profile's ``cache``: 1-hour Anthropic markers on the stable prefix, sent as
    ``ttl: "1h"`` and priced at the 1-hour rate; OpenAI's ``24h`` retention sent where the
    model takes it, a warning where it does not; a growing setting refused at the edge."""
    sid = await _long_session(sidecar)
    notes = [{"id": "notes", "text": LONG * 2}]  # a system prompt worth caching on its own
    params = {"sessionId": sid, "date": "2026-11-30", "tools": TOOLS, "sources": notes}
    hybrid = {"prefixTtl": "1h", "tailTtl": "5m"}
    answer = await sidecar.request(
        "context/assemble",
        {
            **params,
            "userTurn": _turn("Where is the index?"),
            "profile": {"cache": hybrid},
            "lowerTo": "anthropic-messages",
        },
    )
    ttls = [(p["location"], p["ttl"]) for p in answer["cacheBreakpoints"]]
    assert ttls[0] == ("system", "1h") and ttls[-1] == ("message", "5m"), ttls
    controls = [b["cache_control"] for b in answer["body"]["system"] if "cache_control" in b]
    assert controls == [{"type": "ephemeral", "ttl": "1h"}]
    cache = answer["cache"]
    one_hour = answer["cacheBreakpoints"][0]["prefixTokens"]
    assert cache["oneHourWriteTokens"] == one_hour > 0
    assert cache["cost"]["cacheWrite"] == round(
        (one_hour * 6.0 + (cache["writeTokens"] - one_hour) * 3.75) / 1e6, 6
    )  # Sonnet 4.5: 2x and 1.25x of $3

    for model, sent in (("gpt-5", True), ("gpt-4o", False)):
        openai = await sidecar.request(
            "context/assemble",
            {
                **params,
                "userTurn": _turn("Where is the index?"),
                "profile": {"provider": "openai", "model": model, "cache": {"retention": "24h"}},
                "lowerTo": "openai-responses",
            },
        )
        assert (openai["body"].get("prompt_cache_retention") == "24h") is sent, model
        assert {p.get("ttl") for p in openai["cacheBreakpoints"]} == {"24h" if sent else None}
        codes = [d["code"] for d in openai["diagnostics"]]
        assert ("cache.retention_unsupported" in codes) is not sent, codes

    with pytest.raises(Exception, match="longer TTLs first") as refused:
        await sidecar.request(
            "context/assemble",
            {
                **params,
                "userTurn": _turn("x"),
                "profile": {"cache": {"prefixTtl": "5m", "tailTtl": "1h"}},
            },
        )
    assert getattr(refused.value, "code", None) == -32602


# --- a run against a loopback Anthropic server ---------------------------------------------------


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _tool_round(calls: int) -> bytes:
    """A Messages API stream asking for ``calls`` parallel read_file calls."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_calls",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-sonnet-4-5",
                "usage": {
                    "input_tokens": 30,
                    "cache_creation_input_tokens": 2048,
                    "cache_read_input_tokens": 0,
                    "output_tokens": 1,
                },
            },
        }
    ]
    for i in range(calls):
        events += [
            {
                "type": "content_block_start",
                "index": i,
                "content_block": {
                    "type": "tool_use",
                    "id": f"toolu_{i}",
                    "name": "read_file",
                    "input": {},
                },
            },
            {
                "type": "content_block_delta",
                "index": i,
                "delta": {
                    "type": "input_json_delta",
                    "partial_json": json.dumps({"path": f"f{i}.py"}),
                },
            },
            {"type": "content_block_stop", "index": i},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    return _sse(events)


@dataclass
class FakeAnthropic:
    """``POST /v1/messages``: records each request body, answers with the next stream."""

    replies: list[bytes]
    bodies: list[dict[str, Any]] = field(default_factory=list)
    server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readline()
            headers: dict[str, str] = {}
            while (line := (await reader.readline()).decode().strip()) != "":
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            self.bodies.append(json.loads(body))
            reply = self.replies.pop(0)
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                + f"content-length: {len(reply)}\r\nconnection: close\r\n\r\n".encode()
                + reply
            )
            await writer.drain()
        finally:
            writer.close()


def _markers(body: dict[str, Any]) -> list[tuple[str, int]]:
    """Where a body's cache_control markers are: ("system", i) or ("message", i)."""
    out = [("system", i) for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    for i, message in enumerate(body["messages"]):
        if any("cache_control" in block for block in message["content"]):
            out.append(("message", i))
    return out


async def test_a_run_journals_the_predicted_cache_next_to_the_reported_usage(
    sidecars: SidecarFactory,
) -> None:
    calls = 25  # more than the 20-block look-back
    provider = FakeAnthropic([_tool_round(calls), (PROVIDERS / "anthropic_text.sse").read_bytes()])
    base_url = await provider.start()
    client = await sidecars.start(env={KEY_ENV: "test-key", "NO_PROXY": "127.0.0.1,localhost"})
    try:
        host = Host(client)
        sid = await _long_session(client)
        run = await client.request(
            "run/start",
            {
                "sessionId": sid,
                "userTurn": _turn("Read every handler."),
                "tools": TOOLS,
                "profile": {
                    "modelBinding": {
                        "provider": "anthropic",
                        "modelId": "claude-sonnet-4-5",
                        "baseUrl": base_url,
                        "connectionRef": f"env:{KEY_ENV}",
                    }
                },
            },
        )
        events = await host.until_done(run["runId"])
    finally:
        await provider.stop()
    assert events[-1]["payload"] == {"status": "completed"}, events[-1]
    assert len(host.tool_calls) == calls
    completed = [e["payload"] for e in events if e["type"] == "model.completed"]
    assert len(completed) == 2
    first, second = completed
    # round 1: nothing before it in this process; the whole prompt is written
    assert first["predictedCache"]["againstPrevious"] is False
    assert first["predictedCache"]["readTokens"] == 0
    assert first["usage"]["cacheWriteTokens"] == 2048
    # round 2: the prediction and what the server reported, side by side in one event
    predicted, usage = second["predictedCache"], second["usage"]
    assert usage["cacheReadTokens"] == 3072  # from anthropic_text.sse
    assert predicted["againstPrevious"] is True and predicted["firstChange"] is None
    assert predicted["readTokens"] > 1024 and predicted["writeTokens"] > 0

    # round 2's request carries a marker where round 1's last one was (its user turn),
    # which the 25 tool_use blocks put out of the markers' reach; never more than four
    one, two = provider.bodies
    assert ("message", len(one["messages"]) - 1) in _markers(one)
    assert ("message", len(one["messages"]) - 1) in _markers(two)
    assert len(_markers(two)) <= 4 and json.dumps(two).count("cache_control") <= 4
    run_record = await client.request("run/get", {"runId": run["runId"]})
    assert run_record["usage"]["cacheReadTokens"] == 3072
