"""``context-sidecar serve``: JSON-RPC on stdin/stdout, answering ``initialize`` first.

Start-up is on every editor launch, and pygls is most of it, so it happens in this order:

1. the first frame is read and, when it is ``initialize``, answered at once
   (:mod:`sidecar.rpc.handshake`);
2. the store opens; the requests that come right behind ``initialize`` are answered at once
   when they are plain reads (:mod:`sidecar.rpc.first_requests`), before the event loop
   exists; then the stdio transport starts, and the routes that need neither pygls nor the
   connection serve requests as they come (:mod:`sidecar.rpc.early`), holding back the rest:
   plain reads from plain JSON (:mod:`sidecar.methods.light`), the others once the wire models,
   the routes and the server's state have loaded;
3. once those requests are answered, the wire models, the routes and the state load (if no
   request loaded them already), then pygls loads on a thread (requests keep being served
   meanwhile), then the pygls server is built and attached (:mod:`sidecar.rpc.server`): it
   takes the held frames, in order, and everything after them.

Nothing loads from the first instant: importing is CPU work under the GIL, and on a loaded
two-core machine a thread importing pygls halves the speed of everything else, the
``initialize`` answer and the first requests included; pydantic and the wire models alone
would double the time to the first answer.

This module and the modules of step 2 are light at import on purpose: nothing of pygls, and
nothing of pydantic until a request needs it (``tests/e2e/test_first_answer.py``).

Before anything else the protocol moves to a private duplicate of fd 1 and fd 1 is pointed
at stderr, so a ``print`` anywhere (ours or a library's) lands in the log, never in the
JSON-RPC stream.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sidecar.defaults import DEFAULT_MAX_MESSAGE_BYTES, MEMORY_TRACE_ENV, MEMORY_TRACE_FRAMES_ENV
from sidecar.exiting import arm_backstop
from sidecar.rpc.handshake import answer_initialize_early

if TYPE_CHECKING:
    from sidecar.methods.light import LightServer
    from sidecar.methods.state import SidecarState
    from sidecar.rpc.handshake import EarlyStart

__all__ = ["ServeOptions", "serve_stdio"]

logger = logging.getLogger(__name__)

#: What loads on a thread while requests are served: third-party modules only, so that two
#: threads never import the same module of ours at once.
PYGLS_MODULE = "pygls.lsp.server"
#: How long the requests a client sends right after ``initialize`` get the CPU to themselves
#: once the event loop runs, before the wire models and then pygls start loading (a matter of
#: speed only: a request arriving later is served all the same).
FIRST_REQUESTS_GRACE_S = 0.02
#: Once the connection has ended and the server's tasks are done, how long the process may
#: take to end before it is ended (:func:`sidecar.exiting.arm_backstop`).
EXIT_GRACE_S = 0.5
#: After the connection ended, the process ends by then whatever it is doing.
LAST_EXIT_S = 10.0


@dataclass(frozen=True, slots=True)
class ServeOptions:
    store: Path
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    trace: Path | None = None


def _take_stdout() -> int:
    """Return a private fd for the protocol and make fd 1 an alias of stderr."""
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


def serve_stdio(options: ServeOptions) -> int:
    """Serve JSON-RPC on stdin/stdout until EOF, ``exit`` or the client's death."""
    out_fd = _take_stdout()
    from sidecar import interpreter

    interpreter.tune()
    trace_memory = os.environ.get(MEMORY_TRACE_ENV)
    if trace_memory:  # a debugging aid (soaks): see sidecar._memory_trace
        from sidecar._memory_trace import start

        start(Path(trace_memory), int(os.environ.get(MEMORY_TRACE_FRAMES_ENV) or 0))
    root = options.store.expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    early = answer_initialize_early(
        in_fd=0,
        out_fd=out_fd,
        store_path=str(root),  # what ``Store`` reports as its root
        max_message_bytes=options.max_message_bytes,
    )
    from sidecar.ids import now_iso
    from sidecar.methods.light import LightServer
    from sidecar.store import Store

    store = Store(root, face="serve")
    try:
        server = LightServer(store, options.max_message_bytes, started_at=now_iso())
        if early.answer is not None and options.trace is None:
            from sidecar.rpc.first_requests import answer_first_requests

            answer_first_requests(early, server, in_fd=0, out_fd=out_fd)
        import anyio

        code = anyio.run(_serve, options, early, server, 0, out_fd, backend="asyncio")
    finally:
        store.close()
    logger.info("exiting with code %d", code)
    return code


