"""The errors an ACP client gets: which JSON-RPC code, and the same ``data`` as ``serve``'s.

ACP reserves ``-32000`` for ``auth_required`` (and ``-32002`` for a resource not found):
Zed's client turns a ``-32000`` answer to ``session/prompt`` into "Authentication required"
and drops the message.  So the ACP face never sends the ``serve`` face's domain code
``-32000``: bad params are ``-32602``, anything not found ``-32002``, and every other failure
(a model or provider error, a busy session, a tool that could not run) ``-32603``, the
generic error the SDKs and editors show with its message.  ``data.code`` still carries the
dotted code, so a client that looks deeper loses nothing.

The errors themselves are the method table's (:mod:`sidecar.methods.errors`): a core error, an
unexpected one (logged with an ``errorId``, answered with that id only) or a routed method's
error become the SDK's :class:`acp.RequestError` here, the one place the face maps them.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar, cast

from acp import RequestError

from protocol.errors import DOMAIN_ERROR, INTERNAL_ERROR, INVALID_PARAMS, ErrorCode
from sidecar.errors import SidecarError
from sidecar.methods import errors

__all__ = [
    "AUTH_REQUIRED",
    "RESOURCE_NOT_FOUND",
    "InFlight",
    "acp_code",
    "answers",
    "request_error",
]

AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002


def acp_code(domain_code: object) -> int:
    """The JSON-RPC code for a sidecar error whose dotted code is ``domain_code``."""
    if domain_code == ErrorCode.PARAMS_INVALID:
        return INVALID_PARAMS
    if isinstance(domain_code, str) and domain_code.endswith(".not_found"):
        return RESOURCE_NOT_FOUND
    return INTERNAL_ERROR


def request_error(exc: errors.MethodError) -> RequestError:
    """The method table's error as the SDK's (``-32000`` never: see above)."""
    code, message, data = exc.code, exc.message, exc.data
    if code == DOMAIN_ERROR:
        code = acp_code(data.get("code"))
    return RequestError(code, message, data)


class InFlight:
    """How many handlers are answering; ``idle`` is set when none is."""

    def __init__(self) -> None:
        self.count = 0
        self.idle = asyncio.Event()
        self.idle.set()


class _Answering(Protocol):
    in_flight: InFlight


Handler = TypeVar("Handler", bound=Callable[..., Coroutine[Any, Any, Any]])


def answers(fn: Handler) -> Handler:
    """Map what an agent method raises to the JSON-RPC error ACP clients get, and count the
    methods in flight (the agent's ``in_flight``: stdin closed waits for them)."""

    @functools.wraps(fn)
    async def wrapper(agent: _Answering, *args: Any, **kwargs: Any) -> Any:
        in_flight = agent.in_flight
        in_flight.count += 1
        in_flight.idle.clear()
        try:
            return await fn(agent, *args, **kwargs)
        except RequestError:
            raise
        except SidecarError as exc:
            raise request_error(errors.from_domain(exc)) from None
        except Exception as exc:
            raise request_error(errors.from_unexpected(exc, fn.__name__)) from None
        finally:
            in_flight.count -= 1
            if in_flight.count == 0:
                in_flight.idle.set()

    return cast("Handler", wrapper)
