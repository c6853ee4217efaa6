"""The SSE providers against a real HTTP server on 127.0.0.1, and secret references.

``FakeServer`` speaks just enough HTTP/1.1: it reads the request (line, headers,
``Content-Length`` body), records it, and answers with the next scripted :class:`Reply`
(status, headers, body split into pieces with optional delays, then ``Connection: close``; or
it keeps the connection open until the client closes it).  The recorded streams in
``tests/data/providers/`` follow the providers' documented formats.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from sidecar.runs.providers import (
    AnthropicProvider,
    Completed,
    GeminiProvider,
    OpenAIProvider,
    Provider,
    ProviderError,
    ProviderEvent,
    ReasoningDelta,
    ReasoningItem,
    SecretError,
    TextDelta,
    ToolCall,
    Usage,
    resolve_secret,
)
from sidecar.runs.providers.gemini import SKIP_SIGNATURE
from sidecar.runs.providers.sse import ServerSentEvent, SSEDecoder, SSEError

pytestmark = pytest.mark.anyio

DATA = Path(__file__).resolve().parent.parent / "data" / "providers"
KEY = "sk-test-7f3a9c0d1e2b4a5968-SECRET"

OPENAI_BODY: dict[str, Any] = {
    "model": "gpt-4o",
    "max_completion_tokens": 1024,
    "messages": [
        {"role": "system", "content": "You are a careful coding assistant."},
        {"role": "user", "content": "What does src/store.py define?"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ],
}
ANTHROPIC_BODY: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "system": [
        {
            "type": "text",
            "text": "You are a careful coding assistant.",
            "cache_control": {"type": "ephemeral"},
        }
    ],
    "messages": [{"role": "user", "content": [{"type": "text", "text": "Explain the store."}]}],
}

GEMINI_BODY: dict[str, Any] = {
    "systemInstruction": {"parts": [{"text": "You are a careful coding assistant."}]},
    "contents": [
        {"role": "user", "parts": [{"text": "What does src/store.py define?"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "read_file", "args": {"path": "src/store.py"}}}],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "read_file",
                        "response": {"output": "def load(): ...\ndef save(): ..."},
                    }
                }
            ],
        },
    ],
    "tools": [
        {
            "functionDeclarations": [
                {
                    "name": "read_file",
                    "parameters": {
                        "type": "OBJECT",
                        "properties": {"path": {"type": "STRING"}},
                    },
                }
            ]
        }
    ],
    "generationConfig": {"maxOutputTokens": 1024},
}


# -- the server ----------------------------------------------------------------------------


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/event-stream"
    chunk_size: int | None = None  # split the body into pieces of this many bytes
    delay: float = 0.0  # seconds before each piece
    hang: bool = False  # after the body, keep the connection open until the client closes it
    chunked: bool = False  # Transfer-Encoding: chunked ...
    truncate: bool = False  # ... without its final zero-length chunk


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""
    """The body as it came over the socket (what a prompt cache is keyed on)."""


class FakeServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Received] = []
        self.client_closed = asyncio.Event()  # set when the client closes a hanging connection
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with suppress(asyncio.CancelledError):
                await task
        await self._server.wait_closed()

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            self.client_closed.set()
        finally:
            self._tasks.discard(task)
            writer.close()
            with suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request_line = (await reader.readline()).decode("latin-1").strip()
        if not request_line:
            return
        method, path, _ = request_line.split(" ", 2)
        headers: dict[str, str] = {}
        while True:
            line = (await reader.readline()).decode("latin-1").strip()
            if not line:
                break
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        self.requests.append(Received(method, path, headers, json.loads(raw) if raw else None, raw))

        reply = self.replies.popleft() if self.replies else Reply(500, b'{"error": "unscripted"}')
        head = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Whatever')}"]
        head.append(f"content-type: {reply.content_type}")
        head += [f"{name}: {value}" for name, value in reply.headers.items()]
        if reply.chunked:
            head.append("transfer-encoding: chunked")
        elif reply.status != 200 or reply.content_type != "text/event-stream":
            head.append(f"content-length: {len(reply.body)}")
        head.append("connection: close")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()

        size = reply.chunk_size or max(1, len(reply.body))
        for start in range(0, len(reply.body), size):
            if reply.delay:
                await asyncio.sleep(reply.delay)
            piece = reply.body[start : start + size]
            if reply.chunked:
                piece = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
            writer.write(piece)
            await writer.drain()
        if reply.chunked and not reply.truncate and not reply.hang:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        if reply.hang:
            while await reader.read(4096):
                pass
            self.client_closed.set()


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
    529: "Overloaded",
}


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests go to 127.0.0.1 directly, whatever the environment says."""
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def server() -> AsyncIterator[FakeServer]:
    fake = FakeServer()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


# -- helpers -------------------------------------------------------------------------------


def fixture(name: str) -> bytes:
    return (DATA / name).read_bytes()


def sse_events(raw: bytes) -> list[bytes]:
    """A recorded stream split into its events (each with its blank line)."""
    return [block + b"\n\n" for block in raw.split(b"\n\n") if block.strip()]


def sse(*events: str | dict[str, Any], named: bool = False) -> bytes:
    out = []
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        name = f"event: {event['type']}\n" if named and isinstance(event, dict) else ""
        out.append(f"{name}data: {data}\n\n")
    return "".join(out).encode()


def openai(server: FakeServer, **kwargs: Any) -> OpenAIProvider:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("backoff_ms", 1)
    return OpenAIProvider(base_url=server.url + "/v1", **kwargs)


