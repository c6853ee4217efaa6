"""The ``initialize`` answer, and answering it before the server is imported.

A host starts the sidecar and waits for ``initialize`` before anything else, so that answer's
latency is the start-up users feel.  Importing pygls (``lsprotocol.types`` alone takes ~0.3 s)
and building the wire models (~0.2 s) would put it at ~0.7 s; so ``serve``:

1. reads the first frame itself (:func:`answer_initialize_early`); when it is a well-formed
   ``initialize`` request it answers at once, from light sources only — the committed JSON
   Schema (hash, protocol version, method names), :mod:`protocol.limits` and the tokenizer
   catalog;
2. hands the frame decoder (holding any bytes read past the first frame) and the
   ``initialize`` body to the transport, which serves the first requests while pygls loads
   (:mod:`sidecar.rpc.early`) and then replays ``initialize`` through pygls, silenced, so
   pygls and the sidecar's state are exactly as if pygls had answered.

Anything else as the first frame (another method, bad JSON, odd params, a broken header) is
left untouched for the full server, which answers it as always.  The same functions build the
answer when pygls does answer ``initialize`` (:class:`sidecar.rpc.protocol.SidecarProtocol`),
so the two paths cannot drift.

The answer carries ``capabilities.experimental.contextSidecar``, ``serverInfo`` and a
``textDocumentSync`` that asks for nothing: the sidecar serves no text documents, and an editor
that finds ``textDocumentSync`` missing assumes defaults (Neovim then sends ``didSave`` on
every write).
"""

from __future__ import annotations

import json
import os
import select
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import xxhash

import protocol
from protocol.framing import BadHeader, FrameDecoder, TooLarge, encode_frame
from protocol.limits import (
    MAX_APPEND_ENTRIES,
    MAX_COUNT_BYTES,
    MAX_JSON_DEPTH,
    MAX_LIST_LIMIT,
    MAX_READ_LIMIT,
)
from sidecar import __version__
from sidecar.context.tokenizer_catalog import catalog
from sidecar.jsonbytes import deeper_than, dumps_bytes
from sidecar.rpc.fdio import write_all

__all__ = [
    "EarlyStart",
    "SchemaFacts",
    "answer_initialize_early",
    "capabilities_block",
    "initialize_result",
    "limits_block",
    "schema_facts",
]

SERVER_NAME = "context-sidecar"
#: Beside the ``protocol`` package's modules, in the source tree as in the wheel (read as a
#: plain file: ``importlib.resources`` costs more to import than the rest of the handshake).
_SCHEMA = Path(protocol.__file__).parent / "schema" / "context-sidecar.schema.json"
_READ_CHUNK = 256 * 1024


@dataclass(frozen=True, slots=True)
class SchemaFacts:
    hash: str
    """xxh3-128 of the committed JSON Schema: equal hashes mean identical wire types."""
    protocol_version: int
    methods: list[str]
    """What a client can call: the client-to-server methods, in the registry's order."""


@cache
def schema_facts() -> SchemaFacts:
    """Read from ``protocol/schema/context-sidecar.schema.json`` (kept equal to the models by
    ``python -m protocol.export --check``)."""
    data = _SCHEMA.read_bytes()
    schema = json.loads(data)
    return SchemaFacts(
        hash=xxhash.xxh3_128_hexdigest(data),
        protocol_version=int(schema["x-protocolVersion"]),
        methods=[m["name"] for m in schema["x-methods"] if m["direction"] == "clientToServer"],
    )


def capabilities_block(
    *,
    store_path: str,
    max_message_bytes: int,
    tokenizers: list[dict[str, Any]] | None = None,
    default_tokenizer: str | None = None,
) -> dict[str, Any]:
    """``ServerCapabilities`` as sent under ``capabilities.experimental.contextSidecar``.

    ``tokenizers`` defaults to the catalog (what ``Tokenizers.discover`` will build)."""
    facts = schema_facts()
    if tokenizers is None:
        entries = catalog()
        tokenizers = [e.wire() for e in entries]
        default_tokenizer = entries[0].id
    return {
        "protocolVersion": facts.protocol_version,
        "serverVersion": __version__,
        "schemaHash": facts.hash,
        "methods": list(facts.methods),
        "limits": limits_block(max_message_bytes),
        "tokenizers": tokenizers,
        "defaultTokenizer": default_tokenizer,
        "storePath": store_path,
    }


