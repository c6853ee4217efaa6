"""Live model limits: what a provider's models endpoint reports, asked once per process by the
runs layer (``sidecar.runs.live_lookup``), kept in the registry the pipeline reads
(``sidecar.context.live_limits``), and where ``resolve_limits`` puts it: profile, then live,
then the catalog's row, its family, the fallback.

The endpoints are loopback servers speaking each API's documented shape; each counts the
requests it gets, so "once" is checked, and failures (an error status, a body without the
fields, a server that does not answer in time) are cached as nothing."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol.context import PromptProfile
from sidecar.context.limits import available_input, resolve_limits
from sidecar.context.live_limits import LiveLimits, known, remember
from sidecar.defaults import NO_LIVE_LIMITS_ENV
from sidecar.runs.live_lookup import learn_limits
from sidecar.runs.providers import transport
from sidecar.runs.providers.model_info import openai_compatible_limits
from sidecar.runs.providers.openai import OpenAIProvider
from sidecar.runs.providers.openai_responses import OpenAIResponsesProvider
from sidecar.runs.scripted import ScriptedProvider
from tests.unit.test_model_catalog import _limits
from tests.unit.test_providers import KEY, FakeServer, Reply, anthropic, gemini, openai

pytestmark = pytest.mark.anyio

ENDPOINT = "GET http://127.0.0.1:1/v1beta/models/x"


@pytest.fixture
async def server(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeServer]:
    """A loopback endpoint, reached directly whatever the environment's proxies say."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    fake = FakeServer()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lookups on (the suite turns them off by default)."""
    monkeypatch.delenv(NO_LIVE_LIMITS_ENV)


def _json(data: Any, status: int = 200) -> Reply:
    return Reply(status=status, body=json.dumps(data).encode(), content_type="application/json")


# --- the registry and resolve_limits ----------------------------------------------------------


def test_the_registry_keeps_the_smaller_window_and_ignores_a_report_without_one() -> None:
    assert known("m") is None
    remember("m", LiveLimits(None, 4096, ENDPOINT))
    assert known("m") is None
    remember("m", LiveLimits(200_000, 8192, ENDPOINT))
    remember("m", LiveLimits(300_000, None, "GET elsewhere"))
    assert known("m") == LiveLimits(200_000, 8192, ENDPOINT)
    remember("m", LiveLimits(65_536, None, "GET small"))
    assert known("m") == LiveLimits(65_536, None, "GET small")


def test_live_figures_come_after_the_profile_and_before_the_catalog() -> None:
    model = "gemini-2.5-flash"  # a catalog row: 1,048,576 window, 65,536 output, 32,768 reserve
    table = resolve_limits(PromptProfile(provider="gemini", model=model))
    assert (table.source, table.window, table.max_output) == ("table", 1_048_576, 32_768)

    remember(model, LiveLimits(500_000, 8192, ENDPOINT))
    live = resolve_limits(PromptProfile(provider="gemini", model=model))
    assert (live.source, live.window, live.output_limit) == ("live", 500_000, 8192)
    assert live.max_output == 8192  # the catalog's reserve, capped by the live output limit
    assert live.family == table.family and live.warning is None
    assert live.note is not None and ENDPOINT in live.note
    assert available_input(live) == 500_000 - 8192 - 1024

    override = resolve_limits(PromptProfile(provider="gemini", model=model, window=100_000))
    assert (override.source, override.window) == ("profile", 100_000)
    reserve_only = resolve_limits(PromptProfile(provider="gemini", model=model, max_output=1000))
    assert (reserve_only.source, reserve_only.window, reserve_only.max_output) == (
        "profile",
        500_000,
        1000,
    )


