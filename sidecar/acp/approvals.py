"""Who decides whether a tool call of an ACP session runs: the session's approval mode, the
user's "always allow" answers, and ``session/request_permission``.

Every tool that could change something is in the run's ``approvalRequired``; the decision is
made here at the moment of the call, so a mode changed mid-prompt applies to the next call.

=================  ==================  ====================  ===========================
mode               edits               commands              MCP tools
=================  ==================  ====================  ===========================
``ask`` (default)  asked               asked                 asked (not read-only ones)
``accept_edits``   allowed             asked                 asked (not read-only ones)
``read_only``      refused             refused               asked (not read-only ones)
``allow_all``      allowed             allowed               allowed
=================  ==================  ====================  ===========================

An MCP tool whose server marks it ``readOnlyHint`` is never asked about.  "Always allow" is
remembered per session and tool for as long as the process lives; the mode is the session's
(kept in its ``meta``, so a loaded session keeps it).  A refusal or a rejection is an error
result the model reads, with the reason.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from acp import RequestError
from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from acp.core import AgentSideConnection

__all__ = ["APPROVAL_MODES", "DEFAULT_MODE", "Approvals", "ApprovalMode", "Effect"]

logger = logging.getLogger(__name__)

Effect = Literal["edit", "execute", "mcp", "read"]
"""What a tool does, as far as asking goes."""


@dataclass(frozen=True, slots=True)
class ApprovalMode:
    id: str
    name: str
    description: str
    allowed: frozenset[Effect]
    """Run without asking."""
    refused: frozenset[Effect] = frozenset()
    """Refused without asking."""


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

_OPTIONS = [
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
]


def mode_named(mode_id: object) -> ApprovalMode | None:
    return _BY_ID.get(mode_id) if isinstance(mode_id, str) else None


class Approvals:
    """The decisions of one connection; ``client`` is set once it is connected, ``mode_of``
    reads a session's mode id (the session's ``meta``), ``before_asking(session_id)``
    returns once what the client must see before a permission request (the call's
    ``tool_call``) is sent."""

    def __init__(
        self,
        mode_of: Callable[[str], object],
        before_asking: Callable[[str], Awaitable[None]],
    ) -> None:
        self.client: AgentSideConnection | None = None
        self._mode_of = mode_of
        self._before_asking = before_asking
        self._always: dict[str, set[str]] = {}
        """Per session: the tools the user allowed always."""

    def mode(self, session_id: str) -> ApprovalMode:
        return mode_named(self._mode_of(session_id)) or _BY_ID[DEFAULT_MODE]

    async def decide(
        self, session_id: str, tool: str, effect: Effect, call: ToolCallUpdate
    ) -> dict[str, Any]:
        """An ``ApprovalRequestResult`` (``{approved, reason?}``) for one call; ``call`` is
        what the permission request shows."""
        mode = self.mode(session_id)
        if effect in mode.refused:
            return {"approved": False, "reason": f"refused: the session is in {mode.name} mode"}
        if effect in mode.allowed or tool in self._always.get(session_id, set()):
            return {"approved": True}
        assert self.client is not None
        await self._before_asking(session_id)
        try:
            answer = await self.client.request_permission(
                session_id=session_id, tool_call=call, options=_OPTIONS
            )
        except RequestError as exc:
            return {"approved": False, "reason": f"the editor could not ask: {exc}"}
        outcome = answer.outcome
        if not isinstance(outcome, AllowedOutcome):
            return {"approved": False, "reason": "the permission request was cancelled"}
        if outcome.option_id == "allow_always":
            self._always.setdefault(session_id, set()).add(tool)
        if outcome.option_id in ("allow_once", "allow_always"):
            return {"approved": True}
        return {"approved": False, "reason": "the user rejected it"}
