"""Reasoning kept between requests, through a real ``serve`` process and loopback providers.

Each provider's loopback server speaks its documented stream and records every request body
as bytes; the host runs the tools.  What the product promises (issue 42, items 1 and 2):

- ``openai-responses``: a two-turn run with parallel function calls sends the first round's
  encrypted reasoning item back, byte for byte, in every later request of the session, with
  ``store: false`` and ``include: ["reasoning.encrypted_content"]``;
- Gemini 3: the second request carries the ``thoughtSignature`` the first answer's call came
  with, and no stand-in;
- Anthropic: the second request carries the signed ``thinking`` block and the
  ``redacted_thinking`` block, in the order they came, before the tool uses;
- a profile asking for provider-side context management is refused (``params.invalid``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sidecar.client import RpcError, SidecarClient
from sidecar.runs.providers.gemini import SKIP_SIGNATURE
from tests.conftest import SidecarFactory
from tests.e2e.test_runs import TOOLS, Host, _session
from tests.unit.test_openai_responses import Call, Reasoning, responses_stream
from tests.unit.test_providers import FakeServer, Reply, sse

pytestmark = pytest.mark.anyio

KEY_ENV = "CS_REASONING_TEST_KEY"
KEY = "sk-loopback-reasoning-0c4e"


def compact(value: Any) -> bytes:
    """JSON as the transport writes it (httpx: compact, UTF-8)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


async def _run(
    client: SidecarClient,
    host: Host,
    sid: str,
    binding: dict[str, Any],
    text: str,
) -> list[dict[str, Any]]:
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": text}],
            "tools": TOOLS,
            "profile": {"modelBinding": binding},
        },
    )
    events = await host.until_done(started["runId"])
    assert events[-1]["payload"] == {"status": "completed"}, events[-1]
    return events


async def _start(sidecars: SidecarFactory) -> tuple[FakeServer, SidecarClient, Host, str]:
    server = FakeServer()
    await server.start()
    client = await sidecars.start(env={KEY_ENV: KEY, "NO_PROXY": "127.0.0.1,localhost"})
    return server, client, Host(client), await _session(client)


# --- OpenAI Responses --------------------------------------------------------------------------

R1 = Reasoning("rs_68a1f0c2", ("Two files to read.", "Read both at once."), "gAAAAABo-R1-enc==")
R2 = Reasoning("rs_68a1f0c9", ("Both read.",), "gAAAAABo-R2-enc==")
CALLS = (
    Call("fc_1", "call_a", "read_file", '{"path":"a.py"}'),
    Call("fc_2", "call_b", "read_file", '{"path":"b.py"}'),
)


def _sent_item(reasoning: Reasoning) -> dict[str, Any]:
    """The item as received in ``response.output_item.done``, which must come back."""
    return {
        "type": "reasoning",
        "id": reasoning.id,
        "summary": [{"type": "summary_text", "text": t} for t in reasoning.summary],
        "encrypted_content": reasoning.encrypted,
    }


async def test_responses_sends_encrypted_reasoning_back_byte_for_byte(
    sidecars: SidecarFactory,
) -> None:
    server, client, host, sid = await _start(sidecars)
    server.script(
        Reply(body=responses_stream(R1, *CALLS), chunk_size=50),
        Reply(body=responses_stream(R2, "Both files read.")),
        Reply(body=responses_stream("Nothing else to do.")),
    )
    binding = {
        "provider": "openai-responses",
        "modelId": "gpt-5-codex",
        "baseUrl": server.url + "/v1",
        "connectionRef": f"env:{KEY_ENV}",
    }
    try:
        first = await _run(client, host, sid, binding, "Read a.py and b.py")
        await _run(client, host, sid, binding, "Anything else?")
        history = await client.request("session/read", {"sessionId": sid})
    finally:
        await server.stop()

    assert [c["arguments"]["path"] for c in host.tool_calls] == ["a.py", "b.py"]
    usage = [e["payload"]["usage"] for e in first if e["type"] == "model.completed"]
    assert usage[0]["reasoningTokens"] == 4
    assert len(server.requests) == 3
    for request in server.requests:
        assert request.path == "/v1/responses"
        assert request.body["store"] is False
        assert request.body["include"] == ["reasoning.encrypted_content"]
    # history keeps the reasoning item verbatim, in its place before the calls
    assistant = history["entries"][1]
    assert [p["type"] for p in assistant["content"]] == ["reasoning", "toolCall", "toolCall"]
    assert assistant["content"][0]["data"] == R1.encrypted
    assert assistant["content"][0]["id"] == R1.id
    # every later request carries the first round's item, the same bytes, as it came
    r1 = compact(_sent_item(R1))
    first_body, *later = server.requests
    assert b"rs_" not in first_body.raw
    for request in later:
        assert request.raw.count(r1) == 1
        kinds = [item["type"] for item in request.body["input"]]
        at = kinds.index("reasoning")
        assert kinds[at : at + 3] == ["reasoning", "function_call", "function_call"]
    # and the second round's in the next turn, followed by the text it led to
    assert server.requests[2].raw.count(compact(_sent_item(R2))) == 1
    # the prefix stays: the second request's input opens the third's, byte for byte
    second_input = compact(server.requests[1].body["input"])[:-1]  # without the closing ]
    assert compact(server.requests[2].body["input"]).startswith(second_input)


