"""Generate the committed artefacts of the contract from the pydantic models.

``python -m protocol.export`` writes, under the ``protocol`` package directory:

- ``schema/context-sidecar.schema.json`` — JSON Schema of every model + the method table;
- ``typescript/context-sidecar.ts`` — TypeScript types and a typed method table;
- ``lua/context_sidecar/types.lua`` — LuaCATS annotations and the method table;
- ``PROTOCOL.md`` — the human-readable reference.

``--check`` writes nothing and exits 1 when any of them differs from what the models give
(CI and ``make test`` run it, so generated types can never drift from the server).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xxhash

from protocol.export._lua import render_lua
from protocol.export._markdown import render_markdown
from protocol.export._schema import build_schema
from protocol.export._typescript import render_typescript

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["PACKAGE_DIR", "SCHEMA_FILE", "check", "render_all", "write_all"]

PACKAGE_DIR = Path(__file__).resolve().parent.parent
SCHEMA_FILE = "schema/context-sidecar.schema.json"

_RENDERERS: dict[str, Callable[[dict[str, Any], str], str]] = {
    "typescript/context-sidecar.ts": render_typescript,
    "lua/context_sidecar/types.lua": render_lua,
    "PROTOCOL.md": render_markdown,
}


def render_all(schema: dict[str, Any] | None = None) -> dict[str, bytes]:
    """Every artefact's path (relative to the package dir) and bytes."""
    schema = build_schema() if schema is None else schema
    schema_bytes = (json.dumps(schema, indent=2, sort_keys=False) + "\n").encode()
    digest = xxhash.xxh3_128_hexdigest(schema_bytes)
    out = {SCHEMA_FILE: schema_bytes}
    for rel, render in _RENDERERS.items():
        out[rel] = render(schema, digest).encode()
    return out


def write_all(root: Path = PACKAGE_DIR, schema: dict[str, Any] | None = None) -> list[str]:
    """Write every artefact under ``root``; return the paths that changed."""
    changed = []
    for rel, data in render_all(schema).items():
        path = root / rel
        if not path.exists() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            changed.append(rel)
    return changed


def check(root: Path = PACKAGE_DIR, schema: dict[str, Any] | None = None) -> list[str]:
    """The artefacts under ``root`` that are missing or stale."""
    return [
        rel
        for rel, data in render_all(schema).items()
        if not (root / rel).exists() or (root / rel).read_bytes() != data
    ]
