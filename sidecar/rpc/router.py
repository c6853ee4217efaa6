"""Turn a domain handler into a pygls feature: validate at the edge, map every error.

A handler is ``async def handler(state, params: <params model>) -> <result model | JSON>``.
The wrapper checks the lifecycle, validates the raw params against the method's model
(camelCase only, unknown fields rejected), runs the handler, and turns whatever it raises
into a JSON-RPC error with ``data.code``.  Cancellation (``$/cancelRequest``) propagates as
``CancelledError`` and pygls answers -32800.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from protocol._base import WireModel, parse_wire
from protocol.methods import MethodSpec
from sidecar.errors import SidecarError
from sidecar.rpc import errors
from sidecar.rpc.converter import to_json
from sidecar.rpc.state import SidecarState

__all__ = ["Route", "route", "wrap"]

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


def wrap(state: SidecarState, route: Route) -> Callable[[Any], Awaitable[Any]]:
    spec, handler = route.spec, route.handler

    async def feature(params: Any) -> Any:
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
        except Exception as exc:
            if errors.is_rpc_error(exc):
                raise
            raise errors.from_unexpected(exc, spec.name) from None

    feature.__name__ = f"rpc_{spec.name.replace('/', '_')}"
    return feature
