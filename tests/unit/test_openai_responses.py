"""The Responses API provider against a loopback HTTP server speaking the documented stream.

:func:`responses_stream` writes what ``POST /v1/responses`` with ``stream: true`` answers:
``response.created``, then per output item ``response.output_item.added`` / the item's deltas
(``response.reasoning_summary_text.delta``, ``response.output_text.delta``,
``response.function_call_arguments.delta`` / ``.done``) / ``response.output_item.done`` with
the whole item, then ``response.completed`` (or ``response.incomplete``) carrying ``usage``
with ``input_tokens_details.cached_tokens`` and ``output_tokens_details.reasoning_tokens``.
The e2e run tests (``tests/e2e/test_reasoning_kept.py``) use it too.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from protocol.inputs import ModelConnection
from protocol.snapshots import PresetInput, ProfileInput
from sidecar.runs.provider_choice import choose_provider, served_only_by_responses
from sidecar.runs.providers import (
    Completed,
    OpenAIProvider,
    OpenAIResponsesProvider,
    ReasoningDelta,
    ReasoningItem,
    TextDelta,
    ToolCall,
    Usage,
)
from tests.unit.test_providers import (
    KEY,
    FakeServer,
    Reply,
    collect,
    collect_error,
)

pytestmark = pytest.mark.anyio

BODY: dict[str, Any] = {
    "model": "gpt-5-codex",
    "max_output_tokens": 1024,
    "instructions": "You are a careful coding assistant.",
    "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]}
    ],
    "prompt_cache_key": "ses_1",
}


@dataclass(frozen=True)
class Reasoning:
    id: str
    summary: tuple[str, ...]
    encrypted: str | None


@dataclass(frozen=True)
class Call:
    id: str
    call_id: str
    name: str
    arguments: str


def _added(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def _events_of(items: list[Reasoning | Call | str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if isinstance(item, Reasoning):
            whole: dict[str, Any] = {
                "id": item.id,
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": t} for t in item.summary],
            }
            if item.encrypted is not None:
                whole["encrypted_content"] = item.encrypted
            opened = {**whole, "summary": []}
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": opened}
            )
            for s_index, text in enumerate(item.summary):
                events.append(
                    {
                        "type": "response.reasoning_summary_part.added",
                        "item_id": item.id,
                        "output_index": index,
                        "summary_index": s_index,
                        "part": {"type": "summary_text", "text": ""},
                    }
                )
                for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
                    events.append(
                        {
                            "type": "response.reasoning_summary_text.delta",
                            "item_id": item.id,
                            "output_index": index,
                            "summary_index": s_index,
                            "delta": piece,
                        }
                    )
                events.append(
                    {
                        "type": "response.reasoning_summary_text.done",
                        "item_id": item.id,
                        "output_index": index,
                        "summary_index": s_index,
                        "text": text,
                    }
                )
        elif isinstance(item, Call):
            whole = {
                "id": item.id,
                "type": "function_call",
                "status": "completed",
                "arguments": item.arguments,
                "call_id": item.call_id,
                "name": item.name,
            }
            opened = {**whole, "status": "in_progress", "arguments": ""}
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": opened}
            )
            for start in range(0, len(item.arguments), 6):
                events.append(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item.id,
                        "output_index": index,
                        "delta": item.arguments[start : start + 6],
                    }
                )
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item.id,
                    "output_index": index,
                    "arguments": item.arguments,
                }
            )
        else:
            message_id = f"msg_{index}"
            content = {"type": "output_text", "text": item, "annotations": []}
            whole = {
                "id": message_id,
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [content],
            }
            opened = {**whole, "status": "in_progress", "content": []}
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": opened}
            )
            for piece in (item[:5], item[5:]):
                events.append(
                    {
                        "type": "response.output_text.delta",
                        "item_id": message_id,
                        "output_index": index,
                        "content_index": 0,
                        "delta": piece,
                    }
                )
        events.append({"type": "response.output_item.done", "output_index": index, "item": whole})
    return events


def responses_stream(
    *items: Reasoning | Call | str,
    usage: dict[str, Any] | None = None,
    incomplete: str | None = None,
    model: str = "gpt-5-codex",
) -> bytes:
    """A whole documented stream: the items in order, then ``response.completed`` (or
    ``response.incomplete`` with ``incomplete``)."""
    response: dict[str, Any] = {"id": "resp_1", "object": "response", "model": model}
    events = [{"type": "response.created", "response": {**response, "status": "in_progress"}}]
    events += _events_of(list(items))
    usage = usage or {
        "input_tokens": 40,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 12,
        "output_tokens_details": {"reasoning_tokens": 4},
        "total_tokens": 52,
    }
    end = "response.incomplete" if incomplete else "response.completed"
    final = {**response, "status": end.split(".")[1], "usage": usage}
    if incomplete:
        final["incomplete_details"] = {"reason": incomplete}
    events.append({"type": end, "response": final})
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': n})}\n\n".encode()
        for n, e in enumerate(events)
    )


@pytest.fixture
async def server() -> AsyncIterator[FakeServer]:
    fake = FakeServer()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


def responses(server: FakeServer, **kwargs: Any) -> OpenAIResponsesProvider:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("backoff_ms", 1)
    return OpenAIResponsesProvider(base_url=server.url + "/v1", **kwargs)


FIRST = Reasoning("rs_0a1", ("Two files to read.", "Both at once."), "gAAAAABo-enc-1==")
READ_A = Call("fc_1", "call_a", "read_file", '{"path": "a.py"}')
READ_B = Call("fc_2", "call_b", "read_file", '{"path": "b.py"}')


async def test_reasoning_parallel_calls_and_usage(server: FakeServer) -> None:
    usage = {
        "input_tokens": 2006,
        "input_tokens_details": {"cached_tokens": 1920},
        "output_tokens": 58,
        "output_tokens_details": {"reasoning_tokens": 30},
        "total_tokens": 2064,
    }
    server.script(
        Reply(body=responses_stream(FIRST, "Reading.", READ_A, READ_B, usage=usage), chunk_size=13)
    )
    events = await collect(responses(server), BODY)

    assert events == [
        ReasoningDelta("Two files"),
        ReasoningDelta(" to read."),
        ReasoningDelta("\n\n"),
        ReasoningDelta("Both a"),
        ReasoningDelta("t once."),
        ReasoningItem(
            "openai-responses",
            "Two files to read.\n\nBoth at once.",
            item_id="rs_0a1",
            data="gAAAAABo-enc-1==",
            summary=("Two files to read.", "Both at once."),
        ),
        TextDelta("Readi"),
        TextDelta("ng."),
        ToolCall("call_a", "read_file", {"path": "a.py"}),
        ToolCall("call_b", "read_file", {"path": "b.py"}),
        Usage(2006, 58, cache_read_tokens=1920, reasoning_tokens=30),
        Completed("tool_use"),
    ]
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/responses")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    # nothing kept on OpenAI's side; the reasoning comes back encrypted, to be sent back
    assert request.body == {
        **BODY,
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }


async def test_an_include_of_the_body_is_kept_and_completed(server: FakeServer) -> None:
    server.script(Reply(body=responses_stream("ok")))
    events = await collect(responses(server, api_key=None), {**BODY, "include": ["x.y"]})
    assert events[-1] == Completed("end_turn")
    [request] = server.requests
    assert request.body["include"] == ["x.y", "reasoning.encrypted_content"]
    assert "authorization" not in request.headers


async def test_incomplete_is_max_tokens(server: FakeServer) -> None:
    server.script(Reply(body=responses_stream("Trunc", incomplete="max_output_tokens")))
    events = await collect(responses(server), BODY)
    assert events[-1] == Completed("max_tokens")


def _failed(code: str, message: str) -> bytes:
    event = {
        "type": "response.failed",
        "response": {
            "id": "resp_1",
            "status": "failed",
            "error": {"code": code, "message": message},
        },
    }
    return f"event: response.failed\ndata: {json.dumps(event)}\n\n".encode()


async def test_response_failed_before_any_output_is_retried(server: FakeServer) -> None:
    server.script(
        Reply(body=_failed("server_error", "The server had an error")),
        Reply(body=responses_stream("Fine now.")),
    )
    events = await collect(responses(server), BODY)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Fine now."
    assert len(server.requests) == 2


async def test_response_failed_after_output_is_raised_not_retried(server: FakeServer) -> None:
    head = responses_stream("Half an answer")
    head = head[: head.index(b"event: response.completed")]
    server.script(Reply(body=head + _failed("rate_limit_exceeded", "slow down")))
    events, error = await collect_error(responses(server), BODY)
    assert [e for e in events if isinstance(e, TextDelta)]
    assert (error.code, error.retryable) == ("model.rate_limited", True)
    assert "slow down" in error.message
    assert len(server.requests) == 1


async def test_an_error_event_is_raised(server: FakeServer) -> None:
    event = {"type": "error", "code": "invalid_prompt", "message": "bad input", "param": None}
    server.script(Reply(body=f"event: error\ndata: {json.dumps(event)}\n\n".encode()))
    _, error = await collect_error(responses(server), BODY)
    assert (error.code, error.retryable) == ("model.request_failed", False)
    assert "invalid_prompt" in error.message and "bad input" in error.message


async def test_a_429_before_the_first_token_is_retried(server: FakeServer) -> None:
    server.script(
        Reply(
            429,
            b'{"error": {"message": "Rate limit reached", "type": "requests"}}',
            headers={"retry-after": "0"},
            content_type="application/json",
        ),
        Reply(body=responses_stream("After the wait.")),
    )
    events = await collect(responses(server), BODY)
    assert events[-1] == Completed("end_turn")
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body


async def test_a_stream_cut_before_its_end_is_a_retryable_error(server: FakeServer) -> None:
    whole = responses_stream("Cut short")
    cut = whole[: whole.index(b"event: response.completed")]
    server.script(Reply(body=cut))
    events, error = await collect_error(responses(server, max_retries=0), BODY)
    assert [e for e in events if isinstance(e, TextDelta)]
    assert (error.code, error.retryable) == ("model.request_failed", True)
    assert "response.completed" in error.message


def test_prompt_cache_key_goes_only_to_openais_host() -> None:
    assert OpenAIResponsesProvider("https://api.openai.com/v1").accepts_cache_key
    assert not OpenAIResponsesProvider("http://127.0.0.1:8000/v1").accepts_cache_key


@pytest.mark.parametrize(
    ("model", "base_url", "responses_only"),
    [
        ("gpt-5-codex", None, True),
        ("gpt-5.1-codex-max", "https://api.openai.com/v1", True),
        ("codex-mini-latest", None, True),
        ("gpt-5-pro", None, True),
        ("gpt-5-pro-2025-10-06", None, True),
        ("o3-pro", None, True),
        ("o1-pro", None, True),
        ("o4-mini-deep-research", None, True),
        ("computer-use-preview", None, True),
        ("gpt-5", None, False),
        ("gpt-4o", None, False),
        ("o3", None, False),
        ("gpt-5-codex", "http://127.0.0.1:11434/v1", False),  # another server's own routes
    ],
)
def test_models_served_only_by_the_responses_api(
    model: str, base_url: str | None, responses_only: bool
) -> None:
    assert served_only_by_responses(model, base_url) is responses_only


def test_the_profile_chooses_the_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    from protocol.inputs import FrozenInput

    monkeypatch.setenv("CS_TEST_KEY", "sk-x")
    frozen = FrozenInput.model_construct(model_connection=None)  # type: ignore[call-arg]

    def chosen(provider: str, model: str) -> type:
        binding = ModelConnection.model_validate(
            {"provider": provider, "modelId": model, "connectionRef": "env:CS_TEST_KEY"}
        )
        return type(choose_provider(frozen, ProfileInput(model_binding=binding), None))

    assert chosen("openai-responses", "gpt-4o") is OpenAIResponsesProvider
    assert chosen("openai", "gpt-5-codex") is OpenAIResponsesProvider
    assert chosen("openai", "gpt-5") is OpenAIProvider


@pytest.mark.parametrize(
    "parameters",
    [
        {"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}},
        {"context_management": [{"type": "compaction"}]},
        {"truncation": "auto"},
        {"previous_response_id": "resp_1"},
        {"conversation": "conv_1"},
    ],
)
def test_provider_side_context_management_is_refused_with_the_reason(
    parameters: dict[str, Any],
) -> None:
    for model in (ModelConnection, PresetInput):
        with pytest.raises(ValueError, match="snapshot must stay the prompt that was sent"):
            model.model_validate({"parameters": parameters})
    ModelConnection.model_validate({"parameters": {"truncation": "disabled"}})
