"""A run through the Gemini provider over real stdio, against a loopback Gemini endpoint.

The profile binds ``provider: "gemini"`` with a ``connectionRef`` naming an environment
variable and a ``baseUrl`` on 127.0.0.1; the fake endpoint answers the first round with two
parallel function calls (without ids, as older Gemini versions send them) and the second with
text, in the documented ``streamGenerateContent?alt=sse`` shapes.  The host executes the
tool; the second request must carry both function responses, lowered from the stored results.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import SidecarFactory
from tests.e2e.test_runs import TOOLS, Host, _session
from tests.unit.test_providers import FakeServer, Reply, sse

pytestmark = pytest.mark.anyio

KEY_ENV = "CS_GEMINI_TEST_KEY"
KEY = "AIzaSy-gemini-loopback-7c1e0b"
MODEL = "gemini-2.5-flash"


def _model_turn(parts: list[dict[str, Any]], **candidate: Any) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0, **candidate}],
        "modelVersion": MODEL,
    }


CALLS = sse(
    _model_turn([{"text": "Reading both."}]),
    {
        **_model_turn(
            [
                {"functionCall": {"name": "read_file", "args": {"path": "a.py"}}},
                {"functionCall": {"name": "read_file", "args": {"path": "b.py"}}},
            ],
            finishReason="STOP",
        ),
        "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 30},
        "responseId": "round-one",
    },
)
ANSWER = sse(
    _model_turn([{"text": "Both files "}]),
    {
        **_model_turn([{"text": "read."}], finishReason="STOP"),
        "usageMetadata": {
            "promptTokenCount": 200,
            "candidatesTokenCount": 4,
            "cachedContentTokenCount": 96,
            "thoughtsTokenCount": 10,
        },
        "responseId": "round-two",
    },
)


async def test_a_run_with_host_tools_completes_through_the_gemini_provider(
    sidecars: SidecarFactory,
) -> None:
    server = FakeServer()
    await server.start()
    server.script(Reply(body=CALLS, chunk_size=40), Reply(body=ANSWER))
    try:
        client = await sidecars.start(env={KEY_ENV: KEY, "NO_PROXY": "127.0.0.1,localhost"})
        host = Host(client)
        sid = await _session(client)
        binding = {
            "provider": "gemini",
            "modelId": MODEL,
            "baseUrl": server.url,
            "connectionRef": f"env:{KEY_ENV}",
        }
        started = await client.request(
            "run/start",
            {
                "sessionId": sid,
                "userTurn": [{"type": "text", "text": "Read a.py and b.py"}],
                "tools": TOOLS,
                "profile": {"modelBinding": binding},
            },
        )
        events = await host.until_done(started["runId"])
        history = await client.request("session/read", {"sessionId": sid})
    finally:
        await server.stop()

    assert events[-1]["type"] == "run.completed", events[-1]
    assert events[-1]["payload"] == {"status": "completed"}
    requested = [e["payload"] for e in events if e["type"] == "model.requestCreated"]
    assert [(r["provider"], r["model"]) for r in requested] == [("gemini", MODEL)] * 2
    deltas = [e["payload"].get("text") for e in events if e["type"] == "model.delta"]
    assert deltas == ["Reading both.", "Both files ", "read."]
    completed = [e["payload"] for e in events if e["type"] == "model.completed"]
    assert [c["stopReason"] for c in completed] == ["tool_use", "end_turn"]
    assert completed[1]["usage"] == {
        "inputTokens": 200,
        "outputTokens": 14,
        "cacheReadTokens": 96,
        "cacheWriteTokens": 0,
    }
    paths = [call["arguments"]["path"] for call in host.tool_calls]
    assert paths == ["a.py", "b.py"]
    call_ids = [call["callId"] for call in host.tool_calls]
    assert len(set(call_ids)) == 2

    # both requests went to the model's URL with the key from connectionRef, in a header
    assert len(server.requests) == 2
    for request in server.requests:
        assert request.path == f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
        assert request.headers["x-goog-api-key"] == KEY
    first, second = (request.body for request in server.requests)
    assert first["contents"][-1]["parts"] == [{"text": "Read a.py and b.py"}]
    assert first["tools"][0]["functionDeclarations"][0]["name"] == "read_file"
    # the second round carries the calls and, in the next user turn, both function responses
    model_turn, results_turn = second["contents"][-2:]
    assert model_turn["role"] == "model"
    assert [p["functionCall"] for p in model_turn["parts"] if "functionCall" in p] == [
        {"name": "read_file", "args": {"path": "a.py"}},
        {"name": "read_file", "args": {"path": "b.py"}},
    ]
    assert results_turn["role"] == "user"
    assert [p["functionResponse"] for p in results_turn["parts"]] == [
        {"name": "read_file", "response": {"output": "contents of a.py"}},
        {"name": "read_file", "response": {"output": "contents of b.py"}},
    ]

    shape = [(e["role"], [p["type"] for p in e["content"]]) for e in history["entries"]]
    assert shape[0] == ("user", ["text"])
    assert shape[1] == ("assistant", ["text", "toolCall", "toolCall"])
    assert shape[-1] == ("assistant", ["text"])
    assert history["entries"][-1]["content"][0]["text"] == "Both files read."
