"""Assemble the sidecar: store + tokenizers + pygls server + stdio transport.

``serve_stdio`` is what ``context-sidecar serve`` runs.  Before anything else it moves the
protocol to a private duplicate of fd 1 and points fd 1 at stderr, so a ``print`` anywhere
(ours or a library's) lands in the log, never in the JSON-RPC stream.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
from pygls.lsp.server import LanguageServer

from protocol.methods import ALL_METHODS
from protocol.server import Limits
from protocol.sessions import MAX_APPEND_ENTRIES, MAX_LIST_LIMIT, MAX_READ_LIMIT
from protocol.tokens import MAX_COUNT_BYTES
from sidecar import __version__
from sidecar.context.tokens import Tokenizers
from sidecar.defaults import DEFAULT_MAX_MESSAGE_BYTES
from sidecar.rpc.bridge import PyglsBridge
from sidecar.rpc.converter import converter_factory
from sidecar.rpc.handlers import ROUTES
from sidecar.rpc.protocol import MAX_JSON_DEPTH, SidecarProtocol
from sidecar.rpc.router import wrap
from sidecar.rpc.state import SidecarState
from sidecar.rpc.transport import StdioTransport, Tracer
from sidecar.runs.manager import RunManager
from sidecar.store import Store

__all__ = ["ServeOptions", "build_server", "serve_stdio"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ServeOptions:
    store: Path
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    trace: Path | None = None


def build_server(state: SidecarState) -> LanguageServer:
    """The pygls server with every route of the registry registered."""
    server = LanguageServer(
        "context-sidecar",
        __version__,
        protocol_cls=SidecarProtocol,
        converter_factory=converter_factory,
    )
    protocol = server.protocol
    assert isinstance(protocol, SidecarProtocol)
    protocol.state = state
    routed = {r.spec.name for r in ROUTES}
    missing = [
        s.name
        for s in ALL_METHODS
        if s.direction == "clientToServer" and s.kind == "request" and s.name not in routed
    ]
    if missing:
        raise RuntimeError(f"methods without a handler: {missing}")
    for route in ROUTES:
        server.feature(route.spec.name)(wrap(state, route))
    return server


def _take_stdout() -> int:
    """Return a private fd for the protocol and make fd 1 an alias of stderr."""
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


async def _serve(options: ServeOptions, in_fd: int, out_fd: int) -> int:
    store = Store(options.store)
    if not store.writable:
        logger.warning(
            "store %s is locked by pid %s: serving reads only until it is free",
            store.root,
            store.lock.holder_pid(),
        )
    tokenizers = Tokenizers.discover()
    state = SidecarState(
        store=store,
        tokenizers=tokenizers,
        limits=Limits(
            max_message_bytes=options.max_message_bytes,
            max_append_entries=MAX_APPEND_ENTRIES,
            max_read_limit=MAX_READ_LIMIT,
            max_list_limit=MAX_LIST_LIMIT,
            max_count_bytes=MAX_COUNT_BYTES,
            max_json_depth=MAX_JSON_DEPTH,
        ),
    )
    server = build_server(state)
    protocol = server.protocol
    assert isinstance(protocol, SidecarProtocol)
    tracer = Tracer(options.trace) if options.trace else None
    transport = StdioTransport(
        protocol,
        in_fd=in_fd,
        out_fd=out_fd,
        max_message_bytes=options.max_message_bytes,
        tracer=tracer,
    )
    bridge = PyglsBridge(protocol, transport.backlog)
    state.backlog = transport.backlog
    state.runs = RunManager(store, state.context, bridge, transport.spawn)
    watch_client = protocol.on_initialized

    def initialized(pid: int | None) -> None:
        watch_client(pid)
        # warm the encoding off the hot path
        transport.spawn(lambda: anyio.to_thread.run_sync(tokenizers.preload))

    protocol.on_initialized = initialized
    try:
        return await transport.run()
    finally:
        store.close()
        if tracer is not None:
            tracer.close()


def serve_stdio(options: ServeOptions) -> int:
    """Serve JSON-RPC on stdin/stdout until EOF, ``exit`` or the client's death."""
    out_fd = _take_stdout()
    code = anyio.run(_serve, options, 0, out_fd, backend="asyncio")
    logger.info("exiting with code %d", code)
    return code