def limits_block(max_message_bytes: int) -> dict[str, int]:
    """``Limits`` on the wire: what the server enforces."""
    return {
        "maxMessageBytes": max_message_bytes,
        "maxJsonDepth": MAX_JSON_DEPTH,
        "maxAppendEntries": MAX_APPEND_ENTRIES,
        "maxReadLimit": MAX_READ_LIMIT,
        "maxListLimit": MAX_LIST_LIMIT,
        "maxCountBytes": MAX_COUNT_BYTES,
    }


#: ``TextDocumentSyncOptions`` asking for no document traffic at all (``change`` 0 is None).
NO_DOCUMENT_SYNC = {"openClose": False, "change": 0, "save": False}


def initialize_result(block: dict[str, Any]) -> dict[str, Any]:
    return {
        "capabilities": {
            "textDocumentSync": dict(NO_DOCUMENT_SYNC),
            "experimental": {"contextSidecar": block},
        },
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
    }


@dataclass(slots=True)
class EarlyStart:
    """What the first read produced, for the transport to continue from."""

    decoder: FrameDecoder
    #: Frames (or frame errors) read but not yet handled, in order.
    pending: list[bytes | TooLarge | BadHeader] = field(default_factory=list)
    #: stdin reached EOF during the first read.
    eof: bool = False
    #: The ``initialize`` request answered early and the answer sent (bodies), if any.
    initialize: bytes | None = None
    answer: bytes | None = None
    process_id: int | None = None


def answer_initialize_early(
    *, in_fd: int, out_fd: int, store_path: str, max_message_bytes: int
) -> EarlyStart:
    """Read until the first frame is complete; answer it when it is a plain ``initialize``."""
    decoder = FrameDecoder(max_message_bytes)
    start = EarlyStart(decoder)
    while not start.pending:
        try:
            chunk = os.read(in_fd, _READ_CHUNK)
        except BlockingIOError:  # stdin shares a non-blocking description with stdout
            select.select([in_fd], [], [])
            continue
        if not chunk:
            start.eof = True
            return start
        start.pending.extend(decoder.feed(chunk))
    first = start.pending[0]
    if not isinstance(first, bytes):
        return start
    request = _plain_initialize(first)
    if request is None:
        return start
    block = capabilities_block(store_path=store_path, max_message_bytes=max_message_bytes)
    answer = dumps_bytes(
        {"jsonrpc": "2.0", "id": request["id"], "result": initialize_result(block)}
    )
    write_all(out_fd, encode_frame(answer))
    start.pending.pop(0)
    start.initialize = first
    start.answer = answer
    start.process_id = request["params"].get("processId")
    return start


#: Optional ``InitializeParams`` fields and the JSON types they must have.
_LSP_FIELDS: dict[str, type | tuple[type, ...]] = {
    "rootUri": str,
    "rootPath": str,
    "locale": str,
    "trace": str,
    "clientInfo": dict,
    "workspaceFolders": list,
}


def _plain_initialize(body: bytes) -> dict[str, Any] | None:
    """The message, if it is an ``initialize`` request the full server would accept as is."""
    if len(body) > 4 * 1024 * 1024:  # an ``initialize`` this big is odd: let the server judge
        return None
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    if message.get("method") != "initialize":
        return None
    msg_id = message.get("id")
    if isinstance(msg_id, bool) or not isinstance(msg_id, int | str):
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
        return None
    pid = params.get("processId")
    if pid is not None and (isinstance(pid, bool) or not isinstance(pid, int)):
        return None
    for name, kinds in _LSP_FIELDS.items():  # what pygls would refuse to structure
        if name in params and params[name] is not None and not isinstance(params[name], kinds):
            return None
    if not _plain_fields(params):
        return None
    if deeper_than(message, MAX_JSON_DEPTH):
        return None
    return message


def _plain_fields(params: dict[str, Any]) -> bool:
    """The nested shapes ``sidecar.rpc.initialize_params`` checks: anything else is left to
    it, so that a bad ``initialize`` gets ``params.invalid`` with ``errors[]``."""
    info = params.get("clientInfo")
    if info is not None and not isinstance(info.get("name"), str):
        return False
    if info is not None and not isinstance(info.get("version", ""), str | None):
        return False
    if params.get("trace") not in (None, "off", "messages", "verbose"):
        return False
    folders = params.get("workspaceFolders") or []
    return all(
        isinstance(f, dict) and isinstance(f.get("uri"), str) and isinstance(f.get("name"), str)
        for f in folders
    )
