"""The HTTP side shared by the SSE providers: one POST, status handling, retries, cleanup.

:class:`HttpStreamProvider` sends ``POST url`` with the provider's JSON payload, reads the
``text/event-stream`` answer through :mod:`.sse`, and hands the events to the subclass's
``_decode``, which turns them into :data:`~.base.ProviderEvent` and must end with
:class:`~.base.Completed` (or raise).

Status codes
    401 and 403 -> ``model.auth_failed``; 429 -> ``model.rate_limited``; 503 and 529 ->
    ``model.overloaded``; 500, 502 and 504 -> ``model.request_failed``: all of these but the
    auth errors are retryable.  Any other status -> ``model.request_failed``, not retryable.
    The message carries the provider's own error message (``error.message`` in the JSON body,
    else the start of the body), shortened, with the API key blanked out should the provider
    echo it.  A ``200`` answered with JSON instead of an event stream is treated the same way
    (some proxies do that) or, without an error in it, as ``model.bad_response``.  A
    provider may refine such an error from what its JSON error body says beyond a type and a
    message (``_refine_error``; Gemini reads a retry delay and an invalid-key reason there).

Retries
    Retryable failures (the statuses above, connection errors and timeouts, a stream that ends
    or breaks before its first event) are retried up to ``max_retries`` times, but only while
    nothing has been yielded: a partly streamed answer is never replayed.  The wait is
    ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date) when the server sends one
    (``0`` retries at once), else ``backoff_ms * 2**attempt`` without jitter (one user, one
    sidecar: there is no herd to spread).  A server asking for more than
    :data:`MAX_RETRY_WAIT_MS` is not waited for: the error is raised at once with its
    ``retry_after_ms``.  Once retries are used up the last error is raised, still
    ``retryable=True``.  Failures after the first event are raised as they are: a broken or
    cut stream is ``model.request_failed`` and retryable (a new request may succeed), a
    malformed one ``model.bad_response`` and not.

Malformed data
    An event whose ``data`` is not JSON raises ``model.bad_response`` (the message quotes its
    start).  Keep-alives are SSE comments (``: ping``) and events without data, which the
    parser already drops, so there is no "bad keep-alive" to tolerate: anything else that is
    not JSON means the stream cannot be trusted.

Models endpoint
    :meth:`HttpStreamProvider.model_limits` asks the provider's models endpoint for a model's
    window and output limit (:mod:`.model_info` says which endpoint and which fields): one
    ``GET`` through the same client, with the provider's auth headers, a deadline of its own
    (3 s by default) over the whole exchange, no retry, at most 8 MiB read.  Any failure (a
    status, a timeout, a connection error, a body that is not JSON or lacks the fields) is
    logged at info and answered ``None``: a run never waits on it for more than the deadline
    and never fails because of it.

Clients and cancellation
    With no ``client`` given, each :meth:`stream` call opens its own ``httpx.AsyncClient`` and
    closes it when the call ends; a given client is shared and left open (its owner closes
    it).  ``timeout_s`` applies per request either way (connect, write, pool, and the longest
    silence between two reads).  The response is closed before :class:`Completed` is yielded,
    and on every other way out, cancellation included (an unfinished HTTP/1.1 response is
    never returned to the pool, so the connection is closed).  A consumer that stops early
    without cancelling should close the generator (``contextlib.aclosing``).
"""

from __future__ import annotations

import json
import logging
import math
import time
from contextlib import aclosing, asynccontextmanager
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from sidecar.context.live_limits import LiveLimits
from sidecar.runs.providers.base import Completed, ProviderError, ProviderEvent
from sidecar.runs.providers.sse import SSEError, aiter_sse

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator

    from sidecar.runs.providers.sse import ServerSentEvent

__all__ = [
    "HttpStreamProvider",
    "MODELS_TIMEOUT_S",
    "RETRYABLE_STATUSES",
    "MAX_RETRY_WAIT_MS",
    "parse_event_json",
    "parse_arguments",
    "stream_cut",
    "stream_error",
]

logger = logging.getLogger(__name__)

