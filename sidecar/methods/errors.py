"""Map everything a handler can raise to a JSON-RPC error with ``data = ErrorData``.

No traceback ever reaches a client: an unexpected exception is logged with an ``errorId``
and answered as ``server.internal`` carrying only that id.

A :class:`MethodError` is the error as every face answers it (``code``, ``message``, ``data``
with its dotted ``data.code``): ``serve`` writes :meth:`MethodError.payload` as the response's
``error`` member, ACP raises the SDK's ``RequestError`` from it.  It is a plain exception, so
the table imports no face's library (pygls' own error type would pull in ``lsprotocol.types``
on the path of requests served while pygls still loads).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from protocol._base import dump_wire
from protocol.errors import (
    DOMAIN_ERROR,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    SERVER_NOT_INITIALIZED,
    ErrorCode,
    ErrorData,
    ParamError,
)
from sidecar.ids import new_id

if TYPE_CHECKING:
    from pydantic import ValidationError

    from sidecar.errors import SidecarError

__all__ = [
    "MethodError",
    "from_domain",
    "from_unexpected",
    "from_validation",
    "invalid_lsp_params",
    "invalid_request",
    "method_not_found",
    "not_initialized",
    "rpc_error",
]

logger = logging.getLogger(__name__)


class MethodError(Exception):
    """A JSON-RPC error, as any face answers it."""

    def __init__(self, code: int, message: str, data: dict[str, Any]) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        """``ErrorData`` as JSON: ``code`` (dotted), and ``errors`` / ``details`` / ..."""

    def payload(self) -> dict[str, Any]:
        """The ``error`` member of a response."""
        return {"code": self.code, "message": self.message, "data": self.data}


def rpc_error(code: int, message: str, data: ErrorData) -> MethodError:
    return MethodError(code, message, dump_wire(data))


def _loc(parts: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in parts)


def from_validation(exc: ValidationError, method: str) -> MethodError:
    errors = [
        ParamError(loc=_loc(e["loc"]), msg=e["msg"], type=e["type"])
        for e in exc.errors(include_url=False, include_input=False)
    ]
    first = errors[0]
    message = f"invalid params for {method}: {first.loc or '(params)'}: {first.msg}"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more)"
    return rpc_error(
        INVALID_PARAMS, message, ErrorData(code=ErrorCode.PARAMS_INVALID, errors=errors)
    )


def invalid_lsp_params(method: str, problems: list[str]) -> MethodError:
    """An LSP method's params that its ``lsprotocol`` type does not take; ``problems`` as
    cattrs words them: ``required field missing @ $.params.textDocument``."""
    errors = []
    for problem in problems:
        msg, _, path = problem.rpartition(" @ ")
        loc = path.removeprefix("$").removeprefix(".params").removeprefix(".")
        errors.append(ParamError(loc=loc, msg=msg or problem, type="lsp_params"))
    first = errors[0] if errors else ParamError(loc="", msg="invalid params", type="lsp_params")
    return rpc_error(
        INVALID_PARAMS,
        f"invalid params for {method}: {first.loc or '(params)'}: {first.msg}",
        ErrorData(code=ErrorCode.PARAMS_INVALID, errors=errors or [first]),
    )


def from_domain(exc: SidecarError) -> MethodError:
    code = INVALID_PARAMS if exc.code == ErrorCode.PARAMS_INVALID else DOMAIN_ERROR
    return rpc_error(
        code,
        exc.message,
        ErrorData(
            code=exc.code,
            retryable=exc.retryable,
            retry_after_ms=exc.retry_after_ms,
            details=exc.details,
        ),
    )


def from_unexpected(exc: BaseException, method: str) -> MethodError:
    error_id = new_id("err")
    logger.error("internal error %s in %s", error_id, method, exc_info=exc)
    return rpc_error(
        INTERNAL_ERROR,
        f"internal error in {method} (see the sidecar log, errorId {error_id})",
        ErrorData(code=ErrorCode.INTERNAL, details={"errorId": error_id}),
    )


def method_not_found(method: str) -> MethodError:
    return rpc_error(
        METHOD_NOT_FOUND,
        f"unknown method {method!r}",
        ErrorData(code=ErrorCode.METHOD_NOT_FOUND, details={"method": method}),
    )


def not_initialized(method: str) -> MethodError:
    return rpc_error(
        SERVER_NOT_INITIALIZED,
        f"{method} before initialize: send initialize first",
        ErrorData(code=ErrorCode.NOT_INITIALIZED),
    )


def invalid_request(message: str, code: str = ErrorCode.INVALID_REQUEST) -> MethodError:
    return rpc_error(INVALID_REQUEST, message, ErrorData(code=code))