def anthropic(server: FakeServer, **kwargs: Any) -> AnthropicProvider:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("backoff_ms", 1)
    return AnthropicProvider(base_url=server.url, **kwargs)


def gemini(server: FakeServer, **kwargs: Any) -> GeminiProvider:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("backoff_ms", 1)
    return GeminiProvider("gemini-2.5-flash", base_url=server.url, **kwargs)


async def collect(provider: Provider, body: dict[str, Any]) -> list[ProviderEvent]:
    with anyio.fail_after(5):
        return [event async for event in provider.stream(body)]


async def collect_error(
    provider: Provider, body: dict[str, Any]
) -> tuple[list[ProviderEvent], ProviderError]:
    events: list[ProviderEvent] = []
    with anyio.fail_after(5), pytest.raises(ProviderError) as info:
        async for event in provider.stream(body):
            events.append(event)
    return events, info.value


def text_of(events: list[ProviderEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextDelta))


OPENAI_TEXT = "The file defines two functions: `load` and `save`."
ANTHROPIC_TEXT = "The store keeps one JSONL file per session — append only."
GEMINI_TEXT = ANTHROPIC_TEXT
GEMINI_PATH = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"


# -- SSE parsing ---------------------------------------------------------------------------

SSE_SAMPLE = (
    "\ufeff: keep-alive comment\r\n"
    "event: custom\r\n"
    "data: line one\r\n"
    "data:line two\r\n"
    "id: 7\r\n"
    "retry: 1500\r\n"
    "\r\n"
    'data: {"text": "café — ok"}\n'
    "\n"
    "unknown: ignored\n"
    "data\n"
    "\n"
    ": only a comment\n"
    "\n"
    "event: no-data\n"
    "\n"
    "data: cr only\r"
    "\r"
    "data: cut without a blank line"
).encode()

SSE_EXPECTED = [
    ServerSentEvent("custom", "line one\nline two", id="7", retry=1500),
    ServerSentEvent("message", '{"text": "café — ok"}', id="7", retry=1500),
    ServerSentEvent("message", "", id="7", retry=1500),
    ServerSentEvent("message", "cr only", id="7", retry=1500),
]


@pytest.mark.parametrize("size", [1, 2, 3, 7, len(SSE_SAMPLE)])
async def test_sse_decoder_handles_fields_comments_line_ends_and_any_split(size: int) -> None:
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for start in range(0, len(SSE_SAMPLE), size):
        events += decoder.feed(SSE_SAMPLE[start : start + size])
    decoder.close()  # the unterminated last event is dropped, not delivered
    assert events == SSE_EXPECTED


async def test_sse_decoder_refuses_an_endless_line() -> None:
    decoder = SSEDecoder(max_line=64)
    assert decoder.feed(b"data: short\n\n") == [ServerSentEvent("message", "short")]
    with pytest.raises(SSEError):
        decoder.feed(b"data: " + b"x" * 100)


# -- OpenAI --------------------------------------------------------------------------------


async def test_openai_text_with_cached_usage(server: FakeServer) -> None:
    server.script(Reply(body=fixture("openai_text.sse"), chunk_size=97))
    events = await collect(openai(server), OPENAI_BODY)

    assert text_of(events) == OPENAI_TEXT
    assert events[-2:] == [Usage(2006, 11, cache_read_tokens=1920), Completed("end_turn")]
    assert all(isinstance(event, TextDelta) for event in events[:-2])
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.body == {
        **OPENAI_BODY,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_openai_parallel_tool_calls_split_across_chunks(server: FakeServer) -> None:
    server.script(Reply(body=fixture("openai_tool_calls.sse"), chunk_size=5))
    events = await collect(openai(server, api_key=None), OPENAI_BODY)

    assert events == [
        ToolCall(
            "call_Kq3LwZ8nV2pR7sT1xY5bM9dF", "read_file", {"path": "src/store.py", "limit": 200}
        ),
        ToolCall("call_Hj6GfD4sA2qW8eR0tY3uI7oP", "grep", {"pattern": r"def \w+\(", "path": "src"}),
        Usage(1310, 58),
        Completed("tool_use"),
    ]
    # A local server (Ollama, llama.cpp, vLLM) gets no auth header when there is no key.
    assert "authorization" not in server.requests[0].headers


async def test_openai_compatible_server_quirks(server: FakeServer) -> None:
    """Whole calls without an index, arguments as an object, ``stop`` after tool calls,
    reasoning in ``reasoning_content``, no usage at all."""
    server.script(
        Reply(
            body=sse(
                {"choices": [{"index": 0, "delta": {"reasoning_content": "Need the file."}}]},
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {
                                "tool_calls": [
                                    {
                                        "id": "a",
                                        "function": {"name": "ls", "arguments": {"d": "."}},
                                    },
                                    {"id": "b", "function": {"name": "pwd", "arguments": ""}},
                                ]
                            },
                            "finish_reason": "stop",
                        }
                    ]
                },
                "[DONE]",
            )
        )
    )
    events = await collect(openai(server), OPENAI_BODY)
    assert events == [
        ReasoningDelta("Need the file."),
        ToolCall("a", "ls", {"d": "."}),
        ToolCall("b", "pwd", {}),
        Completed("tool_use"),
    ]


