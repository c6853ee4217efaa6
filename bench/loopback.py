"""Loopback model servers: the providers' real wire formats on 127.0.0.1, recording every body.

A model provider's servers are the one part that cannot exist here, so these speak their
streaming formats — Anthropic Messages (``POST /v1/messages``), OpenAI Chat Completions
(``POST /chat/completions``) and Gemini (``POST …:streamGenerateContent?alt=sse``) — and keep
each request's body *as bytes*, exactly as the sidecar's transport wrote them: what a prompt
cache is keyed on.  The replies come from a script: a callable that is given the parsed body and
answers with a :class:`Reply` (text, tool calls whose arguments are raw JSON text, sent as the
model would stream them, in pieces).  A ``GET`` (a run asking a models endpoint for a model's
limits) is answered 404 and kept apart, in ``asked``.

Used by the bench's real-path cache suite (``bench/cache_runs.py``) and by the e2e tests of the
bytes sent (``tests/e2e/test_sent_bytes.py``, ``tests/e2e/test_cache_simulators.py``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LoopbackModel", "Recorded", "Reply", "ToolUse", "last_is_tool_results", "replies"]


@dataclass(frozen=True, slots=True)
class ToolUse:
    id: str
    name: str
    arguments: str
    """The arguments as the model writes them: JSON text, in the model's own key order."""


@dataclass(frozen=True, slots=True)
class Reply:
    text: str = ""
    calls: tuple[ToolUse, ...] = ()


@dataclass(frozen=True, slots=True)
class Recorded:
    path: str
    raw: bytes
    """The body as it came over the socket."""
    at: float = field(default_factory=time.time)
    """When it came (seconds since the epoch): a cache simulator's clock."""

    @property
    def body(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.raw)
        return parsed


Script = Callable[[str, dict[str, Any]], Reply]
"""(provider, parsed body) -> the reply."""


def replies(queue: list[Reply]) -> Script:
    """A script that answers with ``queue``'s replies in order, whatever was asked."""

    def next_reply(provider: str, body: dict[str, Any]) -> Reply:
        if not queue:
            return Reply("(end of script)")
        return queue.pop(0)

    return next_reply


def last_is_tool_results(provider: str, body: dict[str, Any]) -> bool:
    """Whether a body's newest message carries tool results (the model is mid-turn)."""
    if provider == "anthropic":
        content = body["messages"][-1]["content"]
        return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)
    if provider == "openai":
        return bool(body["messages"][-1].get("role") == "tool")
    parts = body["contents"][-1].get("parts", [])
    return any("functionResponse" in part for part in parts)


def _pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _anthropic(reply: Reply, model: str) -> bytes:
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_loopback",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": model,
                "usage": {**usage, "output_tokens": 1},
            },
        }
    ]
    index = 0
    if reply.text:
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
        )
        events += [
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": p},
            }
            for p in _pieces(reply.text, 400)
        ]
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    for call in reply.calls:
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": {},
                },
            }
        )
        events += [
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in _pieces(call.arguments)
        ]
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    stop = "tool_use" if reply.calls else "end_turn"
    events += [
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _openai(reply: Reply, model: str) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-loopback",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": p}) for p in _pieces(reply.text, 400)] if reply.text else []
    for i, call in enumerate(reply.calls):
        opening = {"index": i, "id": call.id, "type": "function"}
        chunks.append(
            chunk({"tool_calls": [{**opening, "function": {"name": call.name, "arguments": ""}}]})
        )
        chunks += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
            for p in _pieces(call.arguments)
        ]
    chunks.append(chunk({}, "tool_calls" if reply.calls else "stop"))
    usage = {"prompt_tokens": 10, "completion_tokens": 9, "total_tokens": 19}
    chunks.append({**chunk({}), "choices": [], "usage": usage})
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def _gemini(reply: Reply, model: str) -> bytes:
    parts: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
    parts += [
        {"functionCall": {"name": call.name, "args": json.loads(call.arguments)}}
        for call in reply.calls
    ]
    event = {
        "candidates": [
            {"content": {"parts": parts, "role": "model"}, "index": 0, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 9, "totalTokenCount": 19},
        "modelVersion": model,
    }
    return f"data: {json.dumps(event)}\n\n".encode()


_RENDER = {"anthropic": _anthropic, "openai": _openai, "gemini": _gemini}


@dataclass
class LoopbackModel:
    """One provider's streaming endpoint on 127.0.0.1; ``base_url`` once started."""

    provider: str
    script: Script
    model: str = "loopback-model"
    recorded: list[Recorded] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    """Paths of the ``GET`` requests (a run asking a models endpoint), answered 404."""
    server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.base_url

    @property
    def base_url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}" + ("/v1" if self.provider == "openai" else "")

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None

    async def __aenter__(self) -> LoopbackModel:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.recorded]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = (await reader.readline()).decode()
            headers: dict[str, str] = {}
            while (line := (await reader.readline()).decode().strip()) != "":
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            raw = await reader.readexactly(int(headers.get("content-length", "0")))
            path = request_line.split(" ")[1] if " " in request_line else ""
            if request_line.startswith("GET "):  # a models endpoint: reports no limits here
                self.asked.append(path)
                writer.write(
                    b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\n"
                    b"content-length: 2\r\nconnection: close\r\n\r\n{}"
                )
                await writer.drain()
                return
            self.recorded.append(Recorded(path, raw))
            body = json.loads(raw)
            reply = self.script(self.provider, body)
            stream = _RENDER[self.provider](reply, str(body.get("model") or self.model))
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                + f"content-length: {len(stream)}\r\nconnection: close\r\n\r\n".encode()
                + stream
            )
            await writer.drain()
        finally:
            writer.close()
