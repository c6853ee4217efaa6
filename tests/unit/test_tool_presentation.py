"""How built-in calls are shown to a person (sidecar/tools/presentation.py): titles, fences,
the first changed line."""

from __future__ import annotations

from sidecar.tools.presentation import call_title, fenced, first_changed_line, inline_code


def test_titles_are_human() -> None:
    assert call_title("read_file", {"path": "calc/add.py"}) == "Read calc/add.py"
    assert call_title("read_file", {"path": "a.py", "offset": 10, "limit": 51}) == (
        "Read a.py (lines 10-60)"
    )
    assert call_title("read_file", {"path": "a.py", "offset": 7}) == "Read a.py (from line 7)"
    assert call_title("write_file", {"path": "a.py", "content": ""}) == "Write a.py"
    assert call_title("edit_file", {"path": "a.py"}) == "Edit a.py"
    assert call_title("run_command", {"command": "pytest -q"}) == "Run `pytest -q`"
    assert call_title("run_command", {"command": "echo `date`"}) == "Run `` echo `date` ``"
    assert call_title("run_command", {"command": "make\nmake test"}) == "Run `make …`"
    assert call_title("list_dir", {"path": "src"}) == "List src"
    assert call_title("glob", {"pattern": "**/*.py"}) == "Find `**/*.py`"
    assert call_title("grep", {"pattern": "return a - b"}) == "Search `return a - b`"
    assert call_title("grep", {"pattern": "x", "path": "src"}) == "Search `x` in src"
    assert call_title("calc__add", {"a": 1}) is None
    long = call_title("run_command", {"command": "x" * 200})
    assert long is not None and len(long) < 100 and long.endswith("…`")


def test_a_fence_is_longer_than_any_backticks_inside() -> None:
    assert fenced("a = 1", "python") == "```python\na = 1\n```"
    inner = "doc\n```\ncode\n````\n"
    assert fenced(inner) == f"`````\n{inner}`````"
    assert inline_code("a``b") == "```a``b```"


def test_first_changed_line() -> None:
    assert first_changed_line(None, "x") == 1
    assert first_changed_line("a\nb\nc\n", "a\nB\nc\n") == 2
    assert first_changed_line("a\n", "a\nb\n") == 2
    assert first_changed_line("a\nb\n", "a\n") == 2