#: Statuses worth another try (529: Anthropic is overloaded).
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
#: The longest server-requested wait honoured before retrying (ms).
MAX_RETRY_WAIT_MS = 60_000
#: Longest provider message quoted in an error.
_MAX_DETAIL = 500
#: Most of an error body read.
_MAX_ERROR_BODY = 64 * 1024
#: Most of a models endpoint's answer read (OpenRouter lists hundreds of models).
_MAX_MODELS_BODY = 8 * 1024 * 1024
#: How long a models endpoint is waited for, the whole exchange (seconds).
MODELS_TIMEOUT_S = 3.0
_REDACTED = "[redacted]"


class HttpStreamProvider:
    """Base of the SSE providers; subclasses set ``name`` and ``target`` and implement the
    hooks."""

    name: str = "http"
    target: str | None = None
    """The lowering whose body this provider sends (``sidecar.context.lower``)."""
    default_base_url: str = ""
    """The provider's own API, when the binding names no ``baseUrl``."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
        max_retries: int = 2,
        backoff_ms: int = 500,
        timeout_s: float = 60,
    ) -> None:
        if max_retries < 0 or backoff_ms < 0 or timeout_s <= 0:
            raise ValueError("max_retries and backoff_ms must be >= 0, timeout_s > 0")
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        # For messages: without any user:password@ the URL may carry.
        self._shown_url = str(httpx.URL(self.base_url).copy_with(userinfo=b""))
        self._api_key = api_key or None
        self._client = client
        self.max_retries = max_retries
        self.backoff_ms = backoff_ms
        self._timeout = httpx.Timeout(timeout_s)

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(base_url={self._shown_url!r})"

    # -- hooks ---------------------------------------------------------------------------

    def _url(self) -> str:
        raise NotImplementedError

    def _headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _payload(self, body: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _decode(
        self, events: AsyncIterator[ServerSentEvent]
    ) -> AsyncGenerator[ProviderEvent, None]:
        """Provider events from SSE events; must end with ``Completed`` or raise."""
        raise NotImplementedError

    def _refine_error(self, error: ProviderError, data: Any) -> ProviderError:
        """``error`` (from an error status or a JSON body) adjusted with what the provider's
        JSON error body ``data`` says beyond its type and message; as it is by default."""
        return error

    def _error_detail(self, data: Any) -> tuple[str | None, str | None]:
        """``(error type, message)`` from a JSON error body, either possibly unknown."""
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict):
            kind = error.get("type") or error.get("code")
            message = error.get("message")
            return (
                str(kind) if kind is not None else None,
                str(message) if message is not None else None,
            )
        if isinstance(error, str):
            return None, error
        return None, None

    def _models_url(self, model: str) -> str | None:
        """The ``GET`` that reports ``model``'s limits; ``None`` when this provider has none
        (the default)."""
        return None

    def _read_limits(self, data: Any, model: str) -> tuple[int | None, int | None]:
        """(window, output limit) of ``model`` from the models endpoint's JSON answer."""
        return None, None

    # -- the models endpoint -------------------------------------------------------------

    async def model_limits(self, model: str, timeout_s: float | None = None) -> LiveLimits | None:
        """``model``'s limits as the models endpoint reports them, or ``None`` (see the
        module docstring); ``timeout_s`` defaults to :data:`MODELS_TIMEOUT_S`."""
        url = self._models_url(model)
        if url is None:
            return None
        timeout_s = timeout_s or MODELS_TIMEOUT_S
        endpoint = f"GET {httpx.URL(url).copy_with(userinfo=b'')}"
        headers = {**self._headers(), "accept": "application/json"}
        try:
            with anyio.fail_after(timeout_s):
                async with (
                    self._session() as client,
                    client.stream(
                        "GET", url, headers=headers, timeout=httpx.Timeout(timeout_s)
                    ) as response,
                ):
                    if response.status_code != 200:
                        logger.info("%s: %s answered %d", self.name, endpoint, response.status_code)
                        return None
                    raw = await _read_capped(response, _MAX_MODELS_BODY + 1)
            if len(raw) > _MAX_MODELS_BODY:
                logger.info("%s: %s answered more than %d bytes", self.name, endpoint, len(raw))
                return None
            window, output = self._read_limits(json.loads(raw), model)
        except (httpx.HTTPError, TimeoutError, ValueError) as exc:
            logger.info("%s: %s failed (%s)", self.name, endpoint, type(exc).__name__)
            return None
        if window is None:
            logger.info("%s: %s reports no window for %s", self.name, endpoint, model)
            return None
        return LiveLimits(window=window, output_limit=output, endpoint=endpoint)

    # -- the call ------------------------------------------------------------------------

    async def stream(self, body: dict[str, Any]) -> AsyncGenerator[ProviderEvent, None]:
        """The model's answer to ``body`` (see the module docstring)."""
        payload = self._payload(body)
        url = self._url()
        headers = self._headers()
        async with self._session() as client:
            attempt = 0
            while True:
                yielded = False
                completed: Completed | None = None
                cause: BaseException | None = None
                try:
                    async with client.stream(
                        "POST", url, json=payload, headers=headers, timeout=self._timeout
                    ) as response:
                        await self._check_response(response)
                        sse = aiter_sse(response.aiter_bytes())
                        async with aclosing(sse), aclosing(self._decode(sse)) as events:
                            async for event in events:
                                if isinstance(event, Completed):
                                    completed = event
                                    break
                                yielded = True
                                yield event
                    if completed is None:  # a _decode that forgot its terminator check
                        raise stream_cut(self.name, "the end of the answer")
                except ProviderError as exc:
                    error = exc
                except (httpx.HTTPError, SSEError) as exc:
                    error = self._transport_error(exc)
                    cause = exc
                else:
                    yield completed
                    return
                error = self._redacted(error)
                delay_ms = self._retry_delay_ms(error, attempt)
                if yielded or delay_ms is None:
                    if attempt:
                        error.message = f"{error.message} (after {attempt + 1} attempts)"
                        error.args = (error.message,)
                    raise error from cause
                attempt += 1
                logger.warning(
                    "%s: %s (%s); retry %d of %d in %d ms",
                    self.name,
                    error.code,
                    error.message,
                    attempt,
                    self.max_retries,
                    delay_ms,
                )
                await anyio.sleep(delay_ms / 1000)

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._client is not None:
            yield self._client
            return
        async with httpx.AsyncClient(timeout=self._timeout) as client:
            yield client

    def _retry_delay_ms(self, error: ProviderError, attempt: int) -> int | None:
        """How long to wait before the next attempt, or ``None`` to give up."""
        if not error.retryable or attempt >= self.max_retries:
            return None
        if error.retry_after_ms is not None:
            if error.retry_after_ms > MAX_RETRY_WAIT_MS:
                return None
            return error.retry_after_ms
        return int(self.backoff_ms * 2**attempt)

    async def _check_response(self, response: httpx.Response) -> None:
        """Raise for an error status, or a 200 that carries JSON instead of events."""
        status = response.status_code
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if 200 <= status < 300 and content_type != "application/json":
            return
        raw = await _read_capped(response)
        try:
            data: Any = json.loads(raw)
        except ValueError:
            data = None
        kind, message = self._error_detail(data)
        if message is None:
            message = raw.decode("utf-8", errors="replace").strip() or response.reason_phrase
        retry_after = _retry_after_ms(response.headers)
        if 200 <= status < 300:
            if not (isinstance(data, dict) and data.get("error")):
                raise ProviderError(
                    "model.bad_response",
                    f"{self.name}: expected an event stream, got a JSON body",
                    status=status,
                )
            error = ProviderError(
                _code_for_kind(kind),
                f"{self.name}: {_shorten(message)}",
                retryable=_retryable_kind(kind),
                status=status,
                retry_after_ms=retry_after,
            )
        else:
            error = _status_error(self.name, status, kind, message, retry_after)
        raise self._refine_error(error, data)

    def _transport_error(self, exc: httpx.HTTPError | SSEError) -> ProviderError:
        if isinstance(exc, SSEError):
            return ProviderError("model.bad_response", f"{self.name}: {exc}")
        if isinstance(exc, httpx.TimeoutException):
            return ProviderError(
                "model.request_failed",
                f"{self.name}: timed out ({type(exc).__name__}) talking to {self._shown_url}",
                retryable=True,
            )
        if isinstance(exc, httpx.TransportError):
            return ProviderError(
                "model.request_failed",
                f"{self.name}: connection to {self._shown_url} failed "
                f"({type(exc).__name__}: {exc})",
                retryable=True,
            )
        return ProviderError(
            "model.request_failed", f"{self.name}: {type(exc).__name__}: {exc}", retryable=False
        )

    def _redacted(self, error: ProviderError) -> ProviderError:
        """``error`` with the API key, should anything echo it, blanked out."""
        key = self._api_key
        if key and key in error.message:
            error.message = error.message.replace(key, _REDACTED)
            error.args = (error.message,)
        return error


