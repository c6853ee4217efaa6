"""``serve``'s JSON-RPC protocol as ACP extension methods: ``_context-sidecar/<method>``.

An editor plugin that wants the dashboard data itself (``context/assemble``,
``snapshot/diff``, ``session/read``, ...) calls ``_context-sidecar/context/assemble`` with the
same params as on ``serve`` and gets the same result.  The call goes through the method table
both faces stand on (:func:`sidecar.methods.route.bind`: the same validation, handler, result
and error mapping) over a :class:`~sidecar.methods.state.SidecarState` that shares this
process's store, context service and run manager; the JSON-RPC error ``serve`` would answer
becomes the same error here (``code``, ``message``, ``data`` with its dotted ``data.code``).

Not over ACP: ``initialize`` and the rest of ``serve``'s lifecycle (ACP has its own).  A run
started with ``_context-sidecar/run/start`` sends its events as ``_context-sidecar/run/event``
notifications (``serve``'s ``run/event`` params, in order).  Its tools are the face's (the
editor tools, the session's MCP servers): each call goes through the session's approval mode
(:mod:`sidecar.acp.bridge`: a call the run did not name in ``approvalRequired`` is decided
before it executes), so a session in ``read_only`` stays read-only; any other tool is a host
tool of ``serve``, which has no ACP counterpart, and gets an error result.
``session/prompt`` is the way to run a turn here.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from sidecar.acp.errors import request_error
from sidecar.jsonbytes import RawJSON
from sidecar.methods import errors

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from sidecar.methods.state import SidecarState

__all__ = ["EXTENSION_PREFIX", "ServeMethods"]

logger = logging.getLogger(__name__)

#: ACP extension methods are ``_<name>``; the SDK hands us ``<name>`` without the underscore.
EXTENSION_PREFIX = "context-sidecar/"


class ServeMethods:
    """The method table's routes, called by method name with raw JSON params."""

    def __init__(self, state: SidecarState) -> None:
        from sidecar.methods.route import bind
        from sidecar.methods.table import ROUTES

        state.initialized = True  # ACP's initialize is the lifecycle; the routes check theirs
        self.state = state
        self._features: dict[str, Callable[[Any], Awaitable[Any]]] = {
            r.spec.name: bind(state, r) for r in ROUTES
        }

    def methods(self) -> list[str]:
        return sorted(self._features)

    async def extension(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        """An ACP extension request (``name`` without its leading underscore)."""
        if not name.startswith(EXTENSION_PREFIX):
            raise request_error(errors.method_not_found(f"_{name}"))
        return await self.call(name.removeprefix(EXTENSION_PREFIX), params)

    async def call(self, method: str, params: Any) -> dict[str, Any]:
        """``method`` as ``serve`` answers it (wire JSON), or the same error as a
        :class:`acp.RequestError`."""
        feature = self._features.get(method)
        if feature is None:
            raise request_error(errors.method_not_found(method))
        try:
            result = await feature(params)
        except errors.MethodError as exc:
            raise request_error(exc) from None
        return _plain(result) if isinstance(result, dict) else {"result": _plain(result)}


def _plain(value: Any) -> Any:
    """``value`` with the pre-serialised parts (:class:`RawJSON`, spliced by ``serve``'s
    writer) parsed back: the SDK's connection serialises results itself."""
    if isinstance(value, RawJSON):
        return json.loads(value.data)
    if isinstance(value, dict):
        if not any(isinstance(v, RawJSON | dict | list) for v in value.values()):
            return value
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
