"""The layers of ``sidecar/``, read from the source (every import statement, also the ones
inside functions and under ``TYPE_CHECKING``), so a new module cannot slip past:

- the core (the method table, runs, tools, the context pipeline, inputs, the store) knows no
  face: it imports neither face nor a face's library (the ACP and MCP SDKs, pygls, lsprotocol);
- the two faces (``sidecar.rpc``: ``serve``; ``sidecar.acp``: ``acp``) stand on the method
  table and never on each other; only the command line imports a face;
- no two modules import each other, directly or round about, and no two packages either.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = (
    "sidecar/methods",
    "sidecar/runs",
    "sidecar/tools",
    "sidecar/context",
    "sidecar/inputs",
    "sidecar/store",
    "sidecar/checkpoints",
)
FACES = ("sidecar.rpc", "sidecar.acp")
FORBIDDEN = ("acp", "mcp", "pygls", "lsprotocol", *FACES)
ENTRY = ("sidecar.cli", "sidecar.__main__")
"""What may start a face."""


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


# --- faces over one core ----------------------------------------------------------------------


def face_of(module: str) -> str | None:
    return next((f for f in FACES if module == f or module.startswith(f + ".")), None)


def faces_imported(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a face from outside it, but by the command line: ``a -> b``."""
    return sorted(
        f"{a} -> {b}"
        for a, targets in graph.items()
        for b in targets
        if (face := face_of(b)) is not None and face_of(a) != face and a not in ENTRY
    )


def test_a_face_imports_no_face_and_only_the_command_line_starts_one() -> None:
    """``serve`` and ``acp`` both call the method table (``sidecar.methods``); a third face
    would too, and neither would have to import another face."""
    assert faces_imported(module_graph(ROOT / "sidecar")) == []


def test_the_face_check_sees_a_face_importing_a_face(tmp_path: Path) -> None:
    package = tmp_path / "sidecar"
    for sub in ("rpc", "acp", "methods"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "cli.py").write_text(
        "from sidecar.rpc import serve\nfrom sidecar.acp import serve\n"
    )
    (package / "rpc" / "serve.py").write_text("from sidecar.methods import table\n")
    (package / "methods" / "table.py").write_text("")
    (package / "acp" / "serve.py").write_text("def f():\n    from sidecar.rpc.serve import x\n")
    assert faces_imported(module_graph(package)) == ["sidecar.acp.serve -> sidecar.rpc.serve"]


# --- no circles -------------------------------------------------------------------------------


def module_graph(package: Path) -> dict[str, set[str]]:
    """Module name -> the modules of ``package`` it imports (every import statement, relative
    ones resolved; ``from a import b`` is an edge to ``a.b`` when that is a module, else to
    ``a``)."""
    files: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        home = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                edges |= {alias.name for alias in node.names if alias.name in files}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = home.split(".")[: len(home.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    edges.add(full if full in files else base)
        graph[name] = {e for e in edges if e in files and e != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_two_modules_import_each_other_directly_or_round_about() -> None:
    """Every import counts, also under ``TYPE_CHECKING`` and inside functions: a circle
    between files is two reasons to change tied into one."""
    assert circles(module_graph(ROOT / "sidecar")) == []


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``sidecar.<package>`` -> the other packages of ``sidecar`` it imports (a module at the top
    of ``sidecar/`` is a package of its own)."""

    def package(module: str) -> str:
        return ".".join(module.split(".")[:2])

    packages: dict[str, set[str]] = {package(m): set() for m in graph}
    for a, targets in graph.items():
        packages[package(a)] |= {package(b) for b in targets} - {package(a)}
    return packages


def test_no_two_packages_import_each_other_directly_or_round_about() -> None:
    """The layers are a stack: the store at the bottom, the faces and the command line on
    top; a package that imports one above it (even through a third) ties the two together."""
    assert circles(package_graph(module_graph(ROOT / "sidecar"))) == []


def test_the_check_sees_a_circle(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from .c import g\n")
    (package / "sub" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import a\n"
    )
    (package / "d.py").write_text("import pkg.a\n")
    assert circles(module_graph(package)) == [["pkg.a", "pkg.sub.b", "pkg.sub.c"]]


# --- rooms of one size ------------------------------------------------------------------------

LAYOUT_PAGE = ROOT / "docs" / "develop" / "layout.md"
MAX_LINES = 500


def test_no_module_over_500_lines_without_a_written_reason() -> None:
    """A module over 500 lines is named, with its reason, in the layout page's list of them."""
    page = LAYOUT_PAGE.read_text(encoding="utf-8")
    long = {
        str(p.relative_to(ROOT)): n
        for p in sorted((ROOT / "sidecar").rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    unexplained = {m: n for m, n in long.items() if f"`{m}`" not in page}
    assert unexplained == {}
