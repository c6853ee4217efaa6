"""Assemble the sidecar: store + tokenizers + pygls server + stdio transport.

:func:`serve` is what ``context-sidecar serve`` runs once ``sidecar.rpc.serve`` has read the
first frame (and answered ``initialize``, when that is what it was).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio
from pygls.lsp.server import LanguageServer

from protocol._base import parse_wire
from protocol.methods import ALL_METHODS
from protocol.server import Limits
from sidecar import __version__
from sidecar.context.tokens import Tokenizers
from sidecar.rpc.bridge import PyglsBridge
from sidecar.rpc.converter import converter_factory
from sidecar.rpc.handlers import ROUTES
from sidecar.rpc.handshake import limits_block
from sidecar.rpc.protocol import SidecarProtocol
from sidecar.rpc.router import wrap
from sidecar.rpc.state import SidecarState
from sidecar.rpc.transport import StdioTransport, Tracer
from sidecar.runs.manager import RunManager
from sidecar.store import Store

if TYPE_CHECKING:
    from sidecar.rpc.handshake import EarlyStart
    from sidecar.rpc.serve import ServeOptions
    from sidecar.store.lock import StoreLock

__all__ = ["build_server", "serve"]

logger = logging.getLogger(__name__)


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


async def serve(
    options: ServeOptions, early: EarlyStart | None, lock: StoreLock | None, in_fd: int, out_fd: int
) -> int:
    store = Store(options.store, lock=lock)
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
        limits=parse_wire(Limits, limits_block(options.max_message_bytes)),
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
        early=early,
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
