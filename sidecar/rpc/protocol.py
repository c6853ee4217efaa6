"""The pygls protocol class of the sidecar.

pygls provides dispatch, the LSP lifecycle, ``$/cancelRequest`` and outgoing requests; this
subclass changes only what a stdio sidecar needs done differently:

- bodies arrive already framed (``sidecar.rpc.transport``) and are checked here: bad JSON,
  batches and non-JSON-RPC objects get a -32700 / -32600 answer instead of a log line;
- ``Content-Length`` is computed from the UTF-8 bytes actually sent (compact JSON,
  non-ASCII kept as is), and every frame can be traced;
- every error answer carries ``data.code``; no traceback is ever sent;
- what a handler defers with :meth:`SidecarProtocol.after_answer` is sent after its answer;
- a late answer to a request the server withdrew (``$/cancelRequest``), and a cancel of a
  request already answered, are dropped quietly (both are normal in LSP);
- requests after ``shutdown`` are answered with ``server.shutting_down`` instead of silence;
- unknown notifications are ignored and unknown requests answered -32601, neither logged;
  a notification that fails is logged, never popped up in the editor;
- of pygls' built-in LSP handlers only the lifecycle and ``$/setTrace`` are kept: the
  sidecar advertises no document sync, no commands and no progress of its own, so
  ``textDocument/*``, ``workspace/executeCommand``, ``window/workDoneProgress/cancel``, ...
  are methods it does not have (-32601, or ignored when notified);
- a notification whose params the LSP type of its method does not take (``initialized``
  without params, ``$/cancelRequest`` with ``[]``) is ignored with a DEBUG line, never
  structured by pygls (which logs an ERROR with a traceback); a request is answered -32602;
- ``initialize`` advertises ``capabilities.experimental.contextSidecar``;
- ``exit`` stops the transport instead of calling ``sys.exit`` inside the event loop.
"""

from __future__ import annotations

import contextvars
import json
import logging
from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCProtocol,
    JsonRPCRequestMessage,
    MsgId,
)

from protocol.errors import (
    INVALID_REQUEST,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    ErrorCode,
    ErrorData,
)
from protocol.framing import BadHeader, TooLarge, peek_members
from protocol.limits import MAX_JSON_DEPTH
from sidecar.jsonbytes import deeper_than, dumps_bytes
from sidecar.methods import errors
from sidecar.rpc.handshake import initialize_result
from sidecar.rpc.initialize_params import check_initialize_params

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterable
    from concurrent.futures import Future

    from cattrs import Converter
    from pygls.lsp.server import LanguageServer

    from sidecar.methods.state import SidecarState

__all__ = ["SidecarProtocol"]

logger = logging.getLogger(__name__)

#: Withdrawn outgoing requests remembered, so that their late answers are expected.
_MAX_WITHDRAWN = 1024
#: pygls' built-in handlers the sidecar keeps.  The others serve LSP features it does not
#: advertise (text and notebook document sync, workspace folders, commands, work done
#: progress): left in, they would run on what editors send anyway and log tracebacks
#: (``textDocument/didChange`` of a document never opened) or warnings.
_PYGLS_BUILTINS = frozenset(
    {types.INITIALIZE, types.INITIALIZED, types.SHUTDOWN, types.EXIT, types.SET_TRACE}
)


