"""The ``initialize`` capability block and the ``server/*`` utility methods."""

from __future__ import annotations

from pydantic import Field

from protocol._base import Timestamp, WireModel
from protocol.tokens import TokenizerInfo

__all__ = [
    "MAX_SLEEP_MS",
    "PROTOCOL_VERSION",
    "Limits",
    "ServerCapabilities",
    "ServerInfo",
    "ServerPingResult",
    "ServerSleepParams",
    "ServerSleepResult",
]

#: Integer protocol version; bumped on any incompatible change of a method or model.
PROTOCOL_VERSION = 1
MAX_SLEEP_MS = 60_000


class Limits(WireModel):
    max_message_bytes: int
    """Largest JSON-RPC body accepted; larger ones are answered with ``request.too_large``."""
    max_json_depth: int = 64
    """Deepest nesting of arrays and objects accepted in a message (``request.too_deep``)."""
    max_append_entries: int
    max_read_limit: int
    max_list_limit: int
    max_count_bytes: int


class ServerCapabilities(WireModel):
    """Sent under ``capabilities.experimental.contextSidecar`` in the ``initialize`` answer."""

    protocol_version: int
    server_version: str
    schema_hash: str
    """xxh3-128 of the generated JSON Schema: equal hashes mean identical wire types."""
    methods: list[str]
    """Every method a client can call (its requests and notifications to the server); what
    the server sends the client (``run/event``, ``tool/execute``, ...) is not listed."""
    limits: Limits
    tokenizers: list[TokenizerInfo]
    default_tokenizer: str
    store_path: str


class ServerInfo(ServerCapabilities):
    """Answer of ``server/info``: the capability block plus live facts."""

    pid: int
    started_at: Timestamp
    store_writable: bool
    """False while another sidecar holds the store's write lock."""
    outbound_backlog_bytes: int = 0
    """Bytes sent to this client and not yet read by it (bounded: see ``run/lagged``)."""


class ServerPingResult(WireModel):
    time: Timestamp


class ServerSleepParams(WireModel):
    """Sleep, then answer: lets a host test its timeouts and ``$/cancelRequest`` handling."""

    ms: int = Field(ge=0, le=MAX_SLEEP_MS)


class ServerSleepResult(WireModel):
    slept_ms: int
