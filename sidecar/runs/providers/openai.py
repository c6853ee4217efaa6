"""OpenAI Chat Completions over SSE, for OpenAI and any compatible server.

Sends ``POST {base_url}/chat/completions`` with the lowered body (see
``sidecar.context.lower.openai_chat``) plus ``stream: true`` and
``stream_options.include_usage: true``; ``Authorization: Bearer <key>`` only when there is a
key, so local servers (Ollama, llama.cpp, vLLM) work without one.  A compatible server's
``GET {base_url}/models`` may report a model's limits (:mod:`.model_info`); OpenAI's own
reports none and is not asked.

Reading the stream (``data: {chunk}`` events, ending with ``data: [DONE]``):

- only choice ``0`` is read (the sidecar never asks for ``n > 1``);
- ``delta.content`` -> :class:`TextDelta`; ``delta.reasoning_content`` or
  ``delta.reasoning`` (DeepSeek, vLLM, Ollama; OpenAI itself sends none) ->
  :class:`ReasoningDelta`;
- ``delta.tool_calls[i]`` fragments are joined by ``index`` (the ``id`` and ``function.name``
  come once, ``function.arguments`` in pieces; a server that sends whole calls, or arguments
  as an object, works too); the complete calls are yielded, in index order, when
  ``finish_reason`` arrives.  A call without an id gets ``call_<index>``;
- ``usage`` (the last chunk, with empty ``choices``) -> one :class:`Usage`, yielded just before
  :class:`Completed`: ``prompt_tokens`` is the input, ``prompt_tokens_details.cached_tokens``
  the cache read (OpenAI reports no cache writes); servers that repeat a running usage on
  every chunk yield only the last;
- ``finish_reason`` -> the stop reason: ``stop`` -> ``end_turn``, ``tool_calls`` (and the
  legacy ``function_call``) -> ``tool_use``, ``length`` -> ``max_tokens``, anything else as
  sent.  Some compatible servers say ``stop`` after tool calls: ``stop`` after yielded calls
  is ``tool_use``;
- ``[DONE]`` -> :class:`Completed`.  Without a ``finish_reason`` before it, pending calls are
  yielded and the reason is inferred (logged).  A stream that ends without ``[DONE]`` raises
  (see :mod:`.transport`); a chunk ``{"error": {...}}`` raises that error.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sidecar.runs.providers.base import (
    Completed,
    ProviderError,
    ProviderEvent,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    Usage,
)
from sidecar.runs.providers.model_info import openai_compatible_limits
from sidecar.runs.providers.transport import (
    HttpStreamProvider,
    parse_arguments,
    parse_event_json,
    stream_cut,
    stream_error,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator

    from sidecar.runs.providers.sse import ServerSentEvent

__all__ = ["DEFAULT_BASE_URL", "OPENAI_HOST", "STOP_REASONS", "OpenAICompatible", "OpenAIProvider"]

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENAI_HOST = "api.openai.com"
#: ``finish_reason`` -> the stop reasons the run loop knows.
STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


@dataclass(slots=True)
class _PendingCall:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class OpenAICompatible(HttpStreamProvider):
    """What both of OpenAI's APIs (Chat Completions, Responses) share, and the servers that
    copy them: bearer auth, ``prompt_cache_key`` only on OpenAI's own host, and limits read
    from a compatible server's ``/models`` (OpenAI's own reports none, so it is not asked)."""

    default_base_url = DEFAULT_BASE_URL

    @property
    def accepts_cache_key(self) -> bool:
        """Whether the body may carry ``prompt_cache_key``: OpenAI's own API routes a
        session's requests to one cache with it; OpenAI-compatible servers (vLLM, llama.cpp,
        Ollama, proxies) differ on unknown fields — some refuse the request — so they get it
        only when the binding's ``parameters`` name it themselves."""
        return urlsplit(self.base_url).hostname == OPENAI_HOST

    def _headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    def _models_url(self, model: str) -> str | None:
        return None if self.accepts_cache_key else f"{self.base_url}/models"

    def _read_limits(self, data: Any, model: str) -> tuple[int | None, int | None]:
        return openai_compatible_limits(data, model)


