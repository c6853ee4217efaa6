"""A typed Python client that starts the sidecar as a subprocess and speaks to it over stdio.

    async with await SidecarClient.spawn(store=path) as client:
        session = await client.call(methods.SESSION_CREATE, SessionCreateParams(title="x"))

``call`` validates the result against the method's result model (camelCase, unknown fields
rejected), so every e2e test also checks the server's answers against the contract.
``request`` is the untyped form.  Errors come back as :class:`RpcError` with ``code``,
``message`` and ``data`` (``data["code"]`` is the dotted code).  The client imports nothing
from the server: it shares only ``protocol``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from protocol._base import WireModel, dump_wire, parse_wire
from protocol.framing import FrameDecoder, encode_frame

if TYPE_CHECKING:
    from pathlib import Path
    from types import TracebackType

    from protocol.methods import MethodSpec

__all__ = ["RpcError", "SidecarClient", "sidecar_command"]

logger = logging.getLogger(__name__)

P = TypeVar("P", bound=WireModel)
R = TypeVar("R", bound=WireModel)

NotificationHandler = Callable[[str, Any], None]
RequestHandler = Callable[[Any], Awaitable[Any]]


class RpcError(Exception):
    """An error answer from the sidecar."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data

    @property
    def data_code(self) -> str | None:
        return self.data.get("code") if isinstance(self.data, dict) else None


def sidecar_command(*args: str) -> list[str]:
    """The command line that starts ``context-sidecar`` with this interpreter."""
    return [sys.executable, "-m", "sidecar", *args]


