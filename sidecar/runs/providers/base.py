"""What every model provider yields, the error it raises, and how API keys are found.

Events
    A provider's :meth:`Provider.stream` is an async generator of :data:`ProviderEvent`, in
    this order: any number of :class:`TextDelta`, :class:`ReasoningDelta`,
    :class:`ReasoningItem` and :class:`ToolCall` (a tool call is yielded once, when its
    arguments are complete), then at most one :class:`Usage`, then exactly one
    :class:`Completed`, which is always last.  A stream that cannot reach :class:`Completed`
    raises :class:`ProviderError` instead; it never just stops.

Reasoning
    :class:`ReasoningDelta` is reasoning text to show as it comes.  A provider whose reasoning
    must be sent back (Anthropic's signed and redacted thinking blocks, OpenAI's encrypted
    reasoning items) also yields one :class:`ReasoningItem` per block when the block is
    complete, in stream order among the text and the calls: it is what history keeps, and it
    replaces the deltas of that block.  Reasoning deltas that no item closes (Chat Completions
    servers, Gemini thought summaries) are kept as plain, unsigned reasoning.

Usage
    ``input_tokens`` is the whole prompt the model read, cached or not (OpenAI's
    ``prompt_tokens``; Anthropic's ``input_tokens + cache_read_input_tokens +
    cache_creation_input_tokens``), so it compares across providers and measures the context.
    ``cache_read_tokens`` and ``cache_write_tokens`` are the parts of it read from and written
    to the provider's prompt cache.

Errors
    :class:`ProviderError` carries a dotted ``code`` (``model.request_failed``,
    ``model.rate_limited``, ``model.overloaded``, ``model.bad_response``,
    ``model.auth_failed``), a message safe to show and log (it never holds an API key), and
    ``retryable``: whether sending the same request again later may succeed.  Providers retry
    by themselves only before their first event; after that the caller decides.

Secrets
    :func:`resolve_secret` turns a connection reference into a key: ``env:NAME`` reads the
    environment variable, ``secret:NAME`` the file ``NAME`` in ``$CONTEXT_SIDECAR_SECRETS_DIR``
    (default ``$XDG_CONFIG_HOME/context-sidecar/secrets``, ``~/.config`` when unset), stripped
    of surrounding whitespace.  Names are plain file names (letters, digits, ``.``, ``_``,
    ``-``; no leading dot), so a reference cannot point outside the directory.  A value is
    never logged; a failure names the reference and never the value.  A secret file readable
    by group or others is used, with a warning.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Mapping

__all__ = [
    "TextDelta",
    "ReasoningDelta",
    "ReasoningItem",
    "ToolCall",
    "Usage",
    "Completed",
    "ProviderEvent",
    "ProviderError",
    "SecretError",
    "Provider",
    "resolve_secret",
    "SECRETS_DIR_ENV",
]

logger = logging.getLogger(__name__)

#: Environment variable naming the directory ``secret:NAME`` references are read from.
SECRETS_DIR_ENV = "CONTEXT_SIDECAR_SECRETS_DIR"

_SECRET_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the answer's text."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning, to show."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningItem:
    """A complete reasoning block to keep in history and send back verbatim: the fields of a
    ``ReasoningPart`` (``protocol.entries``); ``provider`` names whose API takes it back."""

    provider: str
    text: str
    signature: str | None = None
    item_id: str | None = None
    data: str | None = None
    summary: tuple[str, ...] | None = None
    redacted: bool = False

    def part(self) -> dict[str, Any]:
        """The ``ReasoningPart`` as JSON (camelCase), only the fields that are set."""
        part: dict[str, Any] = {"type": "reasoning", "text": self.text}
        if self.signature is not None:
            part["signature"] = self.signature
        part["provider"] = self.provider
        if self.item_id is not None:
            part["id"] = self.item_id
        if self.data is not None:
            part["data"] = self.data
        if self.summary is not None:
            part["summary"] = list(self.summary)
        if self.redacted:
            part["redacted"] = True
        return part


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete tool call.  Arguments that are not a JSON object arrive as
    ``{"_raw": "<the text>"}`` (and a warning is logged).  ``signature`` is an opaque token
    the provider attached to the call (Gemini's ``thoughtSignature``), to be sent back with it;
    ``None`` for the others."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one model call (see the module docstring for what they include)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    """The part of ``output_tokens`` spent reasoning, when the provider says (OpenAI)."""


@dataclass(frozen=True, slots=True)
class Completed:
    """The model stopped: ``end_turn``, ``tool_use``, ``max_tokens`` or the provider's own
    reason (``stop_sequence``, ``refusal``, ``content_filter``, ...)."""

    stop_reason: str


ProviderEvent = TextDelta | ReasoningDelta | ReasoningItem | ToolCall | Usage | Completed


class ProviderError(Exception):
    """A model call failed; ``code`` is dotted, ``message`` is safe to show and log."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        retry_after_ms: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable
        self.status = status
        self.retry_after_ms = retry_after_ms

    def __repr__(self) -> str:
        return (
            f"ProviderError(code={self.code!r}, message={self.message!r}, "
            f"retryable={self.retryable}, status={self.status})"
        )


class SecretError(ProviderError):
    """A connection reference could not be turned into a key (``model.auth_failed``)."""

    def __init__(self, message: str) -> None:
        super().__init__("model.auth_failed", message, retryable=False)


class Provider(Protocol):
    """A model endpoint.  ``stream`` is an async generator; the caller cancels it by
    cancelling its task (or closes it with ``aclose``), which closes the HTTP stream."""

    name: str

    def stream(self, body: dict[str, Any]) -> AsyncGenerator[ProviderEvent, None]: ...


def resolve_secret(connection_ref: str | None, env: Mapping[str, str] = os.environ) -> str | None:
    """The key ``connection_ref`` names (see the module docstring); ``None`` for ``None``.

    Raises :class:`SecretError` for a malformed reference, a missing or empty variable or
    file, or an unreadable file.
    """
    if connection_ref is None:
        return None
    scheme, sep, name = connection_ref.partition(":")
    if not sep or scheme not in ("env", "secret"):
        raise SecretError(
            f"connection reference {connection_ref!r} must be 'env:NAME' or 'secret:NAME'"
        )
    if scheme == "env":
        if not _ENV_NAME.match(name):
            raise SecretError(f"connection reference {connection_ref!r}: bad variable name")
        value = env.get(name)
        if value is None:
            raise SecretError(
                f"connection reference {connection_ref!r}: environment variable {name} is not set"
            )
    else:
        if not _SECRET_NAME.match(name):
            raise SecretError(
                f"connection reference {connection_ref!r}: a secret name is a plain file name"
            )
        path = _secrets_dir(env) / name
        try:
            mode = path.stat().st_mode
            value = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SecretError(
                f"connection reference {connection_ref!r}: no secret file at {path}"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            # The exception text holds the path and errno only, never file contents.
            raise SecretError(
                f"connection reference {connection_ref!r}: cannot read {path} "
                f"({type(exc).__name__})"
            ) from None
        if stat.S_IMODE(mode) & 0o077:
            logger.warning(
                "secret file %s is readable by group or others (mode %o); chmod 600 it",
                path,
                stat.S_IMODE(mode),
            )
    value = value.strip()
    if not value:
        raise SecretError(f"connection reference {connection_ref!r} resolves to an empty value")
    return value


def _secrets_dir(env: Mapping[str, str]) -> Path:
    explicit = env.get(SECRETS_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    config = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config).expanduser() / "context-sidecar" / "secrets"
