"""The model's plan on the ACP face: ``update_plan`` calls become ACP ``plan`` updates.

ACP shows an agent's plan (entries with a priority and a status) when the agent sends one;
the tool, its definition and its validation are the core's (:mod:`sidecar.tools.plan`, the
same on ``serve``), and the face keeps only its mapping.  The call is shown as the plan, not
as a tool call: :mod:`sidecar.acp.mapping` turns it into a ``plan`` update live and on
``session/load`` (so a loaded session shows its last plan), and its result (``plan
updated``) into nothing.  It runs in the sidecar and is never asked about.
"""

from __future__ import annotations

from typing import Any

from acp.schema import AgentPlanUpdate, PlanEntry

from protocol._base import dump_wire
from sidecar.tools.plan import DEFINITION, UPDATE_PLAN, plan_entries, updated_text

__all__ = ["PLAN_TOOL", "PlanTool", "plan_update"]

PLAN_TOOL = UPDATE_PLAN


def plan_update(arguments: dict[str, Any]) -> AgentPlanUpdate:
    """The ``plan`` update an ``update_plan`` call stands for (``ValueError``: malformed)."""
    return AgentPlanUpdate(
        session_update="plan",
        entries=[PlanEntry.model_validate(dump_wire(e)) for e in plan_entries(arguments)],
    )


class PlanTool:
    """``update_plan`` as a tool host of the run bridge."""

    definition = DEFINITION

    def offers(self, name: object) -> bool:
        return name == PLAN_TOOL

    async def approve(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"approved": True}

    async def execute(self, params: dict[str, Any]) -> dict[str, Any]:
        try:
            entries = plan_entries(params.get("arguments") or {})
        except ValueError as exc:
            return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        return {"content": [{"type": "text", "text": updated_text(entries)}], "isError": False}