def _status_error(
    name: str, status: int, kind: str | None, message: str, retry_after_ms: int | None
) -> ProviderError:
    detail = f"{name}: HTTP {status}: {_shorten(message)}"
    if status in (401, 403):
        return ProviderError("model.auth_failed", f"{detail} (check the API key)", status=status)
    if status == 429:
        code = "model.rate_limited"
    elif status in (503, 529) or kind == "overloaded_error":
        code = "model.overloaded"
    else:
        code = "model.request_failed"
    return ProviderError(
        code,
        detail,
        retryable=status in RETRYABLE_STATUSES,
        status=status,
        retry_after_ms=retry_after_ms,
    )


def _code_for_kind(kind: str | None) -> str:
    """The error code for an error ``type`` (or ``code``) named inside a body or a stream."""
    kind = (kind or "").lower()
    if kind in ("authentication_error", "permission_error", "invalid_api_key"):
        return "model.auth_failed"
    if "rate_limit" in kind:
        return "model.rate_limited"
    if "overloaded" in kind:
        return "model.overloaded"
    return "model.request_failed"


def _retryable_kind(kind: str | None) -> bool:
    kind = (kind or "").lower()
    return "rate_limit" in kind or "overloaded" in kind or kind in ("api_error", "server_error")


def stream_error(name: str, kind: str | None, message: str | None) -> ProviderError:
    """An error the provider reported inside the stream."""
    return ProviderError(
        _code_for_kind(kind),
        f"{name}: error in stream ({kind or 'unknown'}): {_shorten(message or 'no message')}",
        retryable=_retryable_kind(kind),
    )


