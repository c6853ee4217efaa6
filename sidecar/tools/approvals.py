"""Which tool calls run, are asked about, or are refused: one table for both faces.

=================  ==================  ====================  ===========================
mode               edits               commands              MCP tools
=================  ==================  ====================  ===========================
``ask`` (default)  asked               asked                 asked (not read-only ones)
``accept_edits``   allowed             asked                 asked (not read-only ones)
``auto``           allowed             in the sandbox        asked (not read-only ones)
``plan``           refused             refused               refused (not read-only ones)
``read_only``      refused             refused               asked (not read-only ones)
``allow_all``      allowed             allowed               allowed
=================  ==================  ====================  ===========================

Read-only tools (list, glob, grep, read, and MCP tools their server marks ``readOnlyHint``)
are never asked about, in any mode.  Edits are confined to the workspace roots in every mode
(a path outside is refused before anything is asked).

``auto`` (verdict ``sandbox``) runs a command in :mod:`sidecar.tools.sandbox` without asking;
it asks — and runs the command outside the sandbox only when approved — when the model marks
the call as needing more (``run_command``'s ``sandbox: "escalate"``, with a ``justification``:
:func:`escalation_asked`), when the sandboxed run failed in a way that shows the sandbox
blocked it (:func:`sidecar.tools.sandbox.blocked_by_sandbox`), and for every command when no
sandbox can start here.  ``allow_all`` is the explicit "no sandbox, no questions".

``plan`` is for exploring before changing anything: only read-only tools run, the rest is
refused without asking, and the model is told so (:data:`PLAN_NOTE`, added to its system
prompt while the session is in it); leaving it is the user's choice (the mode pickers, ACP
``session/set_mode``).  ``serve`` runs with built-in tools
(:mod:`sidecar.runs.builtin`) ask through ``approval/request``; the ACP face asks through
``session/request_permission`` (:mod:`sidecar.acp.approvals`).  Both read the same table, and
both read a session's mode from the same place (:data:`MODE_META`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "APPROVAL_MODES",
    "DEFAULT_MODE",
    "MODE_META",
    "PLAN_NOTE",
    "ApprovalMode",
    "Effect",
    "Verdict",
    "default_mode",
    "escalation_asked",
    "mode_named",
    "session_mode",
]

Effect = Literal["edit", "execute", "mcp", "read"]
"""What a tool does, as far as asking goes."""
Verdict = Literal["allow", "ask", "refuse", "sandbox"]
"""``sandbox``: run without asking, in the sandbox (a command in ``auto``)."""

PLAN_NOTE = (
    "You are in plan mode: the user wants a plan before anything changes. Only read-only "
    "tools run (reading, listing, searching); writing files, editing and running commands "
    "are refused without asking the user. Explore what you need, then answer with a concise, "
    "numbered plan of the changes you propose and stop. The user leaves plan mode when they "
    "approve it; do not try to make the changes before."
)
"""What the model is told while a session is in ``plan`` (a system section of its own)."""


@dataclass(frozen=True, slots=True)
class ApprovalMode:
    id: str
    name: str
    description: str
    allowed: frozenset[Effect]
    """Run without asking."""
    refused: frozenset[Effect] = frozenset()
    """Refused without asking."""
    sandboxed: frozenset[Effect] = frozenset()
    """Run without asking, in the sandbox."""

    def verdict(self, effect: Effect) -> Verdict:
        if effect in self.refused:
            return "refuse"
        if effect in self.sandboxed:
            return "sandbox"
        return "allow" if effect in self.allowed else "ask"


APPROVAL_MODES: tuple[ApprovalMode, ...] = (
    ApprovalMode(
        "ask",
        "Ask",
        "Ask before every file write, command and MCP tool call",
        frozenset({"read"}),
    ),
    ApprovalMode(
        "accept_edits",
        "Accept edits",
        "Write files without asking; ask before commands and MCP tool calls",
        frozenset({"read", "edit"}),
    ),
    ApprovalMode(
        "auto",
        "Auto (sandbox)",
        "Write files and run commands in a sandbox without asking (no network, no writes "
        "outside the workspace); ask only to leave the sandbox and before MCP tool calls",
        frozenset({"read", "edit"}),
        sandboxed=frozenset({"execute"}),
    ),
    ApprovalMode(
        "plan",
        "Plan",
        "Explore and plan: read-only tools only; writes, commands and MCP tool calls are "
        "refused without asking",
        frozenset({"read"}),
        frozenset({"edit", "execute", "mcp"}),
    ),
    ApprovalMode(
        "read_only",
        "Read only",
        "Read files only: writes and commands are refused; MCP tool calls are asked about",
        frozenset({"read"}),
        frozenset({"edit", "execute"}),
    ),
    ApprovalMode(
        "allow_all",
        "Allow everything",
        "Run every tool call without asking",
        frozenset({"read", "edit", "execute", "mcp"}),
    ),
)
DEFAULT_MODE = "ask"
_BY_ID = {mode.id: mode for mode in APPROVAL_MODES}

MODE_META = ("acp", "approvalMode")
"""Where a session keeps its mode: ``meta[MODE_META[0]][MODE_META[1]]`` (the ACP face set it
first; ``serve`` runs read it too, so a session in ``read_only`` is read-only on both)."""


def mode_named(mode_id: object) -> ApprovalMode | None:
    return _BY_ID.get(mode_id) if isinstance(mode_id, str) else None


def session_mode(meta: dict[str, Any] | None) -> ApprovalMode | None:
    """The mode a session's ``meta`` names, if any."""
    section = (meta or {}).get(MODE_META[0])
    return mode_named(section.get(MODE_META[1])) if isinstance(section, dict) else None


def default_mode() -> ApprovalMode:
    return _BY_ID[DEFAULT_MODE]


def escalation_asked(arguments: dict[str, Any]) -> str | None:
    """The model's justification when a ``run_command`` call asks to leave the sandbox
    (``sandbox: "escalate"``; ``""`` when it gave none), else ``None``."""
    if arguments.get("sandbox") != "escalate":
        return None
    why = arguments.get("justification")
    return why.strip() if isinstance(why, str) else ""