async def test_openai_finish_length_is_max_tokens(server: FakeServer) -> None:
    server.script(
        Reply(
            body=sse(
                {"choices": [{"index": 0, "delta": {"content": "Trunc"}, "finish_reason": None}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
                {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 1}},
                "[DONE]",
            )
        )
    )
    events = await collect(openai(server), OPENAI_BODY)
    assert events == [TextDelta("Trunc"), Usage(9, 1), Completed("max_tokens")]


async def test_openai_malformed_tool_arguments_pass_raw(
    server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "read_file", "arguments": '{"path": '}}
    server.script(
        Reply(
            body=sse(
                {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
                "[DONE]",
            )
        )
    )
    with caplog.at_level(logging.WARNING):
        events = await collect(openai(server), OPENAI_BODY)
    assert events == [ToolCall("c1", "read_file", {"_raw": '{"path": '}), Completed("tool_use")]
    assert "malformed JSON arguments" in caplog.text


async def test_429_with_retry_after_zero_is_retried_at_once(server: FakeServer) -> None:
    server.script(
        Reply(
            429,
            b'{"error": {"message": "Rate limit reached", "type": "requests"}}',
            headers={"retry-after": "0"},
            content_type="application/json",
        ),
        Reply(body=fixture("openai_text.sse")),
    )
    started = time.monotonic()
    # A 2 s backoff would show: the server said 0.
    events = await collect(openai(server, backoff_ms=2000), OPENAI_BODY)

    assert time.monotonic() - started < 1.5
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body
    assert text_of(events) == OPENAI_TEXT
    assert events[-1] == Completed("end_turn")


async def test_retry_after_ms_is_honoured(server: FakeServer) -> None:
    server.script(
        Reply(429, b"{}", headers={"retry-after-ms": "200"}, content_type="application/json"),
        Reply(body=fixture("openai_text.sse")),
    )
    started = time.monotonic()
    events = await collect(openai(server, backoff_ms=0), OPENAI_BODY)
    assert time.monotonic() - started >= 0.2
    assert text_of(events) == OPENAI_TEXT


async def test_500_then_success_backs_off(server: FakeServer) -> None:
    server.script(
        Reply(500, b"upstream exploded", content_type="text/plain"),
        Reply(body=fixture("openai_text.sse")),
    )
    started = time.monotonic()
    events = await collect(openai(server, backoff_ms=150), OPENAI_BODY)
    assert time.monotonic() - started >= 0.15
    assert len(server.requests) == 2
    assert text_of(events) == OPENAI_TEXT


async def test_retries_run_out_with_a_retryable_error(server: FakeServer) -> None:
    busy = Reply(503, b'{"error": {"message": "The engine is overloaded"}}')
    server.script(busy, busy, busy, busy)
    events, error = await collect_error(openai(server, max_retries=2, backoff_ms=0), OPENAI_BODY)

    assert events == []
    assert len(server.requests) == 3
    assert (error.code, error.status, error.retryable) == ("model.overloaded", 503, True)
    assert "The engine is overloaded" in error.message
    assert "after 3 attempts" in error.message


async def test_a_long_retry_after_is_not_waited_for(server: FakeServer) -> None:
    server.script(
        Reply(429, b'{"error": {"message": "slow down"}}', headers={"retry-after": "3600"}),
        Reply(body=fixture("openai_text.sse")),
    )
    _, error = await collect_error(openai(server), OPENAI_BODY)
    assert len(server.requests) == 1
    assert (error.code, error.retryable, error.retry_after_ms) == (
        "model.rate_limited",
        True,
        3_600_000,
    )


async def test_401_is_an_auth_error_without_retry_and_without_the_key(
    server: FakeServer,
) -> None:
    echoed = f"Incorrect API key provided: {KEY}. Find your key at the dashboard."
    server.script(
        Reply(
            401,
            json.dumps({"error": {"message": echoed, "type": "invalid_request_error"}}).encode(),
            content_type="application/json",
        ),
        Reply(body=fixture("openai_text.sse")),
    )
    _, error = await collect_error(openai(server), OPENAI_BODY)

    assert len(server.requests) == 1
    assert (error.code, error.status, error.retryable) == ("model.auth_failed", 401, False)
    assert "Incorrect API key provided" in error.message
    assert KEY not in str(error) and KEY not in repr(error)


async def test_other_4xx_carries_the_provider_message(server: FakeServer) -> None:
    message = "Invalid parameter: messages with role 'tool' must be a response to a tool_call."
    server.script(
        Reply(
            400,
            json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode(),
            content_type="application/json",
        )
    )
    _, error = await collect_error(openai(server), OPENAI_BODY)
    assert len(server.requests) == 1
    assert (error.code, error.status, error.retryable) == ("model.request_failed", 400, False)
    assert message in error.message


async def test_malformed_chunk_mid_stream_fails_clearly_without_hanging(
    server: FakeServer,
) -> None:
    # The server keeps the connection open after the bad chunk: the provider must not wait.
    server.script(Reply(body=fixture("openai_malformed.sse"), hang=True))
    events, error = await collect_error(openai(server), OPENAI_BODY)

    assert text_of(events) == "Partial"
    assert (error.code, error.retryable) == ("model.bad_response", False)
    assert "not JSON" in error.message
    assert len(server.requests) == 1
    with anyio.fail_after(1):
        await server.client_closed.wait()


async def test_openai_stream_cut_without_done_is_an_error(server: FakeServer) -> None:
    events_in = sse_events(fixture("openai_text.sse"))
    server.script(Reply(body=b"".join(events_in[:4])), Reply(body=fixture("openai_text.sse")))
    events, error = await collect_error(openai(server), OPENAI_BODY)

    assert text_of(events) == "The file defines"
    assert (error.code, error.retryable) == ("model.request_failed", True)
    assert "[DONE]" in error.message
    assert len(server.requests) == 1  # text was yielded: never replayed


async def test_a_connection_dropped_mid_chunk_is_an_error(server: FakeServer) -> None:
    events_in = sse_events(fixture("openai_text.sse"))
    server.script(Reply(body=b"".join(events_in[:3]), chunked=True, truncate=True))
    events, error = await collect_error(openai(server), OPENAI_BODY)
    assert text_of(events) == "The file"
    assert (error.code, error.retryable) == ("model.request_failed", True)
    assert len(server.requests) == 1


async def test_a_stream_cut_before_any_event_is_retried(server: FakeServer) -> None:
    server.script(Reply(body=b": still there\n\n"), Reply(body=fixture("openai_text.sse")))
    events = await collect(openai(server), OPENAI_BODY)
    assert len(server.requests) == 2
    assert text_of(events) == OPENAI_TEXT


async def test_a_silent_server_times_out_and_is_retried(server: FakeServer) -> None:
    server.script(Reply(hang=True), Reply(body=fixture("openai_text.sse")))
    events = await collect(openai(server, timeout_s=0.2), OPENAI_BODY)
    assert len(server.requests) == 2
    assert text_of(events) == OPENAI_TEXT


async def test_connection_refused_is_retryable() -> None:
    listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()
    provider = OpenAIProvider(f"http://127.0.0.1:{port}/v1", None, max_retries=1, backoff_ms=0)
    _, error = await collect_error(provider, OPENAI_BODY)
    assert (error.code, error.retryable) == ("model.request_failed", True)
    assert "connection" in error.message


async def test_an_error_chunk_in_the_stream_is_raised(server: FakeServer) -> None:
    server.script(
        Reply(
            body=sse(
                {"choices": [{"index": 0, "delta": {"content": "Hi"}}]},
                {"error": {"message": "The server had an error", "type": "server_error"}},
            )
        )
    )
    events, error = await collect_error(openai(server), OPENAI_BODY)
    assert events == [TextDelta("Hi")]
    assert (error.code, error.retryable) == ("model.request_failed", True)
    assert "The server had an error" in error.message


async def test_a_json_200_from_a_proxy_is_an_error(server: FakeServer) -> None:
    server.script(
        Reply(
            body=b'{"error": {"message": "model not loaded", "type": "invalid_request_error"}}',
            content_type="application/json",
        ),
    )
    _, error = await collect_error(openai(server), OPENAI_BODY)
    assert (error.code, error.retryable) == ("model.request_failed", False)
    assert "model not loaded" in error.message


# -- Anthropic -----------------------------------------------------------------------------


async def test_anthropic_text_with_cache_read(server: FakeServer) -> None:
    server.script(Reply(body=fixture("anthropic_text.sse"), chunk_size=3))
    events = await collect(anthropic(server), ANTHROPIC_BODY)

    assert text_of(events) == ANTHROPIC_TEXT
    assert events[-2:] == [
        Usage(21 + 3072, 14, cache_read_tokens=3072, cache_write_tokens=0),
        Completed("end_turn"),
    ]
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert request.body == {**ANTHROPIC_BODY, "stream": True}


async def test_anthropic_text_then_tool_use_with_partial_json(server: FakeServer) -> None:
    server.script(Reply(body=fixture("anthropic_tool_use.sse"), chunk_size=11))
    events = await collect(anthropic(server, version="2024-01-01"), ANTHROPIC_BODY)

    assert events == [
        TextDelta("Let me look"),
        TextDelta(" at the store module first."),
        ToolCall(
            "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
            "read_file",
            {"path": "sidecar/store/__init__.py", "ranges": [[1, 80], [120, 160]]},
        ),
        Usage(472 + 1536, 89, cache_read_tokens=0, cache_write_tokens=1536),
        Completed("tool_use"),
    ]
    assert server.requests[0].headers["anthropic-version"] == "2024-01-01"


async def test_anthropic_thinking_and_signature(server: FakeServer) -> None:
    server.script(Reply(body=fixture("anthropic_thinking.sse")))
    events = await collect(anthropic(server), ANTHROPIC_BODY)
    assert events == [
        ReasoningDelta("27 * 453: 27 * 400 = 10800,"),
        ReasoningDelta(" 27 * 53 = 1431, total 12231."),
        ReasoningItem(
            "anthropic",
            "27 * 453: 27 * 400 = 10800, 27 * 53 = 1431, total 12231.",
            signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
        ),
        TextDelta("27 * 453 = 12,231."),
        Usage(86, 61),
        Completed("end_turn"),
    ]


async def test_anthropic_529_then_success(server: FakeServer) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.script(
        Reply(529, json.dumps(overloaded).encode(), content_type="application/json"),
        Reply(body=fixture("anthropic_text.sse")),
    )
    events = await collect(anthropic(server), ANTHROPIC_BODY)
    assert len(server.requests) == 2
    assert text_of(events) == ANTHROPIC_TEXT


async def test_anthropic_overloaded_error_event_mid_stream(server: FakeServer) -> None:
    head = sse_events(fixture("anthropic_text.sse"))[:4]  # message_start .. first text delta
    error_event = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.script(
        Reply(body=b"".join(head) + sse(error_event, named=True)),
        Reply(body=fixture("anthropic_text.sse")),
    )
    events, error = await collect_error(anthropic(server), ANTHROPIC_BODY)
    assert text_of(events) == "The store"
    assert (error.code, error.retryable) == ("model.overloaded", True)
    assert len(server.requests) == 1  # text was yielded: never replayed


async def test_anthropic_error_event_before_any_output_is_retried(server: FakeServer) -> None:
    head = sse_events(fixture("anthropic_text.sse"))[:1]  # message_start only
    error_event = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.script(
        Reply(body=b"".join(head) + sse(error_event, named=True)),
        Reply(body=fixture("anthropic_text.sse")),
    )
    events = await collect(anthropic(server), ANTHROPIC_BODY)
    assert len(server.requests) == 2
    assert text_of(events) == ANTHROPIC_TEXT


async def test_anthropic_401(server: FakeServer) -> None:
    body = {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
    }
    server.script(Reply(401, json.dumps(body).encode(), content_type="application/json"))
    _, error = await collect_error(anthropic(server), ANTHROPIC_BODY)
    assert len(server.requests) == 1
    assert (error.code, error.status, error.retryable) == ("model.auth_failed", 401, False)
    assert "invalid x-api-key" in error.message


async def test_anthropic_stream_cut_without_message_stop(server: FakeServer) -> None:
    events_in = sse_events(fixture("anthropic_tool_use.sse"))
    cut = [event for event in events_in if b"message_stop" not in event]
    server.script(Reply(body=b"".join(cut)))
    events, error = await collect_error(anthropic(server), ANTHROPIC_BODY)
    assert text_of(events) == "Let me look at the store module first."
    assert any(isinstance(event, ToolCall) for event in events)
    assert not any(isinstance(event, Completed) for event in events)
    assert (error.code, error.retryable) == ("model.request_failed", True)
    assert "message_stop" in error.message


async def test_anthropic_malformed_tool_input_passes_raw(
    server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(
        Reply(
            body=sse(
                {"type": "message_start", "message": {"usage": {"input_tokens": 5}}},
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
                },
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": '{"dir": ['},
                },
                {"type": "content_block_stop", "index": 0},
                {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}},
                {"type": "message_stop"},
                named=True,
            )
        )
    )
    with caplog.at_level(logging.WARNING):
        events = await collect(anthropic(server), ANTHROPIC_BODY)
    assert events == [
        ToolCall("t1", "ls", {"_raw": '{"dir": ['}),
        Usage(5, 0),
        Completed("max_tokens"),
    ]
    assert "malformed JSON arguments" in caplog.text