class SidecarProtocol(LanguageServerProtocol):
    """LanguageServerProtocol plus the sidecar's edge rules (see the module docstring)."""

    state: SidecarState
    #: Called with raw body bytes to frame and write (set by the transport).
    send_body: Callable[[bytes], None]
    #: Called once an answer is sent: what was sent leaves now (set by the transport).
    flush: Callable[[], None]
    #: Called with what must run before the next frames leave (set by the transport).
    before_write: Callable[[Callable[[], None]], None]
    #: Called with the process exit code when the client sends ``exit``.
    on_exit: Callable[[int], None]
    #: Called with the client's process id after ``initialize``.
    on_initialized: Callable[[int | None], None]

    def __init__(self, server: LanguageServer, converter: Converter) -> None:
        super().__init__(server, converter)
        self._after_answer: dict[MsgId, list[Callable[[], object]]] = {}
        self._withdrawn: dict[MsgId, None] = {}  # insertion-ordered: the oldest go first
        self._initialize_handled = False
        self._plain_requests: frozenset[str] = frozenset()
        builtins = self.fm.builtin_features
        for name in [name for name in builtins if name not in _PYGLS_BUILTINS]:
            del builtins[name]

    def route_plainly(self, methods: Iterable[str]) -> None:
        """Requests of these methods (the table's, none of them LSP's) go to their handlers
        with their params as they came: nothing for pygls to structure."""
        self._plain_requests = frozenset(m for m in methods if self.get_message_type(m) is None)

    # --- incoming ------------------------------------------------------------------------

    def handle_body(self, body: bytes) -> None:
        """Decode one framed body and dispatch it, answering any fault it has."""
        try:
            message = json.loads(body)
        except RecursionError:
            rid = peek_members(body[:65536], ("id",)).get("id")  # JSON-RPC clients put it first
            self._send_error(
                rid if isinstance(rid, int | str) and not isinstance(rid, bool) else None,
                INVALID_REQUEST,
                "JSON nested too deeply to parse",
                ErrorCode.REQUEST_TOO_DEEP,
                details={"limit": MAX_JSON_DEPTH},
            )
            return
        except ValueError as exc:
            self._send_error(None, PARSE_ERROR, f"invalid JSON: {exc}", ErrorCode.PARSE_ERROR)
            return
        if deeper_than(message, MAX_JSON_DEPTH):
            rid = message.get("id") if isinstance(message, dict) else None
            self._send_error(
                rid if isinstance(rid, int | str) and not isinstance(rid, bool) else None,
                INVALID_REQUEST,
                f"message nested deeper than {MAX_JSON_DEPTH} levels",
                ErrorCode.REQUEST_TOO_DEEP,
                details={"limit": MAX_JSON_DEPTH},
            )
            return
        if isinstance(message, list):
            self._send_error(
                None,
                INVALID_REQUEST,
                "batch requests are not supported (LSP framing carries one message per frame)",
                ErrorCode.INVALID_REQUEST,
            )
            return
        if not isinstance(message, dict):
            self._send_error(
                None, INVALID_REQUEST, "a message must be a JSON object", ErrorCode.INVALID_REQUEST
            )
            return
        msg_id = message.get("id")
        if not isinstance(msg_id, int | str) or isinstance(msg_id, bool):
            msg_id = None
        problem = _shape_problem(message)
        if problem is not None:
            self._send_error(msg_id, INVALID_REQUEST, problem, ErrorCode.INVALID_REQUEST)
            return
        if (
            self._shutdown
            and "method" in message
            and msg_id is not None
            and message["method"] != types.EXIT
        ):
            self._send_error(
                msg_id, INVALID_REQUEST, "the server is shutting down", ErrorCode.SHUTTING_DOWN
            )
            return
        method = message.get("method")
        if msg_id is not None and method in self._plain_requests:
            # a method of the table: its params go to it as they are, so pygls' structuring
            # (cattrs, for nothing) and its checks (made above) are skipped
            contextvars.copy_context().run(
                self._handle_request, msg_id, method, message.get("params")
            )
            return
        try:
            if method == types.INITIALIZE and msg_id is not None:
                message["params"] = check_initialize_params(message.get("params"))
            structured = self._structure(message, msg_id)
        except errors.MethodError as exc:
            if msg_id is not None and method is not None:
                self._send_method_error(msg_id, exc)
            return
        if structured is not None:
            self.handle_message(structured)

    def _structure(self, message: dict[str, Any], msg_id: MsgId | None) -> Any:
        """The message as pygls dispatches it, or ``None``: a notification to ignore.

        Only the LSP methods the sidecar handles are structured into their ``lsprotocol``
        types; everything else keeps plain JSON params (the routes validate their own, and a
        method nobody handles is answered -32601 or ignored by the dispatch).  pygls'
        :meth:`structure_message` would log an ERROR with a traceback for any LSP method's
        params it cannot structure, handled or not."""
        method = message.get("method")
        if method is None:  # a response: pygls knows the result types of its own requests
            return self.structure_message(message)
        handled = method == types.CANCEL_REQUEST or self._handles(method)
        lsp_type = self.get_message_type(method) if handled else None
        if lsp_type is None:
            plain = JsonRPCNotification if msg_id is None else JsonRPCRequestMessage
            return self._converter.structure(message, plain)
        if msg_id is not None and "id" not in attrs.fields_dict(lsp_type):
            # a notification method (``initialized``, ``$/setTrace``) sent with an id: pygls
            # would take it for the notification and never answer; no request has that name
            raise errors.method_not_found(method)
        try:
            return self._converter.structure(message, lsp_type)
        except Exception as exc:
            if msg_id is None:  # LSP: nobody to answer; a client's slip is no server fault
                logger.debug("ignoring notification %r: %s", method, _structure_problems(exc))
                return None
            raise errors.invalid_lsp_params(method, _structure_problems(exc)) from None

    def handle_frame_error(self, error: TooLarge | BadHeader) -> None:
        if isinstance(error, TooLarge):
            logger.warning(
                "rejected a %d-byte message (limit %d, method %s)",
                error.size,
                error.limit,
                error.method,
            )
            self._send_error(
                error.request_id,
                INVALID_REQUEST,
                f"message of {error.size} bytes exceeds maxMessageBytes ({error.limit})",
                ErrorCode.REQUEST_TOO_LARGE,
                details={"size": error.size, "limit": error.limit, "method": error.method},
            )
        else:
            logger.warning("bad frame header: %s", error.reason)
            self._send_error(
                None, INVALID_REQUEST, f"bad frame: {error.reason}", ErrorCode.INVALID_REQUEST
            )

    def _handle_request(self, msg_id: MsgId, method_name: str, params: Any) -> None:
        # Decided on arrival, not when the handler task runs: a request sent before
        # ``initialize`` must be refused even when ``initialize`` follows in the same read.
        if not self.state.initialized and method_name != types.INITIALIZE:
            self._send_method_error(msg_id, errors.not_initialized(method_name))
            return
        if not self._handles(method_name):
            # A client's mistake, answered; not a server fault to log with a traceback.
            logger.debug("unknown method %r (request %s)", method_name, msg_id)
            self._send_method_error(msg_id, errors.method_not_found(method_name))
            return
        self.state.latencies.started(msg_id, method_name)
        super()._handle_request(msg_id, method_name, params)

    def _handle_notification(self, method_name: str, params: Any) -> None:
        # LSP: a notification the server does not handle is ignored (``$/`` ones always).
        # Editors send plenty on their own (didSave, didChangeConfiguration, $/progress);
        # pygls would log each with a traceback and pop an error up in the editor.
        if method_name != types.CANCEL_REQUEST and not self._handles(method_name):
            logger.debug("ignoring notification %r", method_name)
            return
        super()._handle_notification(method_name, params)

    def _handle_cancel_notification(self, msg_id: MsgId) -> None:
        if msg_id not in self._request_futures:  # answered already: the cancel crossed it
            logger.debug("cancel of request %s, which is no longer pending", msg_id)
            return
        super()._handle_cancel_notification(msg_id)

    def _check_handler_result(self, future: Future[Any]) -> None:
        # A notification gets no answer; pygls would pop its failure up in the editor
        # (``window/showMessage``) with a traceback.  Log it instead: a refusal in one line
        # (routed handlers log their own unexpected errors), anything else in full.
        if future.cancelled() or (exc := future.exception()) is None:
            return
        if isinstance(exc, errors.MethodError | JsonRpcException):
            logger.warning("notification not handled: %s", exc.message)
        else:
            logger.error("a notification handler failed", exc_info=exc)

    def _handles(self, method_name: str) -> bool:
        return method_name in self.fm.builtin_features or method_name in self.fm.features

    # --- outgoing ------------------------------------------------------------------------

    def _send_data(self, data: Any) -> None:
        if not data:
            return
        try:
            body = dumps_bytes(data, default=self._serialize_message)
        except Exception:
            logger.exception("could not serialise an outgoing message")
            return
        self.send_body(body)

    def _send_response(
        self, msg_id: MsgId, result: Any | None = None, error: Any | None = None
    ) -> None:
        if error is None and msg_id not in self._result_types:
            # a method of the table answers wire JSON already: written as it is, not built
            # into pygls' response class and taken apart again
            self._send_data({"jsonrpc": "2.0", "id": msg_id, "result": result})
            return
        super()._send_response(msg_id, result, error)

    def _send_error(
        self,
        msg_id: MsgId | None,
        code: int,
        message: str,
        data_code: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        data = ErrorData(code=data_code, details=details)
        self._send_method_error(msg_id, errors.rpc_error(code, message, data))

    def _send_method_error(self, msg_id: MsgId | None, exc: errors.MethodError) -> None:
        self.send_body(dumps_bytes({"jsonrpc": "2.0", "id": msg_id, "error": exc.payload()}))

    def _send_handler_result(self, future: Future[Any], *, msg_id: MsgId) -> None:
        try:
            self._answer(future, msg_id)
        finally:
            self.state.latencies.answered(msg_id)
            self.flush()
            for fn in self._after_answer.pop(msg_id, ()):
                fn()

    def _answer(self, future: Future[Any], msg_id: MsgId) -> None:
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            self._send_error(
                msg_id, REQUEST_CANCELLED, f"request {msg_id} was cancelled", ErrorCode.CANCELLED
            )
            return
        exc = future.exception()
        if exc is None:
            self._send_response(msg_id, result=future.result())
        elif isinstance(exc, errors.MethodError):  # from the method table
            self._send_method_error(msg_id, exc)
        elif isinstance(exc, JsonRpcException):  # from pygls itself
            self._send_response(msg_id, error=_with_code(exc).to_response_error())
        else:  # not raised through the table (a pygls built-in): still no traceback
            self._send_method_error(msg_id, errors.from_unexpected(exc, str(msg_id)))

    def after_answer(self, fn: Callable[[], object]) -> None:
        """Call ``fn`` right after the answer to the request being handled is written, so
        that whatever ``fn`` sends follows the answer on the wire (``run/start``'s events);
        outside a request, at once.  Run whatever the answer is: the handler's work is done."""
        msg_id = self.msg_id
        if msg_id is None or msg_id not in self._request_futures:
            fn()
        else:
            self._after_answer.setdefault(msg_id, []).append(fn)

    def withdraw_request(self, msg_id: MsgId) -> None:
        """Give up on an outgoing request the client has not answered yet, and tell it so
        (``$/cancelRequest``).  Its answer may still come: LSP allows it."""
        if self._request_futures.pop(msg_id, None) is None:
            return  # answered meanwhile
        self._withdrawn[msg_id] = None
        if len(self._withdrawn) > _MAX_WITHDRAWN:
            del self._withdrawn[next(iter(self._withdrawn))]
        self.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))

    def _handle_response(
        self, msg_id: MsgId, result: Any | None = None, error: Any | None = None
    ) -> None:
        if msg_id not in self._request_futures and msg_id in self._withdrawn:
            del self._withdrawn[msg_id]
            logger.debug("late answer to withdrawn request %s, dropped", msg_id)
            return
        super()._handle_response(msg_id, result, error)

    # --- lifecycle -----------------------------------------------------------------------

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, Any]:
        # pygls sets up its own state (client capabilities, workspace) and computes LSP
        # capabilities, which the sidecar does not advertise: it serves no text documents.
        yield from super().lsp_initialize(params)
        self._initialize_handled = True
        self.state.initialized = True
        self.state.client_pid = params.process_id
        self.on_initialized(params.process_id)
        return initialize_result(self.state.capabilities_block())

    def adopt_initialize(self, body: bytes, answer: bytes, process_id: int | None) -> None:
        """``initialize`` was answered before pygls was loaded (``sidecar.rpc.handshake``):
        run it through pygls now, for pygls' own state, without answering a second time."""
        sent: list[bytes] = []
        send_body = self.send_body
        self.send_body = sent.append
        try:
            self.handle_body(body)
        finally:
            self.send_body = send_body
        if sent != [answer]:
            logger.warning("the early initialize answer differs from pygls' own: %r", sent)
        if not self._initialize_handled:  # pygls refused params the early check let through
            self.state.initialized = True
            self.state.client_pid = process_id
            self.on_initialized(process_id)

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        yield from ()
        self.on_exit(0 if self._shutdown else 1)


