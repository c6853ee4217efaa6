"""Gemini API ``streamGenerateContent`` over SSE.

Sends ``POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse`` with the lowered
body (see ``sidecar.context.lower.gemini``; function responses of earlier rounds are already
in its ``contents``) and the key in the ``x-goog-api-key`` header (when there is a key; never
in the URL, which reaches logs).  The model is in the URL, not the body; a base URL that
already ends in an API version (``.../v1beta``) is used as it is.  A model's limits come
from ``GET .../v1beta/models/{model}`` (:mod:`.model_info`).  Top-level body keys that
``GenerateContentRequest`` does not have (generation parameters such as ``temperature``, put
there by the run loop) move into ``generationConfig``, where the API expects them.

Thought signatures: Gemini 3 models refuse (400) a request whose current turn holds a
``functionCall`` part without the ``thoughtSignature`` it came with.  The signature a call came
with is kept on :class:`ToolCall` (``signature``), stored with the call in history and sent back
on its part by the lowering.  For calls history has none for (written before signatures were
kept, or by another provider), on those models (``gemini-3...`` and later, and unversioned
aliases such as ``gemini-flash-latest``) each model step of the current turn (the contents
after the last user message that is not only function responses) whose calls carry no
signature gets Google's documented stand-in, :data:`SKIP_SIGNATURE`, on its first call.  A
signature already in the body is left alone; older models (``gemini-2.5-...``) get the body
as it is.

Reading the stream: every event's ``data`` is a whole ``GenerateContentResponse`` JSON object;
there is no terminator event, the last chunk carries the ``finishReason``.

- only candidate ``0`` is read (the sidecar never asks for more);
- in ``content.parts``: ``text`` -> :class:`TextDelta`, a part with ``thought: true`` ->
  :class:`ReasoningDelta`; ``functionCall`` -> :class:`ToolCall` at once (Gemini sends each call
  whole, several in one chunk for parallel calls) with ``args`` as the arguments and the
  part's ``thoughtSignature`` as ``signature``.  The call's
  ``id`` is used when the API sends one; otherwise an id is made up: ``call_<tag>_<n>``, ``n``
  counting the calls of this answer and ``tag`` derived from the answer's ``responseId`` (a
  random tag without one), so ids stay unique across the rounds of a session.
  Signatures of other parts and other part kinds (``inlineData``, ``executableCode``, ...)
  are skipped: the events have no place for them;
- ``finishReason`` -> the stop reason: ``STOP`` -> ``end_turn`` (``tool_use`` when calls were
  yielded: Gemini says ``STOP`` after function calls), ``MAX_TOKENS`` -> ``max_tokens``, the
  content filters (``SAFETY``, ``RECITATION``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``SPII``,
  ``IMAGE_SAFETY``) -> ``content_filter``, anything else lower-cased
  (``malformed_function_call``, ``other``, ...).  A prompt blocked before any candidate
  (``promptFeedback.blockReason``, no candidates) ends with ``content_filter`` too;
- ``usageMetadata`` (repeated, growing, on the chunks; the last one wins) -> one
  :class:`Usage` just before :class:`Completed`: ``promptTokenCount`` (which includes the
  cached part) plus ``toolUsePromptTokenCount`` is the input, ``cachedContentTokenCount`` the
  cache read, ``candidatesTokenCount + thoughtsTokenCount`` the output (thinking is billed as
  output, as with the other providers); Gemini reports no cache writes;
- the end of the stream -> :class:`Completed`.  A stream that ends without a ``finishReason``
  was cut and raises ``model.request_failed`` (retryable, see :mod:`.transport`); an event
  ``{"error": {...}}`` raises that error.

Errors are Google's ``{"error": {"code", "message", "status", "details"}}``: ``status``
``RESOURCE_EXHAUSTED`` is a rate limit, ``UNAVAILABLE`` an overload, ``INTERNAL`` and
``DEADLINE_EXCEEDED`` a retryable failure, ``UNAUTHENTICATED`` / ``PERMISSION_DENIED`` and a
``400`` whose details say ``API_KEY_INVALID`` an auth failure.  A ``google.rpc.RetryInfo``
``retryDelay`` in the details is honoured like a ``Retry-After`` header when there is none.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import secrets
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sidecar.runs.providers.base import (
    Completed,
    ProviderError,
    ProviderEvent,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    Usage,
)
from sidecar.runs.providers.model_info import gemini_limits
from sidecar.runs.providers.transport import (
    HttpStreamProvider,
    parse_event_json,
    stream_cut,
    stream_error,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator

    from sidecar.runs.providers.sse import ServerSentEvent

__all__ = ["GeminiProvider", "DEFAULT_BASE_URL", "API_VERSION", "STOP_REASONS", "SKIP_SIGNATURE"]

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"
#: ``finishReason`` -> the stop reasons the run loop knows (others are lower-cased).
STOP_REASONS = {
    "STOP": "end_turn",
    "MAX_TOKENS": "max_tokens",
    **{
        reason: "content_filter"
        for reason in (
            "SAFETY",
            "RECITATION",
            "BLOCKLIST",
            "PROHIBITED_CONTENT",
            "SPII",
            "IMAGE_SAFETY",
        )
    },
}
#: The value Google documents for a function call whose real thought signature is not known
#: (history from elsewhere, or rebuilt): the API then skips validating it.
SKIP_SIGNATURE = "skip_thought_signature_validator"
#: ``GenerateContentRequest`` fields (both JSON spellings); any other top-level key is a
#: generation parameter and belongs in ``generationConfig``.
_REQUEST_FIELDS = frozenset(
    {
        "model",
        "contents",
        "tools",
        "toolConfig",
        "tool_config",
        "safetySettings",
        "safety_settings",
        "systemInstruction",
        "system_instruction",
        "generationConfig",
        "generation_config",
        "cachedContent",
        "cached_content",
    }
)
#: Google's error ``status`` -> the error kinds :mod:`.transport` knows.
_ERROR_KINDS = {
    "RESOURCE_EXHAUSTED": "rate_limit_error",
    "UNAVAILABLE": "overloaded_error",
    "INTERNAL": "api_error",
    "DEADLINE_EXCEEDED": "api_error",
    "UNAUTHENTICATED": "authentication_error",
    "PERMISSION_DENIED": "permission_error",
}
_MAJOR = re.compile(r"^gemini-(\d+)")
_VERSIONED = re.compile(r"/v\d+(?:alpha|beta)?\d*$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)s\s*$")
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


class GeminiProvider(HttpStreamProvider):
    """``streamGenerateContent`` streaming (see the module docstring)."""

    name = "gemini"
    target = "gemini"

    default_base_url = DEFAULT_BASE_URL

    def __init__(self, model: str, *args: Any, **kwargs: Any) -> None:
        """``model`` (part of the URL), then the base's arguments (``base_url``, ``api_key``,
        …)."""
        super().__init__(*args, **kwargs)
        model = model.strip().removeprefix("models/")
        if not model:
            raise ValueError("a Gemini provider needs a model name")
        self.model = model
        major = _MAJOR.match(model)
        self._signs_calls = model.startswith("gemini-") and (
            major is None or int(major.group(1)) >= 3
        )

    def _root(self) -> str:
        if _VERSIONED.search(self.base_url):
            return self.base_url
        return f"{self.base_url}/{API_VERSION}"

    def _url(self) -> str:
        return f"{self._root()}/models/{quote(self.model, safe='')}:streamGenerateContent?alt=sse"

    def _models_url(self, model: str) -> str | None:
        name = model.strip().removeprefix("models/")
        return f"{self._root()}/models/{quote(name, safe='')}"

    def _read_limits(self, data: Any, model: str) -> tuple[int | None, int | None]:
        return gemini_limits(data)

    def _headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream"}
        if self._api_key:
            headers["x-goog-api-key"] = self._api_key
        return headers

    def _payload(self, body: dict[str, Any]) -> dict[str, Any]:
        payload: dict[str, Any] = {}
        moved: dict[str, Any] = {}
        for key, value in body.items():
            (payload if key in _REQUEST_FIELDS else moved)[key] = value
        if moved:
            config_key = (
                "generation_config" if "generation_config" in payload else "generationConfig"
            )
            config = payload.get(config_key)
            merged = dict(config) if isinstance(config, dict) else {}
            for key, value in moved.items():
                merged.setdefault(key, value)
            payload[config_key] = merged
        contents = payload.get("contents")
        if self._signs_calls and isinstance(contents, list):
            payload["contents"] = _signed_current_turn(contents)
        return payload

    def _error_detail(self, data: Any) -> tuple[str | None, str | None]:
        error = _error_object(data)
        if error is None:
            return super()._error_detail(data)
        message = error.get("message")
        return _error_kind(error), str(message) if message is not None else None

    def _refine_error(self, error: ProviderError, data: Any) -> ProviderError:
        body = _error_object(data)
        if body is None:
            return error
        if error.status == 400 and _error_reason(body) == "API_KEY_INVALID":
            return ProviderError(
                "model.auth_failed", f"{error.message} (check the API key)", status=error.status
            )
        if error.retry_after_ms is None:
            error.retry_after_ms = _retry_delay_ms(body)
        return error

    async def _decode(
        self, events: AsyncIterator[ServerSentEvent]
    ) -> AsyncGenerator[ProviderEvent, None]:
        calls = 0
        tag: str | None = None
        finish: str | None = None
        usage: Usage | None = None
        async for event in events:
            chunk = parse_event_json(self.name, event)
            if not isinstance(chunk, dict):
                raise ProviderError(
                    "model.bad_response",
                    f"{self.name}: a stream chunk is a JSON {type(chunk).__name__}, not an object",
                )
            error = _error_object(chunk)
            if error is not None:
                message = error.get("message")
                raise stream_error(
                    self.name,
                    _error_kind(error),
                    f"{error.get('status') or error.get('code')}: {message}",
                )
            if tag is None and isinstance(chunk.get("responseId"), str):
                tag = hashlib.sha256(chunk["responseId"].encode()).hexdigest()[:10]
            raw_usage = chunk.get("usageMetadata")
            if isinstance(raw_usage, dict):
                usage = _usage(raw_usage)
            candidate = _first_candidate(chunk.get("candidates"))
            if candidate is None:
                feedback = chunk.get("promptFeedback")
                blocked = feedback.get("blockReason") if isinstance(feedback, dict) else None
                if blocked:
                    logger.warning("%s: the prompt was blocked (%s)", self.name, blocked)
                    finish = "content_filter"
                continue
            content = candidate.get("content") or {}
            for part in content.get("parts") or ():
                if not isinstance(part, dict):
                    continue
                text = part.get("text")
                call = part.get("functionCall")
                if isinstance(text, str):
                    if text:
                        yield (
                            ReasoningDelta(text) if part.get("thought") is True else TextDelta(text)
                        )
                elif isinstance(call, dict):
                    if tag is None:
                        tag = secrets.token_hex(5)
                    signature = part.get("thoughtSignature")
                    yield self._tool_call(
                        call,
                        f"call_{tag}_{calls}",
                        signature if isinstance(signature, str) and signature else None,
                    )
                    calls += 1
                elif not part.get("thought"):
                    logger.debug("%s: skipping a part with %s", self.name, sorted(part))
            reason = candidate.get("finishReason")
            if isinstance(reason, str) and reason:
                finish = reason
        if finish is None:
            raise stream_cut(self.name, "a finishReason")
        if usage is not None:
            yield usage
        yield Completed(_stop_reason(finish, calls))

    def _tool_call(self, call: dict[str, Any], made_up_id: str, signature: str | None) -> ToolCall:
        call_id = call.get("id")
        call_id = call_id if isinstance(call_id, str) and call_id else made_up_id
        name = call.get("name")
        name = name if isinstance(name, str) else ""
        if not name:
            logger.warning("%s: function call %s came without a name", self.name, call_id)
        args = call.get("args")
        if args is None:
            arguments: dict[str, Any] = {}
        elif isinstance(args, dict):
            arguments = args
        else:
            logger.warning(
                "%s: function call %s (%s) args are a JSON %s, not an object; passing them raw",
                self.name,
                call_id,
                name,
                type(args).__name__,
            )
            arguments = {"_raw": json.dumps(args)}
        return ToolCall(call_id, name, arguments, signature)


def _signed_current_turn(contents: list[Any]) -> list[Any]:
    """``contents`` with :data:`SKIP_SIGNATURE` on the first call of each unsigned model step
    of the current turn (see the module docstring); the given contents are not changed."""
    start = 0
    for index, content in enumerate(contents):
        parts = _parts(content)
        if not isinstance(content, dict) or content.get("role") != "user":
            continue
        if not any("functionResponse" in part for part in parts):
            start = index + 1
    signed = list(contents)
    for index in range(start, len(contents)):
        content = contents[index]
        parts = _parts(content)
        calls = [i for i, part in enumerate(parts) if "functionCall" in part]
        if not calls or content.get("role") != "model":
            continue
        if any(parts[i].get("thoughtSignature") for i in calls):
            continue
        new_parts = list(content["parts"])
        new_parts[calls[0]] = {**parts[calls[0]], "thoughtSignature": SKIP_SIGNATURE}
        signed[index] = {**content, "parts": new_parts}
    return signed


def _parts(content: Any) -> list[dict[str, Any]]:
    """The parts of a ``Content`` (nothing for anything else); the list keeps positions."""
    if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
        return []
    return [part if isinstance(part, dict) else {} for part in content["parts"]]


def _first_candidate(candidates: Any) -> dict[str, Any] | None:
    for candidate in candidates or ():
        if isinstance(candidate, dict) and candidate.get("index", 0) == 0:
            return candidate
    return None


def _stop_reason(finish: str, calls: int) -> str:
    if finish == "STOP" and calls:
        return "tool_use"
    return STOP_REASONS.get(finish, finish.lower())


def _usage(raw: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=_int(raw.get("promptTokenCount")) + _int(raw.get("toolUsePromptTokenCount")),
        output_tokens=_int(raw.get("candidatesTokenCount")) + _int(raw.get("thoughtsTokenCount")),
        cache_read_tokens=_int(raw.get("cachedContentTokenCount")),
    )


def _error_object(data: Any) -> dict[str, Any] | None:
    """The ``error`` object of a Google error body (a list of one, from some endpoints, too)."""
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else None


def _error_kind(error: dict[str, Any]) -> str | None:
    status = error.get("status")
    if isinstance(status, str) and status:
        return _ERROR_KINDS.get(status, status)
    return None


def _details(error: dict[str, Any]) -> list[dict[str, Any]]:
    details = error.get("details")
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


def _error_reason(error: dict[str, Any]) -> str | None:
    for detail in _details(error):
        if detail.get("@type") == _ERROR_INFO and isinstance(detail.get("reason"), str):
            return str(detail["reason"])
    return None


def _retry_delay_ms(error: dict[str, Any]) -> int | None:
    """``RetryInfo.retryDelay`` (a protobuf JSON duration such as ``"37s"`` or ``"0.5s"``)."""
    for detail in _details(error):
        delay = detail.get("retryDelay")
        if detail.get("@type") != _RETRY_INFO or not isinstance(delay, str):
            continue
        match = _DURATION.match(delay)
        if match:
            seconds = float(match.group(1))
            if math.isfinite(seconds):
                return math.ceil(seconds * 1000)
    return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
