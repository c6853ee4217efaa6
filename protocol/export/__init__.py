"""Generate the committed artefacts of the contract from the pydantic models.

``python -m protocol.export`` writes, under the repository root:

- ``protocol/schema/context-sidecar.schema.json`` — JSON Schema of every model + the method
  table;
- ``protocol/typescript/context-sidecar.ts`` — TypeScript types and a typed method table;
- ``protocol/lua/context_sidecar/types.lua`` — LuaCATS annotations and the method table;
- ``docs/protocol/*.md`` — the protocol reference of the docs site, for people: an overview,
  a page per method family, the shared types.  The generator owns that directory: a page it no
  longer writes (a family gone) is stale, and is removed by the next export.

``--check`` writes nothing and exits 1 when any of them differs from what the models give
(CI and ``make test`` run it, so generated types and pages can never drift from the server).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xxhash

from protocol.export._lua import render_lua
from protocol.export._markdown import render_pages
from protocol.export._schema import build_schema
from protocol.export._typescript import render_typescript

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["DOCS_DIR", "PACKAGE_DIR", "ROOT", "SCHEMA_FILE", "check", "render_all", "write_all"]

PACKAGE_DIR = Path(__file__).resolve().parent.parent
#: The repository root: artefact paths are relative to it.
ROOT = PACKAGE_DIR.parent
#: Relative to :data:`PACKAGE_DIR` (the server reads it from the installed package).
SCHEMA_FILE = "schema/context-sidecar.schema.json"
#: The reference pages' directory, relative to :data:`ROOT`; every file in it is generated.
DOCS_DIR = "docs/protocol"

_RENDERERS: dict[str, Callable[[dict[str, Any], str], str]] = {
    "protocol/typescript/context-sidecar.ts": render_typescript,
    "protocol/lua/context_sidecar/types.lua": render_lua,
}


def render_all(schema: dict[str, Any] | None = None) -> dict[str, bytes]:
    """Every artefact's path (relative to the repository root) and bytes."""
    schema = build_schema() if schema is None else schema
    schema_bytes = (json.dumps(schema, indent=2, sort_keys=False) + "\n").encode()
    digest = xxhash.xxh3_128_hexdigest(schema_bytes)
    out = {f"protocol/{SCHEMA_FILE}": schema_bytes}
    for rel, render in _RENDERERS.items():
        out[rel] = render(schema, digest).encode()
    for page, text in render_pages(schema, digest).items():
        out[f"{DOCS_DIR}/{page}"] = text.encode()
    return out


def _strays(root: Path, artefacts: dict[str, bytes]) -> list[str]:
    """Files under ``root / DOCS_DIR`` that the generator does not write (sorted)."""
    docs = root / DOCS_DIR
    if not docs.is_dir():
        return []
    found = (p.relative_to(root).as_posix() for p in docs.rglob("*") if p.is_file())
    return sorted(rel for rel in found if rel not in artefacts)


def write_all(root: Path = ROOT, schema: dict[str, Any] | None = None) -> list[str]:
    """Write every artefact under ``root`` and remove stray pages; return the paths that
    changed (written or removed)."""
    artefacts = render_all(schema)
    changed = []
    for rel, data in artefacts.items():
        path = root / rel
        if not path.exists() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            changed.append(rel)
    for rel in _strays(root, artefacts):
        (root / rel).unlink()
        changed.append(rel)
    return changed


def check(root: Path = ROOT, schema: dict[str, Any] | None = None) -> list[str]:
    """The artefacts under ``root`` that are missing or stale, then the stray pages."""
    artefacts = render_all(schema)
    stale = [
        rel
        for rel, data in artefacts.items()
        if not (root / rel).exists() or (root / rel).read_bytes() != data
    ]
    return stale + _strays(root, artefacts)
