"""The runs' view of an ACP connection (the :class:`~sidecar.runs.manager.RunBridge` of this
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

    def notify(self, method: str, params: Any) -> None:
        if method == "run/event":
            self._deliver(params)
        else:  # run/lagged cannot happen: see backlog()
            logger.debug("not forwarded to the ACP client: %s", method)

    def send_event(self, line: bytes, event: dict[str, Any] | None = None) -> None:
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
            with anyio.fail_after(timeout_s):
                if method == "tool/execute":
                    return await tools.execute(params)
                if method == "approval/request":
                    return await tools.approve(params)
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