def test_a_live_window_spares_an_unknown_model_the_fallback_and_its_warning() -> None:
    guessed = resolve_limits(PromptProfile(provider="other", model="my-local-model"))
    assert guessed.source == "fallback" and guessed.warning is not None
    remember("my-local-model", LiveLimits(65_536, None, "GET http://127.0.0.1:1/v1/models"))
    learnt = resolve_limits(PromptProfile(provider="other", model="my-local-model"))
    assert (learnt.source, learnt.window, learnt.max_output) == ("live", 65_536, 4096)
    assert learnt.warning is None and learnt.output_limit is None

    # an unknown Claude takes its family's reserve, capped by what the endpoint says
    remember("claude-unknown-9", LiveLimits(400_000, 20_000, ENDPOINT))
    claude = resolve_limits(PromptProfile(model="claude-unknown-9"))
    assert (claude.source, claude.window, claude.max_output) == ("live", 400_000, 20_000)
    assert claude.family is not None and claude.warning is None


def test_context_assemble_uses_what_the_process_learnt(tmp_path: Path) -> None:
    before, _ = _limits(tmp_path / "a", {"model": "gemini-9-test", "provider": "gemini"})
    assert before.source == "family"  # the first assembly before any run: the catalog
    remember("gemini-9-test", LiveLimits(2_000_000, 100_000, ENDPOINT))
    after, result = _limits(tmp_path / "b", {"model": "gemini-9-test", "provider": "gemini"})
    assert (after.source, after.window, after.output_limit) == ("live", 2_000_000, 100_000)
    assert result["dashboard"]["window"] == 2_000_000


# --- what each endpoint is asked and what is read ---------------------------------------------


async def test_anthropic_models_api_once_per_process(server: FakeServer, live: None) -> None:
    server.script(
        _json(
            {
                "type": "model",
                "id": "claude-test-7",
                "display_name": "Claude Test 7",
                "created_at": "2026-11-01T00:00:00Z",
                "max_input_tokens": 300_000,
                "max_tokens": 16_000,
            }
        )
    )
    profile = PromptProfile(provider="anthropic", model="claude-test-7")
    await learn_limits(anthropic(server), profile)
    await learn_limits(anthropic(server), profile)  # a new run, a new provider: not asked again
    assert len(server.requests) == 1
    asked = server.requests[0]
    assert (asked.method, asked.path) == ("GET", "/v1/models/claude-test-7")
    assert asked.headers["x-api-key"] == KEY and asked.headers["anthropic-version"]
    assert known("claude-test-7") == LiveLimits(
        300_000, 16_000, f"GET {server.url}/v1/models/claude-test-7"
    )
    assert resolve_limits(profile).source == "live"


async def test_gemini_models_get_with_the_key_in_a_header(server: FakeServer, live: None) -> None:
    server.script(
        _json(
            {
                "name": "models/gemini-2.5-flash",
                "version": "001",
                "inputTokenLimit": 1_048_576,
                "outputTokenLimit": 65_536,
                "supportedGenerationMethods": ["generateContent", "countTokens"],
            }
        )
    )
    profile = PromptProfile(provider="gemini", model="gemini-2.5-flash")
    await learn_limits(gemini(server), profile)
    await learn_limits(gemini(server), profile)
    assert len(server.requests) == 1
    asked = server.requests[0]
    assert (asked.method, asked.path) == ("GET", "/v1beta/models/gemini-2.5-flash")
    assert asked.headers["x-goog-api-key"] == KEY and KEY not in asked.path
    assert known("gemini-2.5-flash") == LiveLimits(
        1_048_576, 65_536, f"GET {server.url}/v1beta/models/gemini-2.5-flash"
    )


async def test_an_openai_compatible_server_lists_its_model(server: FakeServer, live: None) -> None:
    model = "Qwen/Qwen3-Coder-30B-A3B-Instruct"
    listing = {
        "object": "list",
        "data": [
            {"id": "another-model", "object": "model", "max_model_len": 8192},
            {"id": model, "object": "model", "owned_by": "vllm", "max_model_len": 65_536},
        ],
    }
    server.script(_json(listing))
    profile = PromptProfile(provider="openai", model=model)
    await learn_limits(openai(server), profile)
    await learn_limits(openai(server), profile)
    assert len(server.requests) == 1
    asked = server.requests[0]
    assert (asked.method, asked.path) == ("GET", "/v1/models")
    assert asked.headers["authorization"] == f"Bearer {KEY}"
    assert known(model) == LiveLimits(65_536, None, f"GET {server.url}/v1/models")
    limits = resolve_limits(profile)  # the catalog's Qwen3-Coder row says 262,144
    assert (limits.source, limits.window) == ("live", 65_536)