async def _serve(
    options: ServeOptions, early: EarlyStart, server: LightServer, in_fd: int, out_fd: int
) -> int:
    import anyio

    from sidecar.rpc.early import EarlyDispatch
    from sidecar.rpc.transport import StdioTransport, Tracer

    answered = early.answer is not None
    state = functools.cache(lambda: _state(server, early))
    interim = EarlyDispatch(server if answered else None, state)
    tracer = Tracer(options.trace) if options.trace else None
    transport = StdioTransport(
        in_fd=in_fd,
        out_fd=out_fd,
        max_message_bytes=options.max_message_bytes,
        interim=interim,
        tracer=tracer,
        early=early,
    )
    interim.connect(transport.send_answer, transport.spawn, transport.stop)

    async def load_server() -> None:
        if answered:
            await anyio.sleep(FIRST_REQUESTS_GRACE_S)
            await interim.wait_idle()
            interim.prepare()
        await _import_on_daemon_thread(PYGLS_MODULE)
        from sidecar.rpc.server import attach_server

        await transport.started.wait()
        attach_server(state(), transport)

        async def preload() -> None:
            # warm the encoding off the hot path; then the loaded server is frozen for good
            await anyio.to_thread.run_sync(state().tokenizers.preload)
            from sidecar.interpreter import freeze_loaded

            freeze_loaded()

        transport.spawn(preload)

    async def last_exit() -> None:
        # the client is gone: whatever the shutdown waits for (a run's last write, a
        # command's kill), the process ends by then
        stopped_with = await transport.stopping()
        arm_backstop(stopped_with, LAST_EXIT_S, "the connection ended")

    code = 1
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(load_server)
            tg.start_soon(last_exit)
            code = await transport.run()
            tg.cancel_scope.cancel()
        return code
    finally:
        if tracer is not None:
            tracer.close()
        # Everything acknowledged is on disk: what is left of the process (asyncio joining
        # its default executor's threads, the store's close) must not hold it past a moment.
        arm_backstop(code, EXIT_GRACE_S, "the connection ended")


def _state(server: LightServer, early: EarlyStart) -> SidecarState:
    """The server's state (the wire models load here: after the first requests, see
    :mod:`sidecar.methods.light`)."""
    from protocol._base import parse_wire
    from protocol.server import Limits
    from sidecar.context.tokens import Tokenizers
    from sidecar.methods.capabilities import limits_block
    from sidecar.methods.state import SidecarState

    state = SidecarState(
        store=server.store,
        tokenizers=Tokenizers.discover(),
        limits=parse_wire(Limits, limits_block(server.max_message_bytes)),
        started_at=server.started_at,
        latencies=server.latencies,  # what the light routes' server/info reads
    )
    if early.answer is not None:  # pygls hears of it when it is attached
        state.initialized = True
        state.client_pid = early.process_id
    return state


async def _import_on_daemon_thread(name: str) -> None:
    """Import ``name`` on a daemon thread, and wait for it: a client that leaves while it
    loads must not wait for an import to finish before the process can exit."""
    import asyncio  # not at the top: ``initialize`` is answered before asyncio is needed

    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    failed: list[BaseException] = []

    def load() -> None:
        try:
            importlib.import_module(name)
        except BaseException as exc:
            failed.append(exc)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                loop.call_soon_threadsafe(done.set)

    threading.Thread(target=load, name=f"import-{name}", daemon=True).start()
    await done.wait()
    if failed:
        raise failed[0]
