"""The runs' view of an ACP connection (the :class:`~sidecar.runs.manager.RunBridge` of this
face).

- ``notify("run/event", event)`` hands the event to whoever waits on the session's prompt
  (:class:`~sidecar.acp.agent.SidecarAgent` translates it into ``session/update``\\ s); the
  journal already holds it.
- ``after_answer`` runs at once: ``session/prompt`` is answered only when its run has ended,
  so no event can overtake an answer here.
- ``tool/execute`` is answered here, not by the editor: this slice offers the model no tools
  of its own yet (the editor's ``fs/*`` and ``terminal/*`` and MCP servers come later), so a
  call the model makes anyway gets an error result it can read, and the run goes on.
- ``approval/request`` is never asked (no tool needs approval yet); answered "not approved".
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["AcpRunBridge"]

logger = logging.getLogger(__name__)


class AcpRunBridge:
    def __init__(self, deliver: Callable[[dict[str, Any]], None]) -> None:
        self._deliver = deliver

    def notify(self, method: str, params: Any) -> None:
        if method == "run/event":
            self._deliver(params)
        else:  # run/lagged cannot happen: see backlog()
            logger.debug("not forwarded to the ACP client: %s", method)

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
            return {"approved": False, "reason": "no approvals through ACP yet"}
        return {"error": f"{method} is not supported over ACP"}
