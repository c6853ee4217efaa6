"""What handlers share: the store, the tokenizers, the limits, lifecycle facts."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources

import xxhash

from protocol.methods import ALL_METHODS
from protocol.server import PROTOCOL_VERSION, Limits, ServerCapabilities, ServerInfo
from sidecar import __version__
from sidecar.context.service import ContextService
from sidecar.context.tokens import Tokenizers
from sidecar.ids import now_iso
from sidecar.runs.manager import RunManager
from sidecar.store import Store

__all__ = ["SidecarState", "schema_hash"]


def schema_hash() -> str:
    """xxh3-128 of the committed JSON Schema (kept equal to the models by a drift test)."""
    data = resources.files("protocol").joinpath("schema/context-sidecar.schema.json").read_bytes()
    return xxhash.xxh3_128_hexdigest(data)


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

    @cached_property
    def schema_hash(self) -> str:
        return schema_hash()

    def capabilities(self) -> ServerCapabilities:
        return ServerCapabilities(
            protocol_version=PROTOCOL_VERSION,
            server_version=__version__,
            schema_hash=self.schema_hash,
            methods=[m.name for m in ALL_METHODS],
            limits=self.limits,
            tokenizers=self.tokenizers.infos(),
            default_tokenizer=self.tokenizers.default_id,
            store_path=str(self.store.root),
        )

    def info(self) -> ServerInfo:
        caps = self.capabilities()
        return ServerInfo(
            **caps.model_dump(),
            pid=os.getpid(),
            started_at=self.started_at,
            store_writable=self.store.writable,
            outbound_backlog_bytes=self.backlog(),
        )
