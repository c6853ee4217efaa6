"""What handlers share: the store, the tokenizers, the limits, lifecycle facts.

The context service is built on first use and the run manager is set once the connection
exists: requests that need neither are served while the rest still loads
(:mod:`sidecar.rpc.early`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from protocol._base import dump_wire, parse_wire
from protocol.server import Limits, RequestLatencies, ServerCapabilities, ServerInfo
from sidecar.context.tokens import Tokenizers
from sidecar.ids import now_iso
from sidecar.methods.capabilities import capabilities_block
from sidecar.methods.latency import Latencies
from sidecar.store import Store

if TYPE_CHECKING:
    from sidecar.context.service import ContextService

    # A field's annotation, never evaluated (postponed annotations); a real import would load
    # the run loop and the providers before the first request.
    from sidecar.runs.manager import RunManager  # noqa: TC004

__all__ = ["SidecarState"]


@dataclass
class SidecarState:
    store: Store
    tokenizers: Tokenizers
    limits: Limits
    runs: RunManager = field(init=False)
    """Set by the server once the connection exists (runs talk to the host)."""
    backlog: Callable[[], int] = lambda: 0
    """Bytes sent but not yet read by the client (set by the server)."""
    started_at: str = field(default_factory=now_iso)
    initialized: bool = False
    client_pid: int | None = None
    latencies: Latencies = field(default_factory=Latencies)
    """How long the requests answered so far took inside the sidecar (the protocol records)."""

    @cached_property
    def context(self) -> ContextService:
        from sidecar.context.service import ContextService

        return ContextService(self.store, self.tokenizers)

    def capabilities_block(self) -> dict[str, Any]:
        """The ``initialize`` capability block, built by the same code as the early answer."""
        return capabilities_block(
            store_path=str(self.store.root),
            max_message_bytes=self.limits.max_message_bytes,
            tokenizers=[dump_wire(info) for info in self.tokenizers.infos()],
            default_tokenizer=self.tokenizers.default_id,
        )

    def capabilities(self) -> ServerCapabilities:
        return parse_wire(ServerCapabilities, self.capabilities_block())

    def info(self) -> ServerInfo:
        caps = self.capabilities()
        return ServerInfo(
            **caps.model_dump(),
            pid=os.getpid(),
            started_at=self.started_at,
            store_writable=self.store.writable,
            outbound_backlog_bytes=self.backlog(),
            latencies=parse_wire(RequestLatencies, self.latencies.wire()),
        )
