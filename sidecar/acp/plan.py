"""The model's plan: an ``update_plan`` tool whose calls become ACP ``plan`` updates.

ACP shows an agent's plan (entries with a priority and a status) when the agent sends one;
a model says what its plan is by calling ``update_plan {entries: [{content, status,
priority?}]}`` with the whole list each time (ACP's rule: the client replaces the plan).
The call is shown as the plan, not as a tool call: :mod:`sidecar.acp.mapping` turns it into a
``plan`` update live and on ``session/load`` (so a loaded session shows its last plan), and
its result (``plan updated``) into nothing.  It runs in the sidecar, is never asked about,
and a malformed call is an error result that tells the model what is wrong.
"""

from __future__ import annotations

from typing import Any

from acp.schema import AgentPlanUpdate, PlanEntry
from pydantic import ValidationError

__all__ = ["PLAN_TOOL", "PlanTool", "plan_update"]

PLAN_TOOL = "update_plan"

_DEFINITION: dict[str, Any] = {
    "name": PLAN_TOOL,
    "description": (
        "Show the user your plan for this task as a checklist. Send the whole list every "
        "time (it replaces the previous one); update statuses as you go."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "entries": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string"},
                        "status": {"enum": ["pending", "in_progress", "completed"]},
                        "priority": {"enum": ["high", "medium", "low"]},
                    },
                    "required": ["content", "status"],
                },
            }
        },
        "required": ["entries"],
    },
}


def plan_update(arguments: dict[str, Any]) -> AgentPlanUpdate:
    """The ``plan`` update an ``update_plan`` call stands for (``ValueError``: malformed)."""
    entries = arguments.get("entries")
    if not isinstance(entries, list):
        raise ValueError("'entries' must be a list of {content, status, priority?}")
    try:
        return AgentPlanUpdate(
            session_update="plan",
            entries=[
                PlanEntry.model_validate(
                    {"priority": "medium", **entry} if isinstance(entry, dict) else entry
                )
                for entry in entries
            ],
        )
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(f"malformed plan entries: {problems}") from None


class PlanTool:
    """``update_plan`` as a tool host of the run bridge."""

    definition = _DEFINITION

    def offers(self, name: object) -> bool:
        return name == PLAN_TOOL

    async def approve(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"approved": True}

    async def execute(self, params: dict[str, Any]) -> dict[str, Any]:
        try:
            plan = plan_update(params.get("arguments") or {})
        except ValueError as exc:
            return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        text = f"plan updated ({len(plan.entries)} entries)"
        return {"content": [{"type": "text", "text": text}], "isError": False}
