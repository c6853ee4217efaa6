"""The repository the coding-task tests work on, on every face: a bug (``a - b``), a failing
test, and a ``.gitignore``'d copy of the same code (which no search may find)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["fixture_repo"]


def fixture_repo(root: Path) -> None:
    (root / "calc").mkdir(parents=True)
    (root / "calc" / "__init__.py").write_text("")
    (root / "calc" / "add.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_add.py").write_text(
        "from calc.add import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (root / "build" / "calc").mkdir(parents=True)
    (root / "build" / "calc" / "add.py").write_text("def add(a, b):\n    return a - b\n")
    (root / ".gitignore").write_text("build/\n")
