"""Turn a domain handler into a method any face calls: validate at the edge, map every error.

A handler is ``async def handler(state, params: <params model>) -> <result model | JSON>``.
:func:`bind` checks the lifecycle, validates the raw params against the method's model
(camelCase only, unknown fields rejected), runs the handler, shapes the result as wire JSON
and turns whatever it raises into a :class:`~sidecar.methods.errors.MethodError` with
``data.code``.  Cancellation (``$/cancelRequest`` on ``serve``, ``session/cancel`` on ACP)
propagates as ``CancelledError``; the face answers it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from protocol._base import WireModel, dump_wire, parse_wire
from protocol.methods import MethodSpec
from sidecar.errors import SidecarError
from sidecar.methods import errors
from sidecar.methods.state import SidecarState

__all__ = ["Method", "Route", "bind", "route", "to_json"]

Method = Callable[[Any], Awaitable[Any]]
"""A bound method: raw JSON params in, wire JSON out (or a ``MethodError``)."""

P = TypeVar("P", bound=WireModel)
R = TypeVar("R", bound=WireModel)


@dataclass(frozen=True, slots=True)
class Route:
    spec: MethodSpec[Any, Any]
    handler: Callable[[SidecarState, Any], Awaitable[Any]]


def route(
    spec: MethodSpec[P, R],
    handler: Callable[[SidecarState, P], Awaitable[R | dict[str, Any]]],
) -> Route:
    """Pair a method with its handler; the type checker holds the handler to the spec's params
    and result (a handler may return already-JSON data of the result's shape on hot paths)."""
    return Route(spec, handler)


def to_json(value: Any) -> Any:
    """Wire JSON of a handler's result or a notification's params."""
    return dump_wire(value) if isinstance(value, BaseModel) else value


def bind(state: SidecarState, route: Route) -> Method:
    """``route`` as a method of ``state``'s sidecar."""
    spec, handler = route.spec, route.handler

    async def method(params: Any) -> Any:
        if not state.initialized:
            raise errors.not_initialized(spec.name)
        try:
            model = parse_wire(spec.params, params)
        except ValidationError as exc:
            raise errors.from_validation(exc, spec.name) from None
        try:
            return to_json(await handler(state, model))
        except SidecarError as exc:
            raise errors.from_domain(exc) from None
        except asyncio.CancelledError:
            raise
        except errors.MethodError:
            raise
        except Exception as exc:
            raise errors.from_unexpected(exc, spec.name) from None

    method.__name__ = f"rpc_{spec.name.replace('/', '_')}"
    return method