# -- Gemini --------------------------------------------------------------------------------


def google_error(code: int, status: str, message: str, *details: dict[str, Any]) -> bytes:
    """An error body as the Gemini API sends it."""
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return json.dumps({"error": error}).encode()


def crlf_events(raw: bytes) -> list[bytes]:
    """A recorded Gemini stream (CRLF line ends) split into its events."""
    return [block + b"\r\n\r\n" for block in raw.split(b"\r\n\r\n") if block.strip()]


async def test_gemini_text_thoughts_and_cached_usage(server: FakeServer) -> None:
    server.script(Reply(body=fixture("gemini_text.sse"), chunk_size=7))
    events = await collect(gemini(server), GEMINI_BODY)

    assert isinstance(events[0], ReasoningDelta)
    assert events[0].text.startswith("**Reading the layout**")
    assert text_of(events) == GEMINI_TEXT
    assert all(isinstance(event, TextDelta) for event in events[1:-2])
    # promptTokenCount includes the cached part; thinking is output, as elsewhere
    assert events[-2:] == [Usage(2006, 13 + 38, cache_read_tokens=1536), Completed("end_turn")]
    [request] = server.requests
    assert (request.method, request.path) == ("POST", GEMINI_PATH)
    assert request.headers["x-goog-api-key"] == KEY
    assert "authorization" not in request.headers and KEY not in request.path
    assert request.headers["content-type"] == "application/json"
    assert request.body == GEMINI_BODY  # the lowered body as it is: alt=sse is in the URL


