"""The sidecar's own workspace tools on the wire: how a run or a profile turns them on.

A run with ``builtinTools`` offers the model the built-in tools (list, glob, grep, read,
write, edit, shell, ``recall`` of a masked tool result, and ``update_plan``: the model's
todo list, each call a ``plan.updated`` event) and runs them inside the
sidecar, confined to the session's ``workspaceRoots``; read-only ones never ask, writes and
commands follow the approval mode (``ask``: ``approval/request`` to the host;
``accept_edits``; ``auto``: commands in a sandbox, asked only to leave it; ``plan`` and
``read_only``: refused; ``allow_all``).  Host tools (``tools``,
``tool/execute``) work beside them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from protocol._base import WireModel

__all__ = [
    "ApprovalModeId",
    "BuiltinCallRequested",
    "BuiltinToolName",
    "BuiltinTools",
    "FileChange",
    "PlanEntry",
    "PlanUpdated",
    "ToolApproval",
    "ToolLocation",
    "ToolResultStored",
]

BuiltinToolName = Literal[
    "list_dir",
    "glob",
    "grep",
    "read_file",
    "write_file",
    "edit_file",
    "run_command",
    "recall",
    "update_plan",
]
ApprovalModeId = Literal["ask", "accept_edits", "auto", "plan", "read_only", "allow_all"]


class BuiltinTools(WireModel):
    """Which built-in tools a run offers, who approves them, and how large a result may be."""

    tools: list[BuiltinToolName] | None = None
    """The tools to offer (always in the catalog's order); absent: all of them.  A profile's
    list narrows a run's: a run gets only the tools both name.  ``[]`` turns them off (a run
    whose host runs tools of these names itself, as the ACP face does)."""
    mode: ApprovalModeId | None = None
    """Absent: the session's mode (the one an ACP client set), else ``ask``."""
    max_result_tokens: int | None = Field(default=None, ge=500, le=100_000)
    """Bound of one tool result, in tokens (default 10,000: about 30,000 characters)."""
    env: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] | None = Field(
        default=None, max_length=200
    )
    """Environment variables ``run_command`` passes on besides its allowlist (``PATH``,
    ``HOME``, the locale, the toolchains' variables): exact names, taken even when a name
    reads like a secret; a value that looks like one is still left out.  A run's names and
    its profile's are both passed."""


class ToolLocation(WireModel):
    path: str
    line: int | None = None
    """1-based."""


class FileChange(WireModel):
    """A write or an edit of a built-in tool: the file before and after (texts over 256 KiB
    are left out, ``omitted`` says so)."""

    path: str
    """As the model named it (relative to the first workspace root when inside it)."""
    old_text: str | None = None
    """Absent for a new file."""
    new_text: str | None = None
    created: bool = False
    omitted: bool = False


class BuiltinCallRequested(WireModel):
    """Payload of ``tool.callRequested`` (every tool call; the ``builtin`` fields only for a
    built-in one)."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    builtin: bool = False
    """Run by the sidecar (no ``tool/execute`` follows)."""
    effect: Literal["read", "edit", "execute"] | None = None
    title: str | None = None
    """What a front end shows for it: "Read calc/add.py", "Run `pytest -q`"."""


class ToolApproval(WireModel):
    """Payload of ``tool.approval``: how the approval mode decided a built-in call (after
    ``tool.callRequested``, before ``tool.resultStored``)."""

    call_id: str
    name: str
    effect: Literal["read", "edit", "execute"]
    mode: ApprovalModeId
    verdict: Literal["allow", "ask", "refuse", "sandbox"]
    """``allow``: run without asking; ``ask``: ``approval/request`` was sent; ``refuse``: the
    mode forbids it (not run, the model is told); ``sandbox``: run without asking in the
    sandbox (``auto``)."""
    approved: bool
    """Whether it ran (for ``ask``: what the host answered)."""
    reason: str | None = None
    escalation: Literal["requested", "blocked"] | None = None
    """An ``ask`` to run a command outside the sandbox (``auto``; see ``approval/request``);
    a ``blocked`` one follows the ``sandbox`` event of the same call."""


class ToolResultStored(WireModel):
    """Payload of ``tool.resultStored`` (every tool call; ``content`` and the fields after it
    only for a built-in one, whose result no host has seen)."""

    call_id: str
    is_error: bool
    seq: int
    """The history entry holding the result."""
    content: list[dict[str, Any]] | None = None
    """What the model reads (already bounded)."""
    truncated: bool = False
    """The result was cut to its bound; its text says how to read on."""
    locations: list[ToolLocation] = Field(default_factory=list)
    change: FileChange | None = None
    """A write or an edit that was made: the file before and after."""
    exit_code: int | None = None
    """A command's exit code (absent when it timed out or was cancelled)."""


class PlanEntry(WireModel):
    """One step of the model's todo list (``update_plan``)."""

    content: str = Field(min_length=1)
    status: Literal["pending", "in_progress", "completed"]
    priority: Literal["high", "medium", "low"] = "medium"


class PlanUpdated(WireModel):
    """Payload of ``plan.updated``: the model called ``update_plan`` with a well-formed list
    (after ``tool.callRequested``, before ``tool.resultStored`` of the same call).  The list
    is the whole plan: it replaces the one before.  A malformed call has no such event (its
    result tells the model what is wrong)."""

    call_id: str
    entries: list[PlanEntry]
