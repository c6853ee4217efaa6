"""The wire contract of context-sidecar: models, method registry, errors, framing.

Importable without the server (it depends on pydantic only).  Generated artefacts live
beside it: ``schema/`` (JSON Schema), ``typescript/`` (types + typed method table) and
``lua/`` (LuaCATS annotations), and the docs site's protocol reference in ``docs/protocol/``;
``python -m protocol.export`` writes them and ``--check`` fails when they are stale.

The names below load on first use, so ``protocol.framing`` and ``protocol.limits`` stay
importable in milliseconds (the sidecar answers ``initialize`` before the models are built).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "WireModel": "protocol._base",
    "dump_wire": "protocol._base",
    "parse_wire": "protocol._base",
    "ALL_METHODS": "protocol.methods",
    "METHODS_BY_NAME": "protocol.methods",
    "MethodSpec": "protocol.methods",
    "PROTOCOL_VERSION": "protocol.server",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'protocol' has no attribute {name!r}")
    return getattr(import_module(home), name)
