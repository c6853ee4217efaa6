"""How a built-in tool call is shown to a person (not to the model): its title, its kind, the
lines it points at, and a read's text fenced as code.

One place for both faces: the ACP face renders ``tool_call`` titles, kinds and locations from
these, and so can a ``serve`` host.  The titles are what editors' own agents show ("Read
calc/add.py", "Run `pytest -q`", "Search `return a - b`"); a name this module does not know
(an MCP tool, a host tool) gets ``None`` and the face picks its own.  Nothing here changes
what the model reads.
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal

from sidecar.tools.catalog import (
    EDIT_FILE,
    GLOB,
    GREP,
    LIST_DIR,
    READ_FILE,
    RECALL,
    RUN_COMMAND,
    UPDATE_PLAN,
    WRITE_FILE,
)

__all__ = [
    "KINDS",
    "ToolKind",
    "call_title",
    "fenced",
    "first_changed_line",
    "inline_code",
    "language_of",
]

ToolKind = Literal["read", "edit", "search", "execute"]

KINDS: dict[str, ToolKind] = {
    READ_FILE: "read",
    WRITE_FILE: "edit",
    EDIT_FILE: "edit",
    LIST_DIR: "search",
    GLOB: "search",
    GREP: "search",
    RUN_COMMAND: "execute",
    RECALL: "read",
}
"""What kind of call each built-in tool makes (the icon an editor shows)."""

#: A title is one line: a longer command is cut here (the whole of it is in ``rawInput``).
_TITLE_CHARS = 80

_LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "jsx",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".rs": "rust",
    ".go": "go",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".java": "java",
    ".kt": "kotlin",
    ".rb": "ruby",
    ".lua": "lua",
    ".sh": "sh",
    ".bash": "bash",
    ".zsh": "zsh",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".md": "markdown",
    ".html": "html",
    ".css": "css",
    ".sql": "sql",
    ".xml": "xml",
    ".swift": "swift",
    ".cs": "csharp",
    ".php": "php",
}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _one_line(text: str) -> str:
    lines = text.strip().splitlines() or [""]
    line = lines[0]
    if len(line) > _TITLE_CHARS:
        return line[: _TITLE_CHARS - 1] + "…"
    return f"{line} …" if len(lines) > 1 else line


def inline_code(text: str) -> str:
    """``text`` as markdown inline code, whatever backticks it holds."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    tick = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{tick}{pad}{text}{pad}{tick}"


def _lines(arguments: dict[str, Any]) -> str:
    start = _positive(arguments.get("offset")) or _positive(arguments.get("line"))
    limit = _positive(arguments.get("limit"))
    if limit is not None:
        first = start or 1
        return f" (lines {first}-{first + limit - 1})"
    return f" (from line {start})" if start is not None else ""


def call_title(name: str, arguments: dict[str, Any]) -> str | None:
    """The title of a built-in call ("Read calc/add.py (lines 10-60)"), or ``None`` for a
    tool that is not built in."""
    path = _text(arguments.get("path"))
    if name == READ_FILE:
        return f"Read {path or '?'}{_lines(arguments)}"
    if name == WRITE_FILE:
        return f"Write {path or '?'}"
    if name == EDIT_FILE:
        return f"Edit {path or '?'}"
    if name == RUN_COMMAND:
        command = _text(arguments.get("command"))
        return f"Run {inline_code(_one_line(command))}" if command else "Run a command"
    if name == LIST_DIR:
        return f"List {path or '.'}"
    if name == RECALL:
        item = _text(arguments.get("id"))
        return f"Recall {item}" if item else "Recall a masked result"
    if name == UPDATE_PLAN:
        entries = arguments.get("entries")
        count = f" ({len(entries)} steps)" if isinstance(entries, list) else ""
        return f"Update the plan{count}"
    if name in (GLOB, GREP):
        verb = "Find" if name == GLOB else "Search"
        pattern = _text(arguments.get("pattern"))
        shown = f"{verb} {inline_code(_one_line(pattern))}" if pattern else verb
        return f"{shown} in {path}" if path else shown
    return None


def language_of(path: str) -> str:
    """The fence language for a file (``""`` when unknown)."""
    base = os.path.basename(path)
    if base in ("Makefile", "makefile", "GNUmakefile"):
        return "make"
    if base == "Dockerfile":
        return "dockerfile"
    return _LANGUAGES.get(os.path.splitext(base)[1].lower(), "")


def fenced(text: str, language: str = "") -> str:
    """``text`` as a fenced code block whose fence no run of backticks in it can close."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{language}\n{body}{fence}"


def first_changed_line(old_text: str | None, new_text: str) -> int:
    """The 1-based line where ``new_text`` first differs from ``old_text`` (1 for a new
    file)."""
    if old_text is None:
        return 1
    old_lines = old_text.splitlines(keepends=True)
    new_lines = new_text.splitlines(keepends=True)
    for n, (a, b) in enumerate(zip(old_lines, new_lines, strict=False), 1):
        if a != b:
            return n
    return min(len(old_lines), len(new_lines)) + 1 if old_lines != new_lines else 1
