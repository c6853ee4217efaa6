"""The schemas of the tools an ACP session offers the model (what ``run/start`` sends as
``tools``): names and JSON Schema parameters only; what they do is :mod:`sidecar.acp.tools`."""

from __future__ import annotations

from typing import Any

__all__ = [
    "DEFINITIONS",
    "EDIT_FILE",
    "GLOB",
    "GREP",
    "LIST_DIR",
    "READ_FILE",
    "RUN_COMMAND",
    "WRITE_FILE",
]

READ_FILE, WRITE_FILE, EDIT_FILE, RUN_COMMAND = (
    "read_file",
    "write_file",
    "edit_file",
    "run_command",
)
LIST_DIR, GLOB, GREP = "list_dir", "glob", "grep"
DEFINITIONS: dict[str, dict[str, Any]] = {
    READ_FILE: {
        "name": READ_FILE,
        "description": (
            "Read a text file of the workspace (as the editor has it, unsaved changes "
            "included), as numbered lines: 2,000 from offset (1-based) unless limit says "
            "fewer; the last line says how to read on."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "absolute, or relative to the root"},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1},
            },
            "required": ["path"],
        },
    },
    WRITE_FILE: {
        "name": WRITE_FILE,
        "description": "Write a whole text file of the workspace (the user is asked first).",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
    EDIT_FILE: {
        "name": EDIT_FILE,
        "description": (
            "Edit a text file of the workspace by replacing old_text, which must occur exactly "
            "once (or every occurrence, with replace_all), by new_text (the user is asked "
            "first). Read the file first: old_text must match it exactly, whitespace included."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_text": {"type": "string"},
                "new_text": {"type": "string"},
                "replace_all": {"type": "boolean"},
            },
            "required": ["path", "old_text", "new_text"],
        },
    },
    LIST_DIR: {
        "name": LIST_DIR,
        "description": (
            "List a directory of the workspace as a tree (files ignored by .gitignore are "
            "left out). Prefer this to running ls."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "default: the workspace root"},
                "depth": {"type": "integer", "minimum": 1, "description": "default 2"},
            },
        },
    },
    GLOB: {
        "name": GLOB,
        "description": (
            "Find files by glob pattern ('**/*.py', 'src/**/test_*.ts'), newest first; "
            "files ignored by .gitignore are left out."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string", "description": "default: the workspace root"},
            },
            "required": ["pattern"],
        },
    },
    GREP: {
        "name": GREP,
        "description": (
            "Search file contents with a regular expression (ripgrep syntax); results grouped "
            "by file with line numbers. Files ignored by .gitignore are not searched. Prefer "
            "this to running grep."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string", "description": "a directory or a file"},
                "glob": {"type": "string", "description": "only files matching, e.g. '*.py'"},
                "ignore_case": {"type": "boolean"},
                "context": {"type": "integer", "minimum": 0, "maximum": 10},
                "mode": {"type": "string", "enum": ["content", "files", "count"]},
            },
            "required": ["pattern"],
        },
    },
    RUN_COMMAND: {
        "name": RUN_COMMAND,
        "description": (
            "Run a shell command in the workspace (the user is asked first); answers its "
            "output and exit code."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "cwd": {"type": "string", "description": "default: the workspace root"},
            },
            "required": ["command"],
        },
    },
}
