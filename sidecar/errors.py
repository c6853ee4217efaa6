"""Domain errors raised by the core (store, context, inputs, runs).

Each carries a dotted ``code`` from :class:`protocol.errors.ErrorCode`; the RPC edge turns it
into a JSON-RPC error with ``data = ErrorData`` (see ``sidecar.methods.errors``).  The core never
builds JSON-RPC errors itself and never imports pygls.

    SidecarError
    ├── NotFoundError        something named by the request does not exist
    ├── ConflictError        the request raced another writer (``store.conflict``)
    ├── BusyError            the target is in use (``session.busy``, ``session.held``,
    │                        ``store.locked``); retryable
    ├── InvalidRequestError  well-formed params that make no sense together
    └── StoreCorruptError    on-disk data failed a check (``store.corrupt``)
"""

from __future__ import annotations

from typing import Any

from protocol.error_codes import ErrorCode

__all__ = [
    "BusyError",
    "ConflictError",
    "InvalidRequestError",
    "NotFoundError",
    "SidecarError",
    "StoreCorruptError",
    "StoreIOError",
]


class SidecarError(Exception):
    """Base of every error the core raises on purpose."""

    retryable = False

    def __init__(
        self,
        code: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        retry_after_ms: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details
        self.retry_after_ms = retry_after_ms


class NotFoundError(SidecarError):
    """Raised when a session, entry, blob or input named by a request does not exist."""


class ConflictError(SidecarError):
    """Raised when an optimistic check fails (``expectedHeadSeq`` differs from the head)."""

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(ErrorCode.STORE_CONFLICT, message, details=details)


class BusyError(SidecarError):
    """Raised when the target is in use by someone else; the same request may succeed later."""

    retryable = True


class InvalidRequestError(SidecarError):
    """Raised for params that validate individually but are inconsistent with the state
    (a seq past the head, a relative workspace root, ...)."""


class StoreCorruptError(SidecarError):
    """Raised when a store file fails a consistency check that repair cannot fix."""

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(ErrorCode.STORE_CORRUPT, message, details=details)


class StoreIOError(SidecarError):
    """Raised when the disk refuses a write; nothing was acknowledged."""

    retryable = True

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(ErrorCode.STORE_IO, message, details=details)
