"""The sidecar's own workspace tools on the wire: how a run or a profile turns them on.

A run with ``builtinTools`` offers the model the built-in tools (list, glob, grep, read,
write, edit, shell) and runs them inside the sidecar, confined to the session's
``workspaceRoots``; read-only ones never ask, writes and commands follow the approval
mode (``ask``: ``approval/request`` to the host; ``accept_edits``; ``read_only``: refused;
``allow_all``).  Host tools (``tools``, ``tool/execute``) work beside them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from protocol._base import WireModel

__all__ = ["ApprovalModeId", "BuiltinToolName", "BuiltinTools"]

BuiltinToolName = Literal[
    "list_dir", "glob", "grep", "read_file", "write_file", "edit_file", "run_command"
]
ApprovalModeId = Literal["ask", "accept_edits", "read_only", "allow_all"]


class BuiltinTools(WireModel):
    """Which built-in tools a run offers, who approves them, and how large a result may be."""

    tools: list[BuiltinToolName] | None = None
    """The tools to offer (always in the catalog's order); absent: all of them.  A profile's
    list narrows a run's: a run gets only the tools both name."""
    mode: ApprovalModeId | None = None
    """Absent: the session's mode (the one an ACP client set), else ``ask``."""
    max_result_tokens: int | None = Field(default=None, ge=500, le=100_000)
    """Bound of one tool result, in tokens (default 10,000: about 30,000 characters)."""
