"""Live model limits through a real ``serve`` process: runs against a loopback Gemini endpoint
whose ``models.get`` reports a window the catalog does not have.

The first run asks ``GET /v1beta/models/{model}`` before its first assembly, so its prompt is
already budgeted on the reported window (``modelLimits.source: "live"`` in the snapshot, the
window in ``context.assembled``); a second run in the same process does not ask again; and a
``context/assemble`` without a run uses what the process learnt.  An endpoint that does not
answer costs a run at most the lookup's deadline, never the run.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sidecar.defaults import NO_LIVE_LIMITS_ENV
from tests.conftest import SidecarFactory
from tests.e2e.test_gemini_run import ANSWER, KEY, KEY_ENV
from tests.e2e.test_runs import Host, _session
from tests.unit.test_providers import FakeServer, Reply

pytestmark = pytest.mark.anyio

MODEL = "gemini-live-test"  # not a catalog row: the Gemini family's 1,048,576 otherwise
WINDOW = 2_000_000
OUTPUT = 12_345
MODEL_INFO = {
    "name": f"models/{MODEL}",
    "version": "001",
    "displayName": "Gemini Live Test",
    "inputTokenLimit": WINDOW,
    "outputTokenLimit": OUTPUT,
    "supportedGenerationMethods": ["generateContent", "countTokens"],
}


def _env() -> dict[str, str]:
    return {KEY_ENV: KEY, "NO_PROXY": "127.0.0.1,localhost", NO_LIVE_LIMITS_ENV: "0"}


async def _run(client: Any, host: Host, sid: str, base_url: str) -> list[dict[str, Any]]:
    binding = {
        "provider": "gemini",
        "modelId": MODEL,
        "baseUrl": base_url,
        "connectionRef": f"env:{KEY_ENV}",
    }
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "Say hello"}],
            "profile": {"modelBinding": binding},
        },
    )
    events = await host.until_done(started["runId"])
    assert events[-1]["payload"] == {"status": "completed"}, events[-1]
    return events


async def _limits_of(client: Any, events: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
    assembled = [e["payload"] for e in events if e["type"] == "context.assembled"]
    assert len(assembled) == 1
    snapshot = await client.request("snapshot/get", {"snapshotId": assembled[0]["snapshotId"]})
    return snapshot["modelLimits"], assembled[0]["dashboard"]["window"]


async def test_a_run_budgets_on_the_window_the_models_endpoint_reports(
    sidecars: SidecarFactory,
) -> None:
    server = FakeServer()
    await server.start()
    info = Reply(body=json.dumps(MODEL_INFO).encode(), content_type="application/json")
    server.script(info, Reply(body=ANSWER), Reply(body=ANSWER))
    base_url = server.url
    try:
        client = await sidecars.start(env=_env())
        host = Host(client)
        sid = await _session(client)
        first = await _run(client, host, sid, base_url)
        second = await _run(client, host, sid, base_url)
        assembled = await client.request(
            "context/assemble",
            {
                "sessionId": sid,
                "userTurn": [{"type": "text", "text": "and?"}],
                "profile": {"provider": "gemini", "model": MODEL},
            },
        )
    finally:
        await server.stop()

    # asked once, before the first request, with the key in a header; never again
    asked = [(r.method, r.path) for r in server.requests]
    model_url = f"/v1beta/models/{MODEL}"
    assert asked == [
        ("GET", model_url),
        ("POST", f"{model_url}:streamGenerateContent?alt=sse"),
        ("POST", f"{model_url}:streamGenerateContent?alt=sse"),
    ]
    assert server.requests[0].headers["x-goog-api-key"] == KEY

    for events in (first, second):
        limits, window = await _limits_of(client, events)
        assert (limits["source"], limits["window"], limits["outputLimit"]) == (
            "live",
            WINDOW,
            OUTPUT,
        )
        assert limits["maxOutput"] == OUTPUT  # the Gemini reserve (32,768), capped
        assert f"GET {base_url}{model_url}" in limits["note"]
        assert "warning" not in limits or limits["warning"] is None
        assert window == WINDOW
    # no run: what the process learnt
    assert assembled["modelLimits"]["source"] == "live"
    assert assembled["modelLimits"]["window"] == WINDOW


async def test_a_silent_models_endpoint_does_not_stop_the_run(sidecars: SidecarFactory) -> None:
    server = FakeServer()
    await server.start()
    silent = Reply(body=json.dumps(MODEL_INFO).encode(), content_type="application/json", delay=60)
    server.script(silent, Reply(body=ANSWER), Reply(body=ANSWER))
    try:
        client = await sidecars.start(env=_env())
        host = Host(client)
        sid = await _session(client)
        first = await _run(client, host, sid, server.url)  # waits out the 3 s deadline
        second = await _run(client, host, sid, server.url)  # nothing learnt: not asked again
    finally:
        await server.stop()

    assert [r.method for r in server.requests] == ["GET", "POST", "POST"]
    for events in (first, second):
        limits, window = await _limits_of(client, events)
        assert (limits["source"], limits["window"]) == ("family", 1_048_576)
        assert limits["warning"] and window == 1_048_576
