"""Which tool calls run, are asked about, or are refused: one table for both faces.

=================  ==================  ====================  ===========================
mode               edits               commands              MCP tools
=================  ==================  ====================  ===========================
``ask`` (default)  asked               asked                 asked (not read-only ones)
``accept_edits``   allowed             asked                 asked (not read-only ones)
``read_only``      refused             refused               asked (not read-only ones)
``allow_all``      allowed             allowed               allowed
=================  ==================  ====================  ===========================

Read-only tools (list, glob, grep, read, and MCP tools their server marks ``readOnlyHint``)
are never asked about, in any mode.  ``serve`` runs with built-in tools
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
    "ApprovalMode",
    "Effect",
    "Verdict",
    "default_mode",
    "mode_named",
    "session_mode",
]

Effect = Literal["edit", "execute", "mcp", "read"]
"""What a tool does, as far as asking goes."""
Verdict = Literal["allow", "ask", "refuse"]


@dataclass(frozen=True, slots=True)
class ApprovalMode:
    id: str
    name: str
    description: str
    allowed: frozenset[Effect]
    """Run without asking."""
    refused: frozenset[Effect] = frozenset()
    """Refused without asking."""

    def verdict(self, effect: Effect) -> Verdict:
        if effect in self.refused:
            return "refuse"
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