@pytest.mark.parametrize(
    ("entry", "figures"),
    [
        ({"max_model_len": 32_768}, (32_768, None)),  # vLLM
        (  # OpenRouter
            {"context_length": 200_000, "top_provider": {"max_completion_tokens": 64_000}},
            (200_000, 64_000),
        ),
        ({"context_window": 131_072, "max_completion_tokens": 8192}, (131_072, 8192)),  # Groq
        ({"max_context_length": 4096}, (4096, None)),  # LM Studio
        ({"context_length": "lots", "max_model_len": 0}, (None, None)),  # not a positive int
        ({}, (None, None)),
    ],
)
def test_the_fields_read_from_an_openai_compatible_listing(
    entry: dict[str, Any], figures: tuple[int | None, int | None]
) -> None:
    assert openai_compatible_limits({"data": [{"id": "m", **entry}]}, "m") == figures
    assert openai_compatible_limits({"data": [{"id": "other", **entry}]}, "m") == (None, None)


async def test_openai_itself_and_the_scripted_provider_are_never_asked(live: None) -> None:
    profile = PromptProfile(provider="openai", model="gpt-9-test")
    for provider in (
        OpenAIProvider(api_key="k"),  # https://api.openai.com/v1: its models report no limits
        OpenAIResponsesProvider(api_key="k"),
    ):
        assert provider._models_url("gpt-9-test") is None
        with anyio.fail_after(1):
            await learn_limits(provider, profile)  # returns before any I/O
    await learn_limits(ScriptedProvider(None), profile)
    assert known("gpt-9-test") is None


async def test_a_profile_window_or_the_switch_means_no_request(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(NO_LIVE_LIMITS_ENV, "1")
    await learn_limits(gemini(server), PromptProfile(provider="gemini", model="gemini-2.5-flash"))
    monkeypatch.setenv(NO_LIVE_LIMITS_ENV, "0")  # "0" means on
    windowed = PromptProfile(provider="gemini", model="gemini-2.5-flash", window=100_000)
    await learn_limits(gemini(server), windowed)
    assert server.requests == []


# --- failures are cached as nothing -----------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        _json({"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}}, 404),
        _json({"name": "models/gemini-2.5-flash", "version": "001"}),  # no limits in it
        Reply(body=b"<html>a proxy's page</html>", content_type="text/html"),
    ],
    ids=["404", "no-fields", "not-json"],
)
async def test_a_failed_lookup_is_cached_as_nothing(
    server: FakeServer, live: None, reply: Reply
) -> None:
    server.script(reply)
    profile = PromptProfile(provider="gemini", model="gemini-2.5-flash")
    await learn_limits(gemini(server), profile)
    await learn_limits(gemini(server), profile)
    assert len(server.requests) == 1
    assert known("gemini-2.5-flash") is None
    assert resolve_limits(profile).source == "table"


async def test_a_silent_endpoint_times_out_and_is_not_asked_again(
    server: FakeServer, live: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transport, "MODELS_TIMEOUT_S", 0.3)
    server.script(Reply(body=b'{"inputTokenLimit": 5}', content_type="application/json", delay=30))
    profile = PromptProfile(provider="gemini", model="gemini-2.5-flash")
    started = time.monotonic()
    with anyio.fail_after(5):
        await learn_limits(gemini(server), profile)
    assert time.monotonic() - started < 2
    await learn_limits(gemini(server), profile)
    assert len(server.requests) == 1 and known("gemini-2.5-flash") is None


async def test_concurrent_runs_share_one_request(server: FakeServer, live: None) -> None:
    body = {"inputTokenLimit": 777_777, "outputTokenLimit": 7777}
    server.script(Reply(body=json.dumps(body).encode(), content_type="application/json", delay=0.2))
    profile = PromptProfile(provider="gemini", model="gemini-2.5-flash")
    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(learn_limits, gemini(server), profile)
    assert len(server.requests) == 1
    learnt = known("gemini-2.5-flash")
    assert learnt is not None and learnt.window == 777_777
