"""The built-in tools as the model sees them: names, descriptions and JSON Schema parameters
(what a run offers as ``tools``), and what each does as far as approvals go.

Both faces offer these schemas byte for byte: ``serve`` runs them in the sidecar
(:mod:`sidecar.runs.builtin`), the ACP face through the editor where it can
(:mod:`sidecar.acp.tools`).  The order is the catalog's and never changes with the set
offered, so a run's tool block is byte-stable (the prompt cache pays for it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sidecar.tools.plan import DEFINITION as _PLAN_DEFINITION
from sidecar.tools.plan import UPDATE_PLAN

if TYPE_CHECKING:
    from sidecar.tools.approvals import Effect

__all__ = [
    "BUILTIN_NAMES",
    "DEFINITIONS",
    "EFFECTS",
    "EDIT_FILE",
    "GLOB",
    "GREP",
    "LIST_DIR",
    "READ_FILE",
    "RECALL",
    "RUN_COMMAND",
    "UPDATE_PLAN",
    "WRITE_FILE",
]

READ_FILE, WRITE_FILE, EDIT_FILE, RUN_COMMAND = (
    "read_file",
    "write_file",
    "edit_file",
    "run_command",
)
LIST_DIR, GLOB, GREP = "list_dir", "glob", "grep"
RECALL = "recall"
DEFINITIONS: dict[str, dict[str, Any]] = {
    READ_FILE: {
        "name": READ_FILE,
        "description": (
            "Read a text file of the workspace as numbered lines: 2,000 from offset "
            "(1-based) unless limit says fewer; the last line says how to read on."
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
        "description": (
            "Write a whole text file of the workspace, creating it and its directories if "
            "needed (the user may be asked first)."
        ),
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
            "once (or every occurrence, with replace_all), by new_text; several changes to "
            "one file go in edits, applied in order, all or nothing (the user may be asked "
            "first). Read the file first: old_text must match it exactly, whitespace included."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_text": {"type": "string"},
                "new_text": {"type": "string"},
                "replace_all": {"type": "boolean"},
                "edits": {
                    "type": "array",
                    "description": "instead of old_text/new_text: several replacements",
                    "items": {
                        "type": "object",
                        "properties": {
                            "old_text": {"type": "string"},
                            "new_text": {"type": "string"},
                            "replace_all": {"type": "boolean"},
                        },
                        "required": ["old_text", "new_text"],
                    },
                },
            },
            "required": ["path"],
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
            "Run a shell command in the workspace (the user may be asked first); answers its "
            "output (head and tail when long) and exit code. It may run in a sandbox: writes "
            "only in the workspace and /tmp, no network."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "cwd": {"type": "string", "description": "default: the workspace root"},
                "sandbox": {
                    "type": "string",
                    "enum": ["escalate"],
                    "description": (
                        "only for a command that needs what the sandbox forbids (the "
                        "network, writes outside the workspace): the user is asked to run it "
                        "outside the sandbox"
                    ),
                },
                "justification": {
                    "type": "string",
                    "description": "with sandbox: why it must leave the sandbox (the user sees it)",
                },
            },
            "required": ["command"],
        },
    },
    RECALL: {
        "name": RECALL,
        "description": (
            "Bring back an older tool result that was masked to save context: pass the ledger "
            "id its placeholder names (ctx_transcript_...). Its output comes back as this "
            "call's result, bounded like any result; recall only what you need again."
        ),
        "parameters": {
            "type": "object",
            "properties": {"id": {"type": "string", "description": "ctx_transcript_..."}},
            "required": ["id"],
        },
    },
    UPDATE_PLAN: _PLAN_DEFINITION,
}

BUILTIN_NAMES: tuple[str, ...] = (
    LIST_DIR,
    GLOB,
    GREP,
    READ_FILE,
    WRITE_FILE,
    EDIT_FILE,
    RUN_COMMAND,
    RECALL,
    UPDATE_PLAN,
)
"""Every built-in tool, in the order a run offers them."""

EFFECTS: dict[str, Effect] = {
    LIST_DIR: "read",
    GLOB: "read",
    GREP: "read",
    READ_FILE: "read",
    WRITE_FILE: "edit",
    EDIT_FILE: "edit",
    RUN_COMMAND: "execute",
    RECALL: "read",
    UPDATE_PLAN: "read",
}
"""What each built-in tool does, for the approval table (:mod:`sidecar.tools.approvals`)."""
