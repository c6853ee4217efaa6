"""What handlers share: the store, the tokenizers, the limits, lifecycle facts."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from protocol._base import dump_wire, parse_wire
from protocol.server import Limits, ServerCapabilities, ServerInfo
from sidecar.context.service import ContextService
from sidecar.context.tokens import Tokenizers
from sidecar.ids import now_iso
from sidecar.rpc.handshake import capabilities_block
from sidecar.runs.manager import RunManager
from sidecar.store import Store

__all__ = ["SidecarState"]


@dataclass
class SidecarState:
    store: Store
    tokenizers: Tokenizers
    limits: Limits
    context: ContextService = field(init=False)
    runs: RunManager = field(init=False)
    """Set by the server once the connection exists (runs talk to the host)."""
    backlog: Callable[[], int] = lambda: 0
    """Bytes sent but not yet read by the client (set by the server)."""
    started_at: str = field(default_factory=now_iso)
    initialized: bool = False
    client_pid: int | None = None

    def __post_init__(self) -> None:
        self.context = ContextService(self.store, self.tokenizers)

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
        )
