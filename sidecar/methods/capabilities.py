"""What the server says of itself: the contract's hash and methods, its limits, its tokenizers.

``initialize`` carries this block under ``capabilities.experimental.contextSidecar`` and
``server/info`` answers it with the process's facts added; every face builds it here, from light
sources only (the committed JSON Schema, :mod:`protocol.limits`, the tokenizer catalog), so a
face can answer before pydantic or pygls load.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import xxhash

import protocol
from protocol.limits import (
    MAX_APPEND_ENTRIES,
    MAX_COUNT_BYTES,
    MAX_JSON_DEPTH,
    MAX_LIST_LIMIT,
    MAX_READ_LIMIT,
)
from sidecar import __version__
from sidecar.context.tokenizer_catalog import catalog

__all__ = ["SchemaFacts", "capabilities_block", "limits_block", "schema_facts"]

#: Beside the ``protocol`` package's modules, in the source tree as in the wheel (read as a
#: plain file: ``importlib.resources`` costs more to import than the rest of the handshake).
_SCHEMA = Path(protocol.__file__).parent / "schema" / "context-sidecar.schema.json"


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
