"""OpenAI Responses API over SSE, for OpenAI and compatible servers (``provider:
"openai-responses"``, and the models OpenAI serves only there: ``sidecar.runs.provider_choice``).

Sends ``POST {base_url}/responses`` with the lowered body (see
``sidecar.context.lower.openai_responses``) plus ``stream: true``, ``store: false`` and
``include: ["reasoning.encrypted_content"]`` (added to any ``include`` the body has):
nothing of the conversation is kept on OpenAI's servers, so each request carries the whole
prompt the sidecar assembled — its snapshot is the prompt — and the model's reasoning comes
back encrypted, to be kept in history and sent back verbatim in every later request (the
prefix stays byte-identical, hence cacheable).  ``Authorization: Bearer <key>`` only when
there is a key; ``prompt_cache_key`` only to OpenAI's own host, as with Chat Completions, and
a compatible server's ``GET {base_url}/models`` is asked for a model's limits, as there.

Reading the stream (each event's JSON ``type`` repeats the SSE event name):

- ``response.output_text.delta`` (and ``response.refusal.delta``) -> :class:`TextDelta`;
- ``response.reasoning_summary_text.delta`` (and ``response.reasoning_text.delta``, the raw
  reasoning some compatible servers stream) -> :class:`ReasoningDelta`; a new summary part
  is set off by a blank line;
- ``response.output_item.added`` of a ``function_call`` opens a call (``call_id``, ``name``);
  ``response.function_call_arguments.delta`` appends to it and ``...arguments.done`` gives
  the whole arguments; ``response.output_item.done`` of a ``function_call`` ->
  :class:`ToolCall` (parallel calls are separate items, each yielded when done);
- ``response.output_item.done`` of a ``reasoning`` item -> :class:`ReasoningItem` with the
  item's ``id``, its ``encrypted_content`` as ``data`` and its summary texts, verbatim;
- ``response.completed`` -> :class:`Usage` (``input_tokens`` with
  ``input_tokens_details.cached_tokens`` as the cache read, ``output_tokens`` with
  ``output_tokens_details.reasoning_tokens``) then :class:`Completed`: ``tool_use`` when calls
  were yielded, else ``end_turn``; ``response.incomplete`` the same with its
  ``incomplete_details.reason`` (``max_output_tokens`` -> ``max_tokens``, ``content_filter``);
- ``response.failed`` raises its ``response.error`` (``server_error`` and rate limits are
  retryable), ``error`` events raise theirs; other events (``response.created``,
  ``...in_progress``, ``...content_part.*``, ``...done`` duplicates) are ignored.

A stream that ends without ``response.completed``, ``response.incomplete`` or
``response.failed`` raises (see :mod:`.transport`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
from sidecar.runs.providers.openai import OpenAICompatible
from sidecar.runs.providers.transport import (
    parse_arguments,
    parse_event_json,
    stream_cut,
    stream_error,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator

    from sidecar.runs.providers.sse import ServerSentEvent

__all__ = ["OpenAIResponsesProvider", "ENCRYPTED_REASONING", "INCOMPLETE_REASONS"]

logger = logging.getLogger(__name__)

#: What ``include`` must name for reasoning items to come back with ``encrypted_content``.
ENCRYPTED_REASONING = "reasoning.encrypted_content"
#: ``incomplete_details.reason`` -> the stop reasons the run loop knows.
INCOMPLETE_REASONS = {"max_output_tokens": "max_tokens", "content_filter": "content_filter"}
_TERMINATORS = "response.completed, response.incomplete or response.failed"


@dataclass(slots=True)
class _OpenCall:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    whole: str | None = None  # from ...arguments.done


class OpenAIResponsesProvider(OpenAICompatible):
    """Responses API streaming (see the module docstring)."""

    name = "openai-responses"
    target = "openai-responses"

    def _url(self) -> str:
        return f"{self.base_url}/responses"

    def _payload(self, body: dict[str, Any]) -> dict[str, Any]:
        include = body.get("include")
        merged = [str(x) for x in include] if isinstance(include, list) else []
        if ENCRYPTED_REASONING not in merged:
            merged.append(ENCRYPTED_REASONING)
        return {**body, "stream": True, "store": False, "include": merged}

    async def _decode(
        self, events: AsyncIterator[ServerSentEvent]
    ) -> AsyncGenerator[ProviderEvent, None]:
        calls: dict[int, _OpenCall] = {}
        summary_seen: set[tuple[int, int]] = set()
        yielded_calls = 0
        async for event in events:
            data = parse_event_json(self.name, event)
            if not isinstance(data, dict):
                raise ProviderError(
                    "model.bad_response",
                    f"{self.name}: a stream event is a JSON {type(data).__name__}, not an object",
                )
            kind = data.get("type") or event.event
            if kind in ("response.output_text.delta", "response.refusal.delta"):
                if data.get("delta"):
                    yield TextDelta(str(data["delta"]))
            elif kind in (
                "response.reasoning_summary_text.delta",
                "response.reasoning_text.delta",
            ):
                part = (_index(data, "output_index"), _index(data, "summary_index"))
                if part not in summary_seen:
                    summary_seen.add(part)
                    if part[1] > 0:
                        yield ReasoningDelta("\n\n")
                if data.get("delta"):
                    yield ReasoningDelta(str(data["delta"]))
            elif kind == "response.output_item.added":
                item = data.get("item") or {}
                if isinstance(item, dict) and item.get("type") == "function_call":
                    calls[_index(data, "output_index")] = _OpenCall(
                        str(item.get("call_id") or ""), str(item.get("name") or "")
                    )
            elif kind == "response.function_call_arguments.delta":
                call = calls.setdefault(_index(data, "output_index"), _OpenCall())
                call.arguments.append(str(data.get("delta") or ""))
            elif kind == "response.function_call_arguments.done":
                call = calls.setdefault(_index(data, "output_index"), _OpenCall())
                if isinstance(data.get("arguments"), str):
                    call.whole = data["arguments"]
            elif kind == "response.output_item.done":
                done = self._item_done(data, calls)
                if done is not None:
                    yielded_calls += isinstance(done, ToolCall)
                    yield done
            elif kind in ("response.completed", "response.incomplete"):
                response = data.get("response") or {}
                for index in sorted(calls):  # items the stream never finished
                    yielded_calls += 1
                    yield self._tool_call(calls.pop(index), {}, index)
                usage = response.get("usage") if isinstance(response, dict) else None
                if isinstance(usage, dict):
                    yield _usage(usage)
                yield Completed(_stop_reason(kind, response, yielded_calls))
                return
            elif kind == "response.failed":
                response = data.get("response") or {}
                error = response.get("error") if isinstance(response, dict) else None
                error = error if isinstance(error, dict) else {}
                raise stream_error(
                    self.name,
                    str(error.get("code") or error.get("type") or "response.failed"),
                    str(error.get("message") or "the response failed"),
                )
            elif kind == "error":
                inner = data.get("error")
                source = inner if isinstance(inner, dict) else data
                raise stream_error(
                    self.name,
                    _text(source.get("code")) or _text(source.get("type")),
                    _text(source.get("message")),
                )
        raise stream_cut(self.name, _TERMINATORS)

    def _item_done(
        self, data: dict[str, Any], calls: dict[int, _OpenCall]
    ) -> ToolCall | ReasoningItem | None:
        item = data.get("item")
        if not isinstance(item, dict):
            return None
        kind = item.get("type")
        if kind == "function_call":
            index = _index(data, "output_index")
            opened = calls.pop(index) if index in calls else _OpenCall()
            return self._tool_call(opened, item, index)
        if kind == "reasoning":
            return _reasoning_item(item)
        if kind != "message":
            logger.debug("%s: skipping a %r output item", self.name, kind)
        return None

    def _tool_call(self, call: _OpenCall, item: dict[str, Any], index: int) -> ToolCall:
        call_id = str(item.get("call_id") or call.call_id or f"call_{index}")
        name = str(item.get("name") or call.name)
        if not name:
            logger.warning("%s: function call %s came without a name", self.name, call_id)
        arguments = item.get("arguments")
        if not isinstance(arguments, str):
            arguments = call.whole if call.whole is not None else "".join(call.arguments)
        return ToolCall(call_id, name, parse_arguments(self.name, call_id, name, arguments))


def _reasoning_item(item: dict[str, Any]) -> ReasoningItem:
    summary = tuple(
        str(part.get("text") or "")
        for part in item.get("summary") or ()
        if isinstance(part, dict) and part.get("type") == "summary_text"
    )
    encrypted = item.get("encrypted_content")
    item_id = item.get("id")
    return ReasoningItem(
        "openai-responses",
        "\n\n".join(summary),
        item_id=str(item_id) if item_id else None,
        data=encrypted if isinstance(encrypted, str) and encrypted else None,
        summary=summary,
    )


def _usage(raw: dict[str, Any]) -> Usage:
    cached = raw.get("input_tokens_details")
    reasoning = raw.get("output_tokens_details")
    return Usage(
        input_tokens=_int(raw.get("input_tokens")),
        output_tokens=_int(raw.get("output_tokens")),
        cache_read_tokens=_int(cached.get("cached_tokens") if isinstance(cached, dict) else 0),
        reasoning_tokens=_int(
            reasoning.get("reasoning_tokens") if isinstance(reasoning, dict) else 0
        ),
    )


def _stop_reason(kind: str, response: Any, calls: int) -> str:
    if kind == "response.incomplete":
        details = response.get("incomplete_details") if isinstance(response, dict) else None
        reason = details.get("reason") if isinstance(details, dict) else None
        return INCOMPLETE_REASONS.get(str(reason), str(reason or "incomplete"))
    return "tool_use" if calls else "end_turn"


def _index(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
