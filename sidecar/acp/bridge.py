"""The runs' view of an ACP connection (the :class:`~sidecar.runs.events.RunBridge` of this
face).

- ``notify("run/event", event)`` hands the event to whoever waits on the session's prompt
  (:class:`~sidecar.acp.agent.SidecarAgent` translates it into ``session/update``\\ s); the
  journal already holds it.
- ``after_answer`` runs at once: ``session/prompt`` is answered only when its run has ended,
  so no event can overtake an answer here.
- ``tool/execute`` and ``approval/request`` of a tool the session offers go to the tool host
  offering it (:class:`~sidecar.acp.tools.EditorTools`: the editor's ``fs/*``,
  ``terminal/*`` and ``session/request_permission``; :class:`~sidecar.acp.mcp_servers.McpServers`:
  the session's MCP servers), within the run's tool timeout; a call of any other tool gets an
  error result the model can read, and the run goes on.
- Every execution goes through the approval decision: a ``tool/execute`` of a call the run
  did not send ``approval/request`` for (a tool left out of its ``approvalRequired``, as a
  ``_context-sidecar/run/start`` run may leave any) is decided here first, by the same host's
  ``approve`` — so the session's approval mode holds for every run, however it was started.
  Read-only tools are allowed there at once, in any mode.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Protocol

import anyio

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["AcpRunBridge", "ToolHost", "ToolHosts"]

logger = logging.getLogger(__name__)


class ToolHost(Protocol):
    """Runs the tools an ACP session offers (wire JSON in and out, as the run loop sends)."""

    def offers(self, name: object) -> bool: ...

    async def approve(self, params: dict[str, Any]) -> dict[str, Any]:
        """An ``ApprovalRequestResult``: ``{approved, reason?}``."""
        ...

    async def execute(self, params: dict[str, Any]) -> dict[str, Any]:
        """A ``ToolExecuteResult``: ``{content, isError}``."""
        ...


class ToolHosts:
    """Several tool hosts as one: a call goes to the first that offers its tool."""

    def __init__(self, *hosts: ToolHost) -> None:
        self._hosts = hosts

    def _host(self, name: object) -> ToolHost:
        return next(h for h in self._hosts if h.offers(name))

    def offers(self, name: object) -> bool:
        return any(h.offers(name) for h in self._hosts)

    async def approve(self, params: dict[str, Any]) -> dict[str, Any]:
        return await self._host(params.get("name")).approve(params)

    async def execute(self, params: dict[str, Any]) -> dict[str, Any]:
        return await self._host(params.get("name")).execute(params)


class AcpRunBridge:
    def __init__(
        self, deliver: Callable[[dict[str, Any]], None], tools: ToolHost | None = None
    ) -> None:
        self._deliver = deliver
        self._tools = tools
        self._approved: set[tuple[str, str]] = set()
        """(runId, callId) of the calls approved by ``approval/request``, until executed."""

    def notify(self, method: str, params: Any) -> None:
        if method == "run/event":
            self._deliver(params)
        else:  # run/lagged cannot happen: see backlog()
            logger.debug("not forwarded to the ACP client: %s", method)

    def send_event(
        self, line: bytes, journaled: Callable[[], None], event: dict[str, Any] | None = None
    ) -> None:
        journaled()  # the prompt sends it later, as a session/update: written first
        self._deliver(event if event is not None else json.loads(line))

    def after_answer(self, fn: Callable[[], object]) -> None:
        fn()

    def host_assembles(self) -> bool:
        return False

    def backlog(self) -> int:
        """Always 0: events go to the prompt's queue, and the prompt sends them one by one,
        waiting on the transport's flow control; the manager's lag bound is for ``serve``,
        whose events go straight to the wire."""
        return 0

    async def request(self, method: str, params: Any, timeout_s: float) -> Any:
        tools = self._tools
        if tools is not None and isinstance(params, dict) and tools.offers(params.get("name")):
            call = (str(params.get("runId")), str(params.get("callId")))
            with anyio.fail_after(timeout_s):
                if method == "tool/execute":
                    if call in self._approved:
                        self._approved.discard(call)
                    else:  # not asked by the run: decided now, as the session's mode says
                        answer = await tools.approve(params)
                        if answer.get("approved") is not True:
                            return _not_approved(answer.get("reason"))
                    return await tools.execute(params)
                if method == "approval/request":
                    answer = await tools.approve(params)
                    if answer.get("approved") is True:
                        self._approved.add(call)
                    return answer
        if method == "tool/execute":
            name = params.get("name") if isinstance(params, dict) else None
            return {
                "content": [
                    {
                        "type": "text",
                        "text": f"tool {name!r} is not available in this editor session",
                    }
                ],
                "isError": True,
            }
        if method == "approval/request":
            return {"approved": False, "reason": "not a tool of this editor session"}
        return {"error": f"{method} is not supported over ACP"}


def _not_approved(reason: object) -> dict[str, Any]:
    """The error result of a call refused at execution (worded as the run loop words one
    refused by ``approval/request``)."""
    text = f"not approved: {reason or 'denied'}"
    return {"content": [{"type": "text", "text": text}], "isError": True}