def _shape_problem(message: dict[str, Any]) -> str | None:
    """Why ``message`` is not a JSON-RPC 2.0 request, notification or response, if it isn't."""
    if message.get("jsonrpc") != JsonRPCProtocol.VERSION:
        return 'jsonrpc must be "2.0"'
    if "method" in message:
        if not isinstance(message["method"], str) or not message["method"]:
            return "method must be a non-empty string"
        if "id" in message and (
            not isinstance(message["id"], int | str) or isinstance(message["id"], bool)
        ):
            return "id must be an integer or a string"
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            return "params must be an object or an array"
        return None
    if "id" in message and ("result" in message or "error" in message):
        return None
    return "not a request, notification or response"


def _structure_problems(exc: Exception) -> list[str]:
    """What cattrs found wrong, one line each (``required field missing @ $.params``)."""
    from cattrs import transform_error
    from cattrs.errors import ClassValidationError, IterableValidationError

    if isinstance(exc, ClassValidationError | IterableValidationError):
        return transform_error(exc)
    return [f"{type(exc).__name__}: {exc}"]


def _with_code(exc: JsonRpcException) -> JsonRpcException:
    """Make sure an error from pygls itself also carries ``data.code``."""
    if isinstance(exc.data, dict) and "code" in exc.data:
        return exc
    code = {
        -32700: ErrorCode.PARSE_ERROR,
        -32600: ErrorCode.INVALID_REQUEST,
        -32601: ErrorCode.METHOD_NOT_FOUND,
        -32602: ErrorCode.PARAMS_INVALID,
        -32800: ErrorCode.CANCELLED,
    }.get(exc.code, ErrorCode.INTERNAL)
    return JsonRpcException(code=exc.code, message=exc.message, data={"code": code})
