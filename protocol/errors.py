"""Error shapes of the protocol.

Protocol faults use the JSON-RPC codes (-32700 parse, -32600 invalid request, -32601 unknown
method, -32602 invalid params, -32603 internal, -32800 cancelled, -32002 not initialized).
Every domain error uses the single server-error code :data:`DOMAIN_ERROR` and says what went
wrong in ``data.code``, a dotted string from :class:`ErrorCode`.  Every error the sidecar
sends, protocol fault or domain error, carries an :class:`ErrorData` in ``data``, so a client
can always switch on ``error.data.code``.

The codes themselves live in :mod:`protocol.error_codes` (importable without pydantic) and
are re-exported here.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from protocol._base import WireModel
from protocol.error_codes import (
    DOMAIN_ERROR,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    SERVER_NOT_INITIALIZED,
    ErrorCode,
)

__all__ = [
    "DOMAIN_ERROR",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "SERVER_NOT_INITIALIZED",
    "ErrorCode",
    "ErrorData",
    "ParamError",
]


class ParamError(WireModel):
    """One reason a params object was rejected."""

    loc: str
    """Dotted path of the offending field, in wire (camelCase) names, e.g. ``entries.0.role``."""
    msg: str
    type: str
    """pydantic's error type, e.g. ``missing``, ``extra_forbidden``, ``int_type``."""


class ErrorData(WireModel):
    """The ``data`` member of every error response the sidecar sends."""

    code: str
    """Dotted machine-readable code, e.g. ``session.not_found``."""
    retryable: bool = False
    """True when the same request may succeed if sent again later, unchanged."""
    retry_after_ms: int | None = Field(default=None, ge=0)
    """A hint for retryable errors such as ``server.overloaded`` or ``store.locked``."""
    errors: list[ParamError] | None = None
    """For ``params.invalid``: every problem found, not just the first."""
    details: dict[str, Any] | None = None
    """Code-specific facts (the session id that was not found, the expected head seq, ...)."""