# --- Gemini 3 ----------------------------------------------------------------------------------

GEMINI_MODEL = "gemini-3-flash-preview"
SIGNATURE = "CiQB0e2Kb7Jx-gemini-3-signature-of-the-first-call=="


def _gemini_chunk(parts: list[dict[str, Any]], **candidate: Any) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0, **candidate}],
        "modelVersion": GEMINI_MODEL,
    }


async def test_gemini_3_gets_back_the_signature_its_call_came_with(
    sidecars: SidecarFactory,
) -> None:
    server, client, host, sid = await _start(sidecars)
    calls = sse(
        _gemini_chunk([{"text": "Which files first?", "thought": True}]),
        {
            **_gemini_chunk(
                [
                    {
                        "functionCall": {"name": "read_file", "args": {"path": "a.py"}},
                        "thoughtSignature": SIGNATURE,
                    },
                    {"functionCall": {"name": "read_file", "args": {"path": "b.py"}}},
                ],
                finishReason="STOP",
            ),
            "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 30},
            "responseId": "round-one",
        },
    )
    answer = sse(_gemini_chunk([{"text": "Both read."}], finishReason="STOP"))
    server.script(Reply(body=calls), Reply(body=answer))
    binding = {
        "provider": "gemini",
        "modelId": GEMINI_MODEL,
        "baseUrl": server.url,
        "connectionRef": f"env:{KEY_ENV}",
    }
    try:
        await _run(client, host, sid, binding, "Read a.py and b.py")
        history = await client.request("session/read", {"sessionId": sid})
    finally:
        await server.stop()

    calls_kept = [p for p in history["entries"][1]["content"] if p["type"] == "toolCall"]
    assert [p.get("signature") for p in calls_kept] == [SIGNATURE, None]
    second = server.requests[1]
    model_turn = second.body["contents"][-2]
    assert model_turn["parts"] == [
        {
            "functionCall": {"name": "read_file", "args": {"path": "a.py"}},
            "thoughtSignature": SIGNATURE,
        },
        {"functionCall": {"name": "read_file", "args": {"path": "b.py"}}},
    ]
    assert SKIP_SIGNATURE.encode() not in second.raw


# --- Anthropic ---------------------------------------------------------------------------------

THINKING = "a.py first, then b.py; both at once."
THINKING_SIGNATURE = "EqQBCkgIBRABGAIiQL-signed-thinking=="
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT-redacted=="


def _anthropic_stream(*blocks: dict[str, Any], stop: str) -> bytes:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-sonnet-4-5",
                "usage": {"input_tokens": 50, "output_tokens": 1},
            },
        }
    ]
    for index, block in enumerate(blocks):
        kind = block["type"]
        opened: dict[str, Any]
        if kind == "thinking":
            opened = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"][:10]},
                {"type": "thinking_delta", "thinking": block["thinking"][10:]},
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        elif kind == "tool_use":
            opened = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        elif kind == "text":
            opened = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"]}]
        else:  # redacted_thinking comes whole
            opened, deltas = block, []
        events.append({"type": "content_block_start", "index": index, "content_block": opened})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    events += [
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]
    return sse(*events, named=True)


async def test_anthropic_keeps_signed_and_redacted_thinking_in_order(
    sidecars: SidecarFactory,
) -> None:
    server, client, host, sid = await _start(sidecars)
    thinking = {"type": "thinking", "thinking": THINKING, "signature": THINKING_SIGNATURE}
    redacted = {"type": "redacted_thinking", "data": REDACTED}
    uses = [
        {"type": "tool_use", "id": f"toolu_0{n}", "name": "read_file", "input": {"path": p}}
        for n, p in enumerate(("a.py", "b.py"))
    ]
    server.script(
        Reply(body=_anthropic_stream(thinking, redacted, *uses, stop="tool_use"), chunk_size=64),
        Reply(body=_anthropic_stream({"type": "text", "text": "Both read."}, stop="end_turn")),
    )
    binding = {
        "provider": "anthropic",
        "modelId": "claude-sonnet-4-5",
        "baseUrl": server.url,
        "connectionRef": f"env:{KEY_ENV}",
    }
    try:
        await _run(client, host, sid, binding, "Read a.py and b.py")
    finally:
        await server.stop()

    second = server.requests[1].body
    assistant = second["messages"][-2]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == [thinking, redacted, *uses]


# --- provider-side context management ----------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "parameters"),
    [
        ("anthropic", {"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}}),
        ("openai-responses", {"context_management": [{"type": "compaction"}]}),
        ("openai-responses", {"truncation": "auto"}),
    ],
)
async def test_provider_side_context_management_is_refused(
    sidecars: SidecarFactory, provider: str, parameters: dict[str, Any]
) -> None:
    client = await sidecars.start(env={KEY_ENV: KEY})
    sid = await _session(client)
    binding = {"provider": provider, "connectionRef": f"env:{KEY_ENV}", "parameters": parameters}
    with pytest.raises(RpcError) as info:
        await client.request(
            "run/start",
            {
                "sessionId": sid,
                "userTurn": [{"type": "text", "text": "hi"}],
                "profile": {"modelBinding": binding},
            },
        )
    assert info.value.data_code == "params.invalid"
    assert "snapshot must stay the prompt that was sent" in json.dumps(info.value.data)