def stream_cut(name: str, terminator: str) -> ProviderError:
    """The stream ended (cleanly, at the HTTP level) before ``terminator``."""
    return ProviderError(
        "model.request_failed",
        f"{name}: the stream ended before {terminator}; the answer is incomplete",
        retryable=True,
    )


def parse_event_json(name: str, event: ServerSentEvent) -> Any:
    """``event.data`` as JSON, or ``model.bad_response`` naming the offending data."""
    try:
        return json.loads(event.data)
    except ValueError:
        raise ProviderError(
            "model.bad_response",
            f"{name}: malformed event data (not JSON): {_shorten(event.data, 80)!r}",
        ) from None


def parse_arguments(name: str, call_id: str, tool: str, text: str) -> dict[str, Any]:
    """Tool-call arguments from their JSON text; ``{"_raw": text}`` when that is not an
    object (logged).  Empty text is no arguments."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        logger.warning(
            "%s: tool call %s (%s) has malformed JSON arguments (%s); passing them raw",
            name,
            call_id,
            tool,
            exc,
        )
        return {"_raw": text}
    if not isinstance(value, dict):
        logger.warning(
            "%s: tool call %s (%s) arguments are a JSON %s, not an object; passing them raw",
            name,
            call_id,
            tool,
            type(value).__name__,
        )
        return {"_raw": text}
    return value


async def _read_capped(response: httpx.Response, limit: int = _MAX_ERROR_BODY) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= limit:
            break
    return bytes(body[:limit])


def _retry_after_ms(headers: httpx.Headers) -> int | None:
    """``retry-after-ms`` (ms), else ``retry-after`` (seconds or an HTTP date), else None."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return math.ceil(value)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return max(0, math.ceil(seconds * 1000))


def _shorten(text: str, limit: int = _MAX_DETAIL) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