async def test_gemini_parallel_function_calls_in_one_chunk(server: FakeServer) -> None:
    server.script(
        Reply(body=fixture("gemini_function_calls.sse"), chunk_size=5),
        Reply(body=fixture("gemini_function_calls.sse")),
    )
    events = await collect(gemini(server, api_key=None), GEMINI_BODY)

    assert events[0] == TextDelta("I'll read both files.")
    read, grep = events[1:3]
    assert isinstance(read, ToolCall) and isinstance(grep, ToolCall)
    assert (read.name, read.arguments) == ("read_file", {"path": "src/store.py", "limit": 200})
    assert (grep.name, grep.arguments) == ("grep", {"pattern": "def \\w+\\(", "path": "src"})
    assert read.call_id.startswith("call_") and read.call_id != grep.call_id
    assert read.signature is not None and read.signature.startswith("CiQB0e2K")
    assert grep.signature is None  # Gemini signs only the first of parallel calls
    assert events[3:] == [Usage(1310, 49 + 85), Completed("tool_use")]  # Gemini said STOP
    assert "x-goog-api-key" not in server.requests[0].headers

    again = await collect(gemini(server), GEMINI_BODY)  # the same answer: the same ids
    assert [e.call_id for e in again if isinstance(e, ToolCall)] == [read.call_id, grep.call_id]