class SidecarClient:
    """One connection to one sidecar subprocess."""

    def __init__(self, process: asyncio.subprocess.Process, *, record: bool = False) -> None:
        self.process = process
        self._ids = itertools.count(1)
        self._pending: dict[int | str, asyncio.Future[Any]] = {}
        self._decoder = FrameDecoder(max_body=1 << 31)
        self._notification_handlers: list[NotificationHandler] = []
        self._request_handlers: dict[str, RequestHandler] = {}
        self._record = record
        self.stdout_bytes = bytearray()
        """Every byte the server wrote to stdout (when started with ``record=True``)."""
        self.initialize_result: dict[str, Any] | None = None
        self._reading = asyncio.Event()
        self._reading.set()
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())
        self._tasks: set[asyncio.Task[None]] = set()

    # --- start and stop --------------------------------------------------------------------

    @classmethod
    async def spawn(
        cls,
        *,
        store: Path | None = None,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        initialize: bool = True,
        process_id: int | None = None,
        record: bool = False,
        stderr: int | None = None,
        command: Sequence[str] | None = None,
        capabilities: dict[str, Any] | None = None,
    ) -> SidecarClient:
        """Start ``context-sidecar serve`` and (by default) complete the ``initialize``
        handshake."""
        argv = list(command or sidecar_command("serve"))
        if store is not None:
            argv += ["--store", str(store)]
        argv += list(args)
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env={**os.environ, **(env or {})},
        )
        client = cls(process, record=record)
        if initialize:
            await client.initialize(process_id=process_id, capabilities=capabilities)
        return client

    async def initialize(
        self, *, process_id: int | None = None, capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The LSP handshake.  ``capabilities`` are the client's (e.g. ``{"experimental":
        {"contextSidecar": {"assembly": True}}}`` for a host that assembles sub-agent prompts)."""
        result = await self.request(
            "initialize",
            {
                "processId": os.getpid() if process_id is None else process_id,
                "clientInfo": {"name": "sidecar.client"},
                "capabilities": capabilities or {},
            },
        )
        self.notify("initialized", {})
        self.initialize_result = result
        return dict(result)

    @property
    def capabilities(self) -> dict[str, Any]:
        """``capabilities.experimental.contextSidecar`` from the ``initialize`` answer."""
        assert self.initialize_result is not None, "not initialized"
        block: dict[str, Any] = self.initialize_result["capabilities"]["experimental"][
            "contextSidecar"
        ]
        return block

    async def close(self, timeout: float = 5.0) -> int:  # noqa: ASYNC109 (a client convenience)
        """``shutdown`` + ``exit``, then wait; kill if it does not exit in time."""
        self.resume_reading()
        if self.process.returncode is None:
            with contextlib.suppress(RpcError, ConnectionError, asyncio.TimeoutError):
                await asyncio.wait_for(self.request("shutdown", None), timeout)
                self.notify("exit", None)
        return await self.wait(timeout)

    async def wait(self, timeout: float = 5.0) -> int:  # noqa: ASYNC109 (a client convenience)
        try:
            code = await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            self.process.kill()
            code = await self.process.wait()
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(self._reader, 1.0)
        return code

    def pause_reading(self) -> None:
        """Stop reading the sidecar's stdout (to test how it copes with a slow client)."""
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()

    def close_stdin(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()

    async def __aenter__(self) -> SidecarClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- sending ---------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (tests of framing and hostile input)."""
        stdin = self.process.stdin
        if stdin is None or stdin.is_closing():
            raise ConnectionError("the sidecar's stdin is closed")
        stdin.write(data)

    def _send(self, message: dict[str, Any]) -> None:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        try:
            body = text.encode()
        except UnicodeEncodeError:  # a lone surrogate: escaped, as JSON.stringify sends it
            body = json.dumps(message, separators=(",", ":")).encode()
        self.send_raw(encode_frame(body))

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def start_request(self, method: str, params: Any) -> tuple[int, asyncio.Future[Any]]:
        """Send a request; return its id and a future of its result (for cancellation)."""
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)  # raises ConnectionError when the sidecar is gone: nothing pends
        self._pending[msg_id] = future
        return msg_id, future

    async def request(self, method: str, params: Any = None) -> Any:
        _, future = self.start_request(method, params)
        return await future

    def cancel(self, msg_id: int) -> None:
        self.notify("$/cancelRequest", {"id": msg_id})

    async def call(self, spec: MethodSpec[P, R], params: P | None = None) -> R:
        """Typed request: params from the method's model, result validated against it."""
        raw = await self.request(spec.name, dump_wire(params) if params is not None else {})
        assert spec.result is not None, f"{spec.name} has no result"
        return parse_wire(spec.result, raw)

    # --- receiving -------------------------------------------------------------------------

    def on_notification(self, handler: NotificationHandler) -> None:
        self._notification_handlers.append(handler)

    def on_request(self, method: str, handler: RequestHandler) -> None:
        self._request_handlers[method] = handler

    async def _read_loop(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while True:
                await self._reading.wait()
                chunk = await stdout.read(256 * 1024)
                if not chunk:
                    break
                if self._record:
                    self.stdout_bytes += chunk
                for item in self._decoder.feed(chunk):
                    if isinstance(item, bytes):
                        self._dispatch(json.loads(item))
                    else:
                        logger.error("bad frame from the sidecar: %s", item)
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("the sidecar exited"))
            self._pending.clear()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message:
            if "id" in message:
                task = asyncio.get_running_loop().create_task(self._answer(message))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            else:
                for handler in self._notification_handlers:
                    handler(message["method"], message.get("params"))
            return
        future = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
        if future is None or future.done():
            return
        if "error" in message:
            err = message["error"]
            future.set_exception(RpcError(err.get("code"), err.get("message"), err.get("data")))
        else:
            future.set_result(message.get("result"))

    async def _answer(self, message: dict[str, Any]) -> None:
        handler = self._request_handlers.get(message["method"])
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if handler is None:
            reply["error"] = {"code": -32601, "message": f"no handler for {message['method']}"}
        else:
            try:
                reply["result"] = await handler(message.get("params"))
            except Exception as exc:
                reply["error"] = {"code": -32603, "message": str(exc)}
        with contextlib.suppress(ConnectionError):
            self._send(reply)
