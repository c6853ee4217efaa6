"""The wire contract of context-sidecar: models, method registry, errors, framing.

Importable without the server (it depends on pydantic only).  Generated artefacts live
beside it: ``schema/`` (JSON Schema), ``typescript/`` (types + typed method table),
``lua/`` (LuaCATS annotations) and ``PROTOCOL.md``; ``python -m protocol.export`` writes them
and ``--check`` fails when they are stale.
"""

from __future__ import annotations

from protocol._base import WireModel, dump_wire, parse_wire
from protocol.methods import ALL_METHODS, METHODS_BY_NAME, MethodSpec
from protocol.server import PROTOCOL_VERSION

__all__ = [
    "ALL_METHODS",
    "METHODS_BY_NAME",
    "PROTOCOL_VERSION",
    "MethodSpec",
    "WireModel",
    "dump_wire",
    "parse_wire",
]