class OpenAIProvider(OpenAICompatible):
    """Chat Completions streaming (see the module docstring)."""

    name = "openai"
    target = "openai-chat"

    def _url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _payload(self, body: dict[str, Any]) -> dict[str, Any]:
        options = body.get("stream_options")
        merged = dict(options) if isinstance(options, dict) else {}
        merged["include_usage"] = True
        return {**body, "stream": True, "stream_options": merged}

    async def _decode(
        self, events: AsyncIterator[ServerSentEvent]
    ) -> AsyncGenerator[ProviderEvent, None]:
        pending: dict[int, _PendingCall] = {}
        calls_yielded = 0
        finish: str | None = None
        usage: Usage | None = None
        async for event in events:
            if event.data.strip() == "[DONE]":
                if finish is None:
                    for call in self._flush(pending):
                        calls_yielded += 1
                        yield call
                    logger.warning("%s: stream finished without a finish_reason", self.name)
                if usage is not None:
                    yield usage
                yield Completed(_stop_reason(finish, calls_yielded))
                return
            chunk = parse_event_json(self.name, event)
            if not isinstance(chunk, dict):
                raise ProviderError(
                    "model.bad_response",
                    f"{self.name}: a stream chunk is a JSON {type(chunk).__name__}, not an object",
                )
            error = chunk.get("error")
            if error:
                kind, message = self._error_detail(chunk)
                raise stream_error(self.name, kind, message)
            for choice in chunk.get("choices") or ():
                if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                    continue
                delta = choice.get("delta") or {}
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                if isinstance(reasoning, str) and reasoning:
                    yield ReasoningDelta(reasoning)
                content = delta.get("content")
                if isinstance(content, str) and content:
                    yield TextDelta(content)
                for fragment in delta.get("tool_calls") or ():
                    if isinstance(fragment, dict):
                        _add_fragment(pending, fragment)
                reason = choice.get("finish_reason")
                if reason:
                    finish = str(reason)
                    for call in self._flush(pending):
                        calls_yielded += 1
                        yield call
            raw_usage = chunk.get("usage")
            if isinstance(raw_usage, dict):
                usage = _usage(raw_usage)
        raise stream_cut(self.name, "data: [DONE]")

    def _flush(self, pending: dict[int, _PendingCall]) -> list[ToolCall]:
        calls = []
        for index in sorted(pending):
            call = pending[index]
            call_id = call.call_id or f"call_{index}"
            if not call.name:
                logger.warning("%s: tool call %s came without a name", self.name, call_id)
            arguments = parse_arguments(self.name, call_id, call.name, "".join(call.arguments))
            calls.append(ToolCall(call_id, call.name, arguments))
        pending.clear()
        return calls


def _add_fragment(pending: dict[int, _PendingCall], fragment: dict[str, Any]) -> None:
    index = fragment.get("index")
    call_id = fragment.get("id")
    if not isinstance(index, int):
        # Servers that omit the index send one whole call per fragment, or pieces of the
        # last one without an id.
        known = [i for i, call in pending.items() if call_id and call.call_id == call_id]
        if known:
            index = known[0]
        elif call_id or not pending:
            index = max(pending, default=-1) + 1
        else:
            index = max(pending)
    call = pending.setdefault(index, _PendingCall())
    if isinstance(call_id, str) and call_id and not call.call_id:
        call.call_id = call_id
    function = fragment.get("function") or {}
    name = function.get("name")
    if isinstance(name, str) and name and not call.name:
        call.name = name
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        call.arguments.append(arguments)
    elif isinstance(arguments, dict):
        call.arguments.append(json.dumps(arguments))


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("prompt_tokens_details") or {}
    return Usage(
        input_tokens=_int(raw.get("prompt_tokens")),
        output_tokens=_int(raw.get("completion_tokens")),
        cache_read_tokens=_int(details.get("cached_tokens") if isinstance(details, dict) else 0),
    )


def _stop_reason(finish: str | None, calls_yielded: int) -> str:
    if finish is None or finish == "stop":
        return "tool_use" if calls_yielded else "end_turn"
    return STOP_REASONS.get(finish, finish)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
