"""Who decides whether a tool call of an ACP session runs: the session's approval mode (the
one table of :mod:`sidecar.tools.approvals`, shared with ``serve``), the user's "always
allow" answers, and ``session/request_permission``.

Every tool that could change something is in the run's ``approvalRequired``; the decision is
made here at the moment of the call, so a mode changed mid-prompt applies to the next call.
An MCP tool whose server marks it ``readOnlyHint`` is never asked about.  In ``auto`` a
command is approved without asking to run in the sandbox (``{"approved": true, "sandboxed":
true}``: the sidecar runs it, not the editor's terminal, which no sandbox wraps); a call the
model marks ``sandbox: "escalate"``, every command where no sandbox can start, and a
sandboxed command the sandbox blocked (:meth:`Approvals.leave_sandbox`) are asked about with
"Allow once" and "Reject" only ("always" would mean "never sandbox this tool again").
"Always allow" is remembered per session and tool, in the session's ``meta`` as its mode is
(``acp.alwaysAllowed``): a session loaded by a later process, after an editor restart, does
not ask again, nor does a fork of it (it keeps the meta); another session asks anew.  Where
the session cannot be written (loaded read-only while another window holds it) the answer
holds for this process only.  A refusal or a rejection is an error result the model reads,
with the reason; a request the client answers ``cancelled`` ends the turn as
``session/cancel`` does (ACP: the outcome means the turn is being cancelled), so the model is
not called again.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from acp import RequestError
from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate

from sidecar.errors import SidecarError
from sidecar.tools.approvals import (
    ApprovalMode,
    Effect,
    default_mode,
    escalation_asked,
    mode_named,
)
from sidecar.tools.sandbox import sandbox_ready

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from acp.core import AgentSideConnection


class KeptAnswers(Protocol):
    """Where a session's "Always allow" answers are kept (``SessionConfig``)."""

    def always_allowed(self, session_id: str) -> frozenset[str]: ...

    async def allow_always(self, session_id: str, tool: str) -> None: ...


__all__ = ["Approvals", "Effect"]

logger = logging.getLogger(__name__)

_OPTIONS = [
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
]
_ONCE = [o for o in _OPTIONS if o.option_id != "allow_always"]


class Approvals:
    """The decisions of one connection; ``client`` is set once it is connected, ``mode_of``
    reads a session's mode id (the session's ``meta``), ``before_asking(session_id)``
    returns once what the client must see before a permission request (the call's
    ``tool_call``) is sent."""

    def __init__(
        self,
        mode_of: Callable[[str], object],
        before_asking: Callable[[str], Awaitable[None]],
        cancel_turn: Callable[[str], None] = lambda session_id: None,
        kept: KeptAnswers | None = None,
    ) -> None:
        self.client: AgentSideConnection | None = None
        self._mode_of = mode_of
        self._kept = kept
        """Where "Always allow" answers are kept beyond the process (the session's meta)."""
        self._before_asking = before_asking
        self._cancel_turn = cancel_turn
        """What ``session/cancel`` does: a permission answered ``cancelled`` means the client
        is cancelling the turn (ACP), so no other model round starts after it."""
        self._always: dict[str, set[str]] = {}
        """Per session: the tools the user allowed always in this process."""

    def forget(self, session_id: str) -> None:
        """The session is closed in this process (what is kept stays with the session)."""
        self._always.pop(session_id, None)

    def _allowed_always(self, session_id: str, tool: str) -> bool:
        if tool in self._always.get(session_id, ()):
            return True
        return self._kept is not None and tool in self._kept.always_allowed(session_id)

    async def _keep_always(self, session_id: str, tool: str) -> None:
        self._always.setdefault(session_id, set()).add(tool)
        if self._kept is None:
            return
        try:
            await self._kept.allow_always(session_id, tool)
        except SidecarError as exc:  # read-only here (another window holds it), or gone
            logger.info("'always allow' of %s kept for this process only: %s", tool, exc)

    def mode(self, session_id: str) -> ApprovalMode:
        return mode_named(self._mode_of(session_id)) or default_mode()

    async def decide(
        self,
        session_id: str,
        tool: str,
        effect: Effect,
        call: ToolCallUpdate,
        arguments: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """An ``ApprovalRequestResult`` (``{approved, reason?}``, and ``sandboxed`` for a
        command to run in the sandbox) for one call; ``call`` is what the permission request
        shows, ``arguments`` the call's (a ``sandbox: "escalate"`` is read there)."""
        mode = self.mode(session_id)
        verdict = mode.verdict(effect)
        if verdict == "refuse":
            return {"approved": False, "reason": f"refused: the session is in {mode.name} mode"}
        if verdict == "sandbox":
            wanted = escalation_asked(arguments or {})
            if wanted is None and await sandbox_ready() is None:
                return {"approved": True, "sandboxed": True}
            why = "run outside the sandbox" + (f": {wanted}" if wanted else "")
            return await self._ask(session_id, tool, _titled(call, why), _ONCE)
        if verdict == "allow" or self._allowed_always(session_id, tool):
            return {"approved": True}
        return await self._ask(session_id, tool, call, _OPTIONS)

    async def leave_sandbox(
        self, session_id: str, tool: str, call: ToolCallUpdate, blocked: str
    ) -> dict[str, Any]:
        """A sandboxed command failed as the sandbox makes it fail (``blocked``: what it
        stood in the way of): may it run again outside?"""
        why = f"the sandbox blocked {blocked}; run it outside the sandbox"
        return await self._ask(session_id, tool, _titled(call, why), _ONCE)

    async def _ask(
        self,
        session_id: str,
        tool: str,
        call: ToolCallUpdate,
        options: list[PermissionOption],
    ) -> dict[str, Any]:
        assert self.client is not None
        await self._before_asking(session_id)
        try:
            answer = await self.client.request_permission(
                session_id=session_id, tool_call=call, options=options
            )
        except RequestError as exc:
            return {"approved": False, "reason": f"the editor could not ask: {exc}"}
        outcome = answer.outcome
        if not isinstance(outcome, AllowedOutcome):
            # ACP: "cancelled" is the client cancelling the prompt turn (its session/cancel
            # may follow, or not): the turn ends now, as a cancel would end it
            self._cancel_turn(session_id)
            return {"approved": False, "reason": "the permission request was cancelled"}
        if outcome.option_id == "allow_always":
            await self._keep_always(session_id, tool)
        if outcome.option_id in ("allow_once", "allow_always"):
            return {"approved": True}
        return {"approved": False, "reason": "the user rejected it"}


def _titled(call: ToolCallUpdate, why: str) -> ToolCallUpdate:
    """The permission request's call with why it is asked after its title."""
    title = f"{call.title} ({why})" if call.title else why
    return call.model_copy(update={"title": title})
