"""The ``initialize`` capability block and the ``server/*`` utility methods."""

from __future__ import annotations

from pydantic import Field

from protocol._base import Timestamp, WireModel
from protocol.tokens import TokenizerInfo

__all__ = [
    "MAX_SLEEP_MS",
    "PROTOCOL_VERSION",
    "Limits",
    "RequestLatencies",
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


class RequestLatencies(WireModel):
    """The requests this process has answered, by method, counted by how long each took inside
    it: from the parsed request to its answer handed to the transport.  The pipe, the loop
    turn that writes the answer and the client are not in it: beside the latency a client
    measures, it says which side the time was spent on.  Counts only grow: the figures of a
    period are the difference of two answers."""

    bounds_ms: list[float]
    """Upper bounds of the buckets, in milliseconds, increasing (each 1.25x the previous)."""
    counts: dict[str, list[int]]
    """Per method, ``len(boundsMs) + 1`` counts: requests that took at most ``boundsMs[i]``
    (and more than the bound before it); the last, those over the last bound."""


class ServerInfo(ServerCapabilities):
    """Answer of ``server/info``: the capability block plus live facts."""

    pid: int
    started_at: Timestamp
    store_writable: bool
    """Whether this process may write the store at all (false only when it was opened
    read-only).  Any number of sidecars write one store; a session another one holds answers
    its writes with ``session.held`` (see ``Session.heldBy``)."""
    outbound_backlog_bytes: int = 0
    """Bytes sent to this client and not yet read by it (bounded: see ``run/lagged``)."""
    latencies: RequestLatencies
    """How long the requests answered so far took inside the sidecar (the few plain reads
    answered while the server loads, right after ``initialize``, are not counted)."""


class ServerPingResult(WireModel):
    time: Timestamp


class ServerSleepParams(WireModel):
    """Sleep, then answer: lets a host test its timeouts and ``$/cancelRequest`` handling."""

    ms: int = Field(ge=0, le=MAX_SLEEP_MS)


class ServerSleepResult(WireModel):
    slept_ms: int