async def test_gemini_call_ids_are_the_apis_or_unique_made_up_ones(
    server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    def answer(response_id: str | None) -> bytes:
        chunk: dict[str, Any] = {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"functionCall": {"id": "fc-7", "name": "ls", "args": {"dir": "."}}},
                            {"functionCall": {"name": "ls"}},
                            {"functionCall": {"name": "ls", "args": ["not", "an", "object"]}},
                        ],
                    },
                    "finishReason": "STOP",
                    "index": 0,
                }
            ]
        }
        if response_id is not None:
            chunk["responseId"] = response_id
        return sse(chunk)

    server.script(*(Reply(body=answer(response_id)) for response_id in (None, None, "r-1", "r-2")))
    with caplog.at_level(logging.WARNING):
        rounds = [await collect(gemini(server), GEMINI_BODY) for _ in range(4)]

    ids: list[str] = []
    for events in rounds:
        given, bare, odd = events[:3]
        assert isinstance(given, ToolCall) and isinstance(bare, ToolCall)
        assert isinstance(odd, ToolCall)
        assert (given.call_id, given.arguments) == ("fc-7", {"dir": "."})
        assert bare.arguments == {}
        assert odd.arguments == {"_raw": '["not", "an", "object"]'}
        assert events[3:] == [Completed("tool_use")]
        ids += [bare.call_id, odd.call_id]
    assert len(set(ids)) == len(ids)  # unique across rounds, so results pair with their call
    assert "not an object" in caplog.text


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("STOP", "end_turn"),
        ("MAX_TOKENS", "max_tokens"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "malformed_function_call"),
        ("OTHER", "other"),
    ],
)
async def test_gemini_finish_reasons(server: FakeServer, finish: str, stop: str) -> None:
    candidate = {"content": {"role": "model", "parts": [{"text": "Hm"}]}, "index": 0}
    server.script(
        Reply(
            body=sse(
                {"candidates": [candidate]},
                {"candidates": [{"finishReason": finish, "index": 0}]},
            )
        )
    )
    events = await collect(gemini(server), GEMINI_BODY)
    assert events == [TextDelta("Hm"), Completed(stop)]


async def test_gemini_blocked_prompt_ends_without_a_candidate(server: FakeServer) -> None:
    server.script(
        Reply(
            body=sse(
                {
                    "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
                    "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12},
                }
            )
        )
    )
    events = await collect(gemini(server), GEMINI_BODY)
    assert events == [Usage(12, 0), Completed("content_filter")]
    assert len(server.requests) == 1  # an answer, not a cut stream to retry


