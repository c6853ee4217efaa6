"""The pygls server of the sidecar: every route registered, the runs wired to the connection.

:func:`attach_server` is what ``sidecar.rpc.serve`` calls once pygls has loaded, with the store,
the state and the transport already running (and requests perhaps already served, see
:mod:`sidecar.rpc.early`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pygls.lsp.server import LanguageServer

from protocol.methods import ALL_METHODS
from sidecar import __version__
from sidecar.methods.route import bind
from sidecar.methods.table import ROUTES
from sidecar.rpc.bridge import PyglsBridge
from sidecar.rpc.converter import converter_factory
from sidecar.rpc.protocol import SidecarProtocol
from sidecar.runs.manager import RunManager

if TYPE_CHECKING:
    from sidecar.methods.state import SidecarState
    from sidecar.rpc.transport import StdioTransport

__all__ = ["attach_server", "build_server"]


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
        server.feature(route.spec.name)(bind(state, route))
    protocol.route_plainly(routed)
    return server


def attach_server(state: SidecarState, transport: StdioTransport) -> None:
    """Build the pygls server over ``state`` and hand the transport's frames to it: from now
    on pygls dispatches everything (what was held while it loaded first)."""
    server = build_server(state)
    protocol = server.protocol
    assert isinstance(protocol, SidecarProtocol)
    bridge = PyglsBridge(protocol, transport.backlog)
    state.backlog = transport.backlog
    state.runs = RunManager(state.store, state.context, bridge, transport.spawn)
    transport.attach(protocol)
