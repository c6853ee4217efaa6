"""The core knows no face: nothing in ``sidecar/context``, ``sidecar/store`` or ``sidecar/runs``
imports the ACP face, the ACP or MCP SDKs, or ``serve``'s JSON-RPC layer (pygls, lsprotocol,
``sidecar.rpc``).  Read from the source (every import statement, also the ones inside
functions and under ``TYPE_CHECKING``), so a new module cannot slip past."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ("sidecar/context", "sidecar/store", "sidecar/runs")
FORBIDDEN = ("acp", "mcp", "sidecar.acp", "pygls", "lsprotocol", "sidecar.rpc")


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def forbidden(names: set[str]) -> list[str]:
    return sorted(n for n in names if any(n == f or n.startswith(f + ".") for f in FORBIDDEN))


@pytest.mark.parametrize("package", CORE)
def test_the_core_imports_no_face(package: str) -> None:
    modules = sorted((ROOT / package).rglob("*.py"))
    assert modules
    leaks = {str(m.relative_to(ROOT)): forbidden(imported(m)) for m in modules}
    assert {m: names for m, names in leaks.items() if names} == {}


def test_the_check_sees_a_leak(tmp_path: Path) -> None:
    module = tmp_path / "leaky.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from acp.schema import PlanEntry\n"
        "def f():\n    import sidecar.rpc.errors\n"
        "from sidecar.store import Store\n"
    )
    assert forbidden(imported(module)) == ["acp.schema", "sidecar.rpc.errors"]