async def test_gemini_429_then_success_honours_retry_after(
    server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    exhausted = google_error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted.")
    server.script(
        Reply(429, exhausted, headers={"retry-after": "0.3"}, content_type="application/json"),
        Reply(body=fixture("gemini_text.sse")),
    )
    with caplog.at_level(logging.WARNING):
        events = await collect(gemini(server, backoff_ms=5000), GEMINI_BODY)

    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body == GEMINI_BODY
    # the server's 300 ms, not the 5 s backoff
    assert "model.rate_limited" in caplog.text and "retry 1 of 2 in 300 ms" in caplog.text
    assert text_of(events) == GEMINI_TEXT
    assert events[-1] == Completed("end_turn")


async def test_gemini_retry_delay_in_the_error_body_is_honoured(
    server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.05s"}
    exhausted = google_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", retry_info)
    server.script(
        Reply(429, exhausted, content_type="application/json"),
        Reply(body=fixture("gemini_text.sse")),
        Reply(429, exhausted, content_type="application/json"),
    )
    with caplog.at_level(logging.WARNING):
        events = await collect(gemini(server, backoff_ms=5000), GEMINI_BODY)
    assert "retry 1 of 2 in 50 ms" in caplog.text
    assert text_of(events) == GEMINI_TEXT

    _, error = await collect_error(gemini(server, max_retries=0), GEMINI_BODY)
    assert (error.code, error.status, error.retryable, error.retry_after_ms) == (
        "model.rate_limited",
        429,
        True,
        50,
    )
    assert "Quota exceeded." in error.message
    assert len(server.requests) == 3


async def test_gemini_invalid_key_is_an_auth_error_without_retry(server: FakeServer) -> None:
    reason = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "API_KEY_INVALID",
        "domain": "googleapis.com",
    }
    invalid = google_error(
        400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", reason
    )
    server.script(Reply(400, invalid, content_type="application/json"))
    _, error = await collect_error(gemini(server), GEMINI_BODY)

    assert len(server.requests) == 1
    assert (error.code, error.status, error.retryable) == ("model.auth_failed", 400, False)
    assert "API key not valid" in error.message
    assert KEY not in str(error) and KEY not in repr(error)


async def test_gemini_stream_cut_without_finish_reason(server: FakeServer) -> None:
    events_in = crlf_events(fixture("gemini_text.sse"))
    assert len(events_in) == 4
    server.script(Reply(body=b"".join(events_in[:-1])), Reply(body=fixture("gemini_text.sse")))
    events, error = await collect_error(gemini(server), GEMINI_BODY)

    assert text_of(events) == "The store keeps one JSONL file per session — append"
    assert not any(isinstance(event, (Usage, Completed)) for event in events)
    assert (error.code, error.retryable) == ("model.request_failed", True)
    assert "finishReason" in error.message
    assert len(server.requests) == 1  # text was yielded: never replayed


async def test_gemini_connection_dropped_mid_event(server: FakeServer) -> None:
    raw = fixture("gemini_text.sse")
    server.script(Reply(body=raw[: raw.index(b" file per session")], chunked=True, truncate=True))
    events, error = await collect_error(gemini(server), GEMINI_BODY)
    assert text_of(events) == "The store keeps one JSONL"
    assert (error.code, error.retryable) == ("model.request_failed", True)
    assert len(server.requests) == 1


async def test_gemini_stream_cut_before_any_output_is_retried(server: FakeServer) -> None:
    usage_only = {"usageMetadata": {"promptTokenCount": 2006, "totalTokenCount": 2006}}
    server.script(Reply(body=sse(usage_only)), Reply(body=fixture("gemini_text.sse")))
    events = await collect(gemini(server), GEMINI_BODY)
    assert len(server.requests) == 2
    assert text_of(events) == GEMINI_TEXT


async def test_gemini_error_event_mid_stream(server: FakeServer) -> None:
    head = crlf_events(fixture("gemini_text.sse"))[1]
    error_event = sse(json.loads(google_error(503, "UNAVAILABLE", "The model is overloaded.")))
    server.script(Reply(body=head + error_event))
    events, error = await collect_error(gemini(server), GEMINI_BODY)
    assert events == [TextDelta("The store keeps one JSONL")]
    assert (error.code, error.retryable) == ("model.overloaded", True)
    assert "UNAVAILABLE: The model is overloaded." in error.message


async def test_gemini_3_gets_a_stand_in_signature_on_unsigned_calls_of_the_current_turn(
    server: FakeServer,
) -> None:
    def call(path: str, **extra: Any) -> dict[str, Any]:
        return {"functionCall": {"name": "read_file", "args": {"path": path}}, **extra}

    def results(*paths: str) -> dict[str, Any]:
        parts = [
            {"functionResponse": {"name": "read_file", "response": {"output": path}}}
            for path in paths
        ]
        return {"role": "user", "parts": parts}

    contents = [
        {"role": "user", "parts": [{"text": "Read a.py"}]},
        {"role": "model", "parts": [call("a.py")]},  # an earlier turn: not checked by the API
        results("a.py"),
        {"role": "model", "parts": [{"text": "Done."}]},
        {"role": "user", "parts": [{"text": "Now b.py and c.py, then d.py"}]},  # this turn
        {"role": "model", "parts": [{"text": "Reading."}, call("b.py"), call("c.py")]},
        results("b.py", "c.py"),
        {"role": "model", "parts": [call("d.py", thoughtSignature="real-signature")]},
        results("d.py"),
    ]
    body = {**GEMINI_BODY, "contents": contents}
    original = json.loads(json.dumps(body))
    server.script(*(Reply(body=fixture("gemini_text.sse")) for _ in range(3)))
    for model in ("gemini-3-flash-preview", "gemini-2.5-pro", "gemini-flash-latest"):
        await collect(GeminiProvider(model, base_url=server.url), body)

    assert body == original  # the caller's body is not changed
    gemini_3, gemini_2_5, alias = (request.body["contents"] for request in server.requests)
    assert gemini_2_5 == contents
    for sent in (gemini_3, alias):
        changed = [i for i, content in enumerate(sent) if content != contents[i]]
        assert changed == [5]
        assert sent[5]["parts"] == [
            {"text": "Reading."},
            call("b.py", thoughtSignature=SKIP_SIGNATURE),
            call("c.py"),
        ]


async def test_gemini_url_forms_and_generation_parameters(server: FakeServer) -> None:
    server.script(Reply(body=fixture("gemini_text.sse")), Reply(body=fixture("gemini_text.sse")))
    # the run loop adds a profile's parameters at the top of the body
    body = {**GEMINI_BODY, "temperature": 0.2, "topP": 0.9, "maxOutputTokens": 9}
    versioned = GeminiProvider("models/gemini-2.5-pro", base_url=server.url + "/v1beta/")
    await collect(versioned, body)
    await collect(GeminiProvider("gemini 2.5/x", base_url=server.url), GEMINI_BODY)

    first, second = server.requests
    assert first.path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert first.body == {
        **GEMINI_BODY,
        # the lowering's own settings win over a parameter of the same name
        "generationConfig": {"maxOutputTokens": 1024, "temperature": 0.2, "topP": 0.9},
    }
    assert second.path == "/v1beta/models/gemini%202.5%2Fx:streamGenerateContent?alt=sse"
    with pytest.raises(ValueError, match="model name"):
        GeminiProvider("models/", base_url=server.url)


# -- cancellation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "shared_client", "how"),
    [
        ("openai", False, "task.cancel"),
        ("openai", True, "task.cancel"),
        ("anthropic", False, "task.cancel"),
        ("anthropic", True, "task.cancel"),
        ("openai", True, "cancel scope"),
        ("anthropic", False, "cancel scope"),
        ("gemini", False, "task.cancel"),
    ],
)
async def test_cancelling_the_consumer_closes_the_connection(
    server: FakeServer, kind: str, shared_client: bool, how: str
) -> None:
    if kind == "openai":
        head = sse_events(fixture("openai_text.sse"))[:3]
        body = OPENAI_BODY
    elif kind == "anthropic":
        head = sse_events(fixture("anthropic_text.sse"))[:4]
        body = ANTHROPIC_BODY
    else:
        head = crlf_events(fixture("gemini_text.sse"))[1:3]
        body = GEMINI_BODY
    server.script(Reply(body=b"".join(head), hang=True))
    async with httpx.AsyncClient() as client:
        shared = client if shared_client else None
        provider: Provider = (
            openai(server, client=shared)
            if kind == "openai"
            else anthropic(server, client=shared)
            if kind == "anthropic"
            else gemini(server, client=shared)
        )
        seen: list[ProviderEvent] = []
        got_text = asyncio.Event()

        async def consume() -> None:
            async for event in provider.stream(body):
                seen.append(event)
                if isinstance(event, TextDelta):
                    got_text.set()

        with anyio.fail_after(2):
            if how == "task.cancel":  # what pygls does to a request handler
                task = asyncio.create_task(consume())
                await got_text.wait()
                await asyncio.sleep(0.05)  # the consumer is now waiting on the socket
                assert not server.client_closed.is_set()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            else:
                async with anyio.create_task_group() as group:
                    group.start_soon(consume)
                    await got_text.wait()
                    await asyncio.sleep(0.05)
                    assert not server.client_closed.is_set()
                    group.cancel_scope.cancel()
        with anyio.fail_after(1):
            await server.client_closed.wait()
    assert seen and all(isinstance(event, TextDelta) for event in seen)
    assert len(server.requests) == 1


