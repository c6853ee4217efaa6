"""The model's todo list: the ``update_plan`` tool, one definition and one validator for both
faces.

A model keeps a short list of steps with statuses by calling ``update_plan {entries:
[{content, status, priority?}]}`` with the whole list each time (it replaces the one before).
The list lives in the conversation as tool calls, never in the system prompt: the prefix the
prompt cache pays for does not change when the plan does.  ``serve`` runs it as a built-in
tool (:mod:`sidecar.runs.builtin`: a ``plan.updated`` event per call); the ACP face turns
its calls into ACP ``plan`` updates (:mod:`sidecar.acp.plan`).  It is read-only (never
asked about); a malformed call is an error result that tells the model what is wrong.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from protocol.tools import PlanEntry

__all__ = ["DEFINITION", "UPDATE_PLAN", "plan_entries", "updated_text"]

UPDATE_PLAN = "update_plan"

DEFINITION: dict[str, Any] = {
    "name": UPDATE_PLAN,
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

_FIELDS = ("content", "status", "priority")


def plan_entries(arguments: dict[str, Any]) -> list[PlanEntry]:
    """The list an ``update_plan`` call stands for (``priority`` defaults to ``medium``, keys
    the schema does not name are ignored); ``ValueError`` says what is malformed."""
    entries = arguments.get("entries")
    if not isinstance(entries, list):
        raise ValueError("'entries' must be a list of {content, status, priority?}")
    problems: list[str] = []
    parsed: list[PlanEntry] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            problems.append(f"entries.{i}: must be an object {{content, status, priority?}}")
            continue
        try:
            parsed.append(PlanEntry.model_validate({k: entry[k] for k in _FIELDS if k in entry}))
        except ValidationError as exc:
            problems += [
                f"entries.{i}.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                for e in exc.errors()
            ]
    if problems:
        raise ValueError(f"malformed plan entries: {'; '.join(problems)}")
    return parsed


def updated_text(entries: list[PlanEntry]) -> str:
    """The result the model reads after a well-formed call."""
    return f"plan updated ({len(entries)} entries)"
