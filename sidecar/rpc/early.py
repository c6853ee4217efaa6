"""Serving requests while pygls loads.

``initialize`` is answered before the server is imported (:mod:`sidecar.rpc.handshake`), and
importing pygls takes several times longer than everything else start-up does
(``lsprotocol.types`` alone defines ~1,000 attrs classes).  A host's first requests
(``session/list``, ``session/create``, ``context/sources``, ...) need neither pygls nor the
connection, so until the pygls protocol is attached to the transport :class:`EarlyDispatch`
serves them, and keeps everything else for pygls:

- **served**: a request to a connection-free route (every family but ``run/*``, whose
  handlers talk to the host), once ``initialize`` was answered early.  A few plain reads are
  answered from plain JSON before the wire models have loaded (:mod:`sidecar.methods.light`);
  the rest through the very same routes as under pygls — :func:`sidecar.methods.route.wrap`:
  the same lifecycle check, validation, handler and error mapping — which load the wire
  models, the routes and the server's state (:meth:`EarlyDispatch.prepare`) on first need;
- **deferred**: a notification (``initialized``, ``$/setTrace``, ...), handed to pygls first
  when it is attached (one naming a connection-free route is run here, unanswered, its
  failure logged as pygls would); a ``$/cancelRequest`` of a request being served here cancels it
  (-32800, as pygls answers); ``exit`` ends the process at once, with code 1 (no
  ``shutdown`` can have been handled: it is held);
- **held**: anything else (``run/*``, ``shutdown``, unknown methods, responses, malformed
  frames) and every frame after the first held one, so that pygls sees them in the order they
  came.

Limits, on purpose: an error answer made here waits for pygls (the JSON-RPC errors are pygls'
``JsonRpcException``); a ``$/cancelRequest`` that arrives after the hand-over, for a request
served here, finds it no longer pending (LSP allows the full answer).

Light at import, like everything on the way to the first answer: no pydantic, no wire model.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import anyio

from protocol.error_codes import REQUEST_CANCELLED, ErrorCode
from sidecar.jsonbytes import dumps_bytes
from sidecar.methods.capabilities import schema_facts
from sidecar.methods.light import LIGHT_ROUTES, light_answer, plain_message

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine

    from protocol.framing import BadHeader, TooLarge
    from sidecar.methods.light import LightRoute, LightServer
    from sidecar.methods.state import SidecarState

__all__ = ["EarlyDispatch"]

logger = logging.getLogger(__name__)

MsgId = int | str


class EarlyDispatch:
    """The transport's receiver until the pygls protocol is attached (see the module doc)."""

    def __init__(self, server: LightServer | None, state: Callable[[], SidecarState]) -> None:
        """``server``: serve, the light routes from it (``initialize`` was answered early);
        ``None``: hold everything for pygls.  ``state``: the server's state, for the full
        routes (built on first call: it loads the wire models)."""
        self._server = server
        self._state = state
        #: Every method of the protocol: a frame naming another one is no route's.
        self._methods = frozenset(schema_facts().methods if server is not None else ())
        self._features: dict[str, Callable[[Any], Awaitable[Any]]] | None = None
        self._deferred: list[bytes | TooLarge | BadHeader] = []
        self._held: list[bytes | TooLarge | BadHeader] = []
        self._serving: dict[MsgId, anyio.CancelScope] = {}
        self._idle = anyio.Event()
        self._idle.set()
        self._send: Callable[[bytes], None] | None = None
        self._spawn: Callable[[Callable[[], Coroutine[Any, Any, None]]], None] | None = None
        self._exit: Callable[[int], None] | None = None
        self.served = 0
        """Requests served here (for the log)."""

    def connect(
        self,
        send_answer: Callable[[bytes], None],
        spawn: Callable[[Callable[[], Coroutine[Any, Any, None]]], None],
        stop: Callable[[int], None],
    ) -> None:
        """Where answers go (at once: every frame sent here is one), where request tasks run,
        how the process ends (the transport's)."""
        self._send, self._spawn, self._exit = send_answer, spawn, stop

    def prepare(self) -> None:
        """Load the full routes now (on the event loop's thread): the wire models, the
        handlers and the server's state."""
        if self._server is None or self._features is not None:
            return
        from sidecar.methods.route import bind
        from sidecar.methods.table import CONNECTION_FREE_ROUTES

        state = self._state()
        self._features = {r.spec.name: bind(state, r) for r in CONNECTION_FREE_ROUTES}

    def holds_frames(self) -> bool:
        """Whether frames wait for pygls (notifications aside: they need no answer)."""
        return bool(self._held)

    async def wait_idle(self) -> None:
        """Return once no request is being served here."""
        while not self._idle.is_set():
            await self._idle.wait()

    def release(self) -> list[bytes | TooLarge | BadHeader]:
        """What pygls must handle, in order: the deferred notifications, then the held
        frames.  Requests being served here finish here."""
        out = [*self._deferred, *self._held]
        self._deferred.clear()
        self._held.clear()
        if self.served:
            logger.debug("served %d request(s) while the server loaded", self.served)
        return out

    # --- the transport's receiver --------------------------------------------------------

    def handle_frame_error(self, error: TooLarge | BadHeader) -> None:
        self._held.append(error)

    def handle_body(self, body: bytes) -> None:
        message = None if self._held or self._server is None else plain_message(body)
        if message is None:
            self._held.append(body)
            return
        method = message["method"]
        params = message.get("params")
        light = LIGHT_ROUTES.get(method)
        if "id" not in message:
            if method == "$/cancelRequest" and self._cancel(params):
                return
            if method == "exit" and self._exit is not None:
                logger.info("exit before the server had loaded, without shutdown")
                self._exit(1)
                return
            if light is not None and self._light(light, params) is not None:
                return  # a request method sent as a notification: run, unanswered
            notified = self._feature(method)
            if notified is not None:
                assert self._spawn is not None, "connect() before the first frame"
                self._spawn(lambda: _notified(notified, params))
                return
            self._deferred.append(body)
            return
        msg_id = message["id"]
        if (
            method not in self._methods
            or msg_id in self._serving
            or isinstance(msg_id, bool)
            or not isinstance(msg_id, int | str)
        ):
            self._held.append(body)
            return
        if light is not None:
            began = time.perf_counter()
            result = self._light(light, params)
            if result is not None:
                self.served += 1
                assert self._send is not None, "connect() before the first frame"
                self._send(dumps_bytes({"jsonrpc": "2.0", "id": msg_id, "result": result}))
                assert self._server is not None  # a light route answered from it
                self._server.latencies.since(method, began)
                return
        feature = self._feature(method)
        if feature is None:
            self._held.append(body)
            return
        assert self._spawn is not None, "connect() before the first frame"
        self._serving[msg_id] = anyio.CancelScope()
        if self._idle.is_set():
            self._idle = anyio.Event()
        self._state().latencies.started(msg_id, method)  # the state exists: a feature has it
        self._spawn(lambda: self._serve(msg_id, feature, params))

    def _feature(self, method: str) -> Callable[[Any], Awaitable[Any]] | None:
        """The full route of ``method``, if it has one served here (loaded on first need)."""
        if method not in self._methods:
            return None
        if self._features is None:
            self.prepare()
        assert self._features is not None
        return self._features.get(method)

    def _light(self, route: LightRoute, params: Any) -> dict[str, Any] | None:
        assert self._server is not None
        return light_answer(route, self._server, params)

    # --- serving -------------------------------------------------------------------------

    async def _serve(
        self, msg_id: MsgId, feature: Callable[[Any], Awaitable[Any]], params: Any
    ) -> None:
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id}
        with self._serving[msg_id] as scope:
            try:
                answer["result"] = await feature(params)
            except Exception as exc:  # the router made it a JSON-RPC error already
                answer["error"] = _error(exc)
            finally:
                del self._serving[msg_id]
                if not self._serving:
                    self._idle.set()
        if scope.cancelled_caught:
            from protocol.errors import ErrorData
            from sidecar.methods import errors

            answer.pop("result", None)
            answer["error"] = errors.rpc_error(
                REQUEST_CANCELLED,
                f"request {msg_id} was cancelled",
                ErrorData(code=ErrorCode.CANCELLED),
            ).payload()
        self.served += 1
        assert self._send is not None
        self._send(dumps_bytes(answer))
        self._state().latencies.answered(msg_id)

    def _cancel(self, params: Any) -> bool:
        msg_id = params.get("id") if isinstance(params, dict) else None
        scope = self._serving.get(msg_id) if isinstance(msg_id, int | str) else None
        if scope is None:
            return False
        scope.cancel()
        return True


async def _notified(feature: Callable[[Any], Awaitable[Any]], params: Any) -> None:
    """Run a route for a notification; a failure is logged, as pygls' would be
    (:meth:`sidecar.rpc.protocol.SidecarProtocol._check_handler_result`)."""
    from sidecar.methods import errors

    try:
        await feature(params)
    except errors.MethodError as exc:
        logger.warning("notification not handled: %s", exc.message)
    except Exception as exc:
        logger.error("a notification handler failed", exc_info=exc)


def _error(exc: Exception) -> dict[str, Any]:
    """The ``error`` member pygls would send for ``exc`` (a ``MethodError``)."""
    from sidecar.methods import errors

    if not isinstance(exc, errors.MethodError):  # bind() maps everything; a safety net
        exc = errors.from_unexpected(exc, "an early request")
    return exc.payload()