# -- secrets -------------------------------------------------------------------------------


async def test_resolve_secret_from_env_and_none() -> None:
    assert resolve_secret(None) is None
    assert resolve_secret("env:MY_MODEL_KEY", {"MY_MODEL_KEY": f"  {KEY}\n"}) == KEY


async def test_resolve_secret_from_secret_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    explicit = tmp_path / "explicit"
    explicit.mkdir()
    (explicit / "openai").write_text(KEY + "\n")
    (explicit / "openai").chmod(0o600)
    assert resolve_secret("secret:openai", {"CONTEXT_SIDECAR_SECRETS_DIR": str(explicit)}) == KEY

    xdg = tmp_path / "xdg" / "context-sidecar" / "secrets"
    xdg.mkdir(parents=True)
    (xdg / "anthropic.key").write_text("xdg-" + KEY)
    (xdg / "anthropic.key").chmod(0o600)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert resolve_secret("secret:anthropic.key", env) == "xdg-" + KEY

    home = tmp_path / "home"
    default = home / ".config" / "context-sidecar" / "secrets"
    default.mkdir(parents=True)
    (default / "local").write_text("home-" + KEY)
    (default / "local").chmod(0o600)
    monkeypatch.setenv("HOME", str(home))
    assert resolve_secret("secret:local", {}) == "home-" + KEY


@pytest.mark.parametrize(
    ("ref", "env", "says"),
    [
        ("env:MISSING_KEY", {}, "env:MISSING_KEY"),
        ("env:EMPTY_KEY", {"EMPTY_KEY": "  \n"}, "env:EMPTY_KEY"),
        ("secret:absent", {}, "secret:absent"),
        ("secret:../escape", {}, "plain file name"),
        ("vault:thing", {}, "'env:NAME' or 'secret:NAME'"),
        ("no-scheme-at-all", {}, "'env:NAME' or 'secret:NAME'"),
    ],
)
async def test_resolve_secret_failures_name_the_reference(
    tmp_path: Path, ref: str, env: dict[str, str], says: str
) -> None:
    env = {**env, "CONTEXT_SIDECAR_SECRETS_DIR": str(tmp_path), "OTHER": KEY}
    (tmp_path / "escape").write_text(KEY)
    with pytest.raises(SecretError) as info:
        resolve_secret(ref, env)
    assert info.value.code == "model.auth_failed"
    assert says in info.value.message
    assert KEY not in info.value.message


async def test_a_loose_secret_file_warns_without_the_value(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "k").write_text(KEY)
    (tmp_path / "k").chmod(0o644)
    with caplog.at_level(logging.DEBUG):
        assert resolve_secret("secret:k", {"CONTEXT_SIDECAR_SECRETS_DIR": str(tmp_path)}) == KEY
    assert "readable by group or others" in caplog.text
    assert KEY not in caplog.text


async def test_the_key_never_reaches_logs_or_errors(
    server: FakeServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret_dir = tmp_path / "secrets"
    secret_dir.mkdir()
    (secret_dir / "model").write_text(KEY)
    os.chmod(secret_dir / "model", 0o600)
    echo = json.dumps({"error": {"message": f"bad key {KEY}", "type": "authentication_error"}})
    server.script(
        Reply(429, echo.encode(), headers={"retry-after": "0"}, content_type="application/json"),
        Reply(body=fixture("openai_text.sse")),
        Reply(401, echo.encode(), content_type="application/json"),
        Reply(400, echo.encode(), content_type="application/json"),
    )
    with caplog.at_level(logging.DEBUG):
        key = resolve_secret("secret:model", {"CONTEXT_SIDECAR_SECRETS_DIR": str(secret_dir)})
        provider = openai(server, api_key=key)
        events = await collect(provider, OPENAI_BODY)  # one logged retry, then the answer
        _, auth_error = await collect_error(provider, OPENAI_BODY)
        _, bad_request = await collect_error(anthropic(server, api_key=key), ANTHROPIC_BODY)

    assert text_of(events) == OPENAI_TEXT
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert "retry 1 of 2" in caplog.text  # the retry was logged, with the provider's message
    assert "bad key [redacted]" in caplog.text
    for error in (auth_error, bad_request):
        assert "bad key [redacted]" in error.message
        assert KEY not in str(error) and KEY not in repr(error)
    assert KEY not in caplog.text
    assert KEY not in repr(provider)
