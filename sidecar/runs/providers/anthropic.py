"""Anthropic Messages API over SSE.

Sends ``POST {base_url}/v1/messages`` with the lowered body (see
``sidecar.context.lower.anthropic_messages``; its ``cache_control`` markers pass through
untouched) plus ``stream: true``, with the ``x-api-key`` (when there is a key) and
``anthropic-version`` headers.  A model's limits come from ``GET {base_url}/v1/models/{id}``
(:mod:`.model_info`).

Reading the stream (each event's JSON ``type``, which repeats the SSE event name):

- ``message_start``: its ``message.usage`` holds the input counts (``input_tokens``,
  ``cache_read_input_tokens``, ``cache_creation_input_tokens``);
- ``content_block_start``: a ``text`` block's initial text (usually empty) -> :class:`TextDelta`;
  a ``tool_use`` block opens a call (id, name); a ``thinking`` block opens a reasoning block,
  its initial text -> :class:`ReasoningDelta`; a ``redacted_thinking`` block is kept whole
  (its ``data``); server-side blocks are skipped (the events have no place for them);
- ``content_block_delta``: ``text_delta`` -> :class:`TextDelta`, ``thinking_delta`` ->
  :class:`ReasoningDelta` (and the open block's text), ``signature_delta`` -> the open
  block's signature, ``input_json_delta`` -> appended to the open call's JSON; other delta
  types are ignored;
- ``content_block_stop`` of a ``tool_use`` block -> :class:`ToolCall` with the parsed input
  (``{}`` when no JSON came: the block's initial ``input``); of a signed ``thinking`` block ->
  :class:`ReasoningItem` (text and signature, verbatim); of a ``redacted_thinking`` block ->
  a redacted :class:`ReasoningItem` carrying ``data``.  History keeps them in stream order and
  the lowering sends them back as they came: Anthropic wants the thinking blocks of a tool-use
  turn back, unchanged, with their signatures.  An unsigned thinking block (a compatible
  server) stays plain reasoning, which is not sent back;
- ``message_delta``: ``delta.stop_reason`` and the running ``usage`` (``output_tokens``; any
  input count it repeats replaces the one from ``message_start``);
- ``message_stop`` -> :class:`Usage` (``input_tokens`` = uncached + cache read + cache
  write, see :mod:`.base`) then :class:`Completed` with the stop reason as sent
  (``end_turn``, ``tool_use``, ``max_tokens``, ``stop_sequence``, ``pause_turn``,
  ``refusal``);
- ``ping`` and unknown event types (the API may add some) are ignored; ``error`` raises:
  ``overloaded_error`` -> ``model.overloaded``, ``rate_limit_error`` -> ``model.rate_limited``,
  ``api_error`` -> ``model.request_failed``, all retryable; others not retryable.

A stream that ends without ``message_stop`` raises (see :mod:`.transport`).
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sidecar.runs.providers.base import (
    Completed,
    ProviderError,
    ProviderEvent,
    ReasoningDelta,
    ReasoningItem,
    TextDelta,
    ToolCall,
    Usage,
)
from sidecar.runs.providers.model_info import anthropic_limits
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

__all__ = ["AnthropicProvider", "DEFAULT_BASE_URL", "DEFAULT_VERSION"]

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_VERSION = "2023-06-01"


@dataclass(slots=True)
class _OpenThinking:
    text: list[str] = field(default_factory=list)
    signature: str | None = None
    redacted_data: str | None = None

    def item(self) -> ReasoningItem | None:
        if self.redacted_data is not None:
            return ReasoningItem("anthropic", "", data=self.redacted_data, redacted=True)
        if not self.signature:
            return None  # unsigned: stays plain reasoning, never sent back
        return ReasoningItem("anthropic", "".join(self.text), signature=self.signature)


@dataclass(slots=True)
class _OpenCall:
    call_id: str
    name: str
    initial: dict[str, Any]
    json: list[str] = field(default_factory=list)


class AnthropicProvider(HttpStreamProvider):
    """Messages API streaming (see the module docstring)."""

    name = "anthropic"
    target = "anthropic-messages"
    default_base_url = DEFAULT_BASE_URL

    def __init__(self, *args: Any, version: str = DEFAULT_VERSION, **kwargs: Any) -> None:
        """The base's arguments (``base_url``, ``api_key``, …) and the ``anthropic-version``
        header."""
        super().__init__(*args, **kwargs)
        self.version = version

    def _url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def _headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream", "anthropic-version": self.version}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def _payload(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "stream": True}

    def _models_url(self, model: str) -> str | None:
        return f"{self.base_url}/v1/models/{quote(model, safe='')}"

    def _read_limits(self, data: Any, model: str) -> tuple[int | None, int | None]:
        return anthropic_limits(data)

    async def _decode(
        self, events: AsyncIterator[ServerSentEvent]
    ) -> AsyncGenerator[ProviderEvent, None]:
        calls: dict[int, _OpenCall] = {}
        thinking: dict[int, _OpenThinking] = {}
        usage: dict[str, Any] = {}
        stop: str | None = None
        async for event in events:
            data = parse_event_json(self.name, event)
            if not isinstance(data, dict):
                raise ProviderError(
                    "model.bad_response",
                    f"{self.name}: a stream event is a JSON {type(data).__name__}, not an object",
                )
            kind = data.get("type") or event.event
            if kind == "content_block_delta":
                delta = data.get("delta") or {}
                delta_type = delta.get("type")
                if delta_type == "text_delta":
                    if delta.get("text"):
                        yield TextDelta(str(delta["text"]))
                elif delta_type == "input_json_delta":
                    call = calls.get(_index(data))
                    if call is None:
                        raise ProviderError(
                            "model.bad_response",
                            f"{self.name}: tool input for block {_index(data)}, "
                            "which is not an open tool_use block",
                        )
                    call.json.append(str(delta.get("partial_json") or ""))
                elif delta_type == "thinking_delta":
                    if delta.get("thinking"):
                        text = str(delta["thinking"])
                        thinking.setdefault(_index(data), _OpenThinking()).text.append(text)
                        yield ReasoningDelta(text)
                elif delta_type == "signature_delta":
                    block = thinking.setdefault(_index(data), _OpenThinking())
                    block.signature = (block.signature or "") + str(delta.get("signature") or "")
            elif kind == "content_block_start":
                start = self._block_start(data, calls, thinking)
                if start is not None:
                    yield start
            elif kind == "content_block_stop":
                call = calls.pop(_index(data), None)
                if call is not None:
                    yield self._tool_call(call)
                closed = thinking.pop(_index(data), None)
                item = closed.item() if closed is not None else None
                if item is not None:
                    yield item
            elif kind == "message_start":
                message = data.get("message") or {}
                usage.update(_counts(message.get("usage")))
            elif kind == "message_delta":
                reason = (data.get("delta") or {}).get("stop_reason")
                if reason:
                    stop = str(reason)
                usage.update(_counts(data.get("usage")))
            elif kind == "message_stop":
                for index in sorted(thinking):  # blocks the stream never closed
                    item = thinking.pop(index).item()
                    if item is not None:
                        yield item
                for index in sorted(calls):
                    yield self._tool_call(calls.pop(index))
                if usage:
                    yield _usage(usage)
                yield Completed(stop or "end_turn")
                return
            elif kind == "error":
                error = data.get("error") or {}
                raise stream_error(self.name, error.get("type"), error.get("message"))
            elif kind != "ping":
                logger.debug("%s: ignoring stream event %r", self.name, kind)
        raise stream_cut(self.name, "message_stop")

    def _block_start(
        self, data: dict[str, Any], calls: dict[int, _OpenCall], thinking: dict[int, _OpenThinking]
    ) -> ProviderEvent | None:
        block = data.get("content_block") or {}
        block_type = block.get("type")
        if block_type == "text":
            return TextDelta(str(block["text"])) if block.get("text") else None
        if block_type == "tool_use":
            initial = block.get("input")
            calls[_index(data)] = _OpenCall(
                call_id=str(block.get("id") or f"toolu_{_index(data)}"),
                name=str(block.get("name") or ""),
                initial=initial if isinstance(initial, dict) else {},
            )
            return None
        if block_type == "thinking":
            text = str(block.get("thinking") or "")
            signature = block.get("signature")
            thinking[_index(data)] = _OpenThinking(
                [text] if text else [], str(signature) if signature else None
            )
            return ReasoningDelta(text) if text else None
        if block_type == "redacted_thinking":
            thinking[_index(data)] = _OpenThinking(redacted_data=str(block.get("data") or ""))
            return None
        logger.debug("%s: skipping a %r content block", self.name, block_type)
        return None

    def _tool_call(self, call: _OpenCall) -> ToolCall:
        text = "".join(call.json)
        if not text.strip():
            return ToolCall(call.call_id, call.name, copy.deepcopy(call.initial))
        return ToolCall(
            call.call_id, call.name, parse_arguments(self.name, call.call_id, call.name, text)
        )


def _index(data: dict[str, Any]) -> int:
    index = data.get("index")
    return index if isinstance(index, int) else -1


_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def _counts(raw: Any) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    return {
        key: raw[key]
        for key in _USAGE_FIELDS
        if isinstance(raw.get(key), int) and not isinstance(raw.get(key), bool)
    }


def _usage(counts: dict[str, int]) -> Usage:
    read = counts.get("cache_read_input_tokens", 0)
    write = counts.get("cache_creation_input_tokens", 0)
    return Usage(
        input_tokens=counts.get("input_tokens", 0) + read + write,
        output_tokens=counts.get("output_tokens", 0),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )
