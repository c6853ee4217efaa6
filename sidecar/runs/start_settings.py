"""A run's start settings: kept in its record, turned into what its loop runs with, and read
back by ``run/resume``.

``run/start`` keeps exactly what a run was started with in its record (``settings``: the
profile's content as it was, approvals, tool timeout, round limit, delegation, compaction,
built-in tools, the script's blob).  ``run/resume`` reads them back (:func:`started_with`;
a record written before they were kept gets defaults and approval before every tool), and
continues from the turn as history holds it (:func:`history_turn`): the calls of its last
round left without a result (:func:`unanswered`) are asked of the host again — but a built-in
command that had started (:func:`started_commands`) is answered as interrupted — and a
script plays on from the model calls already made (:func:`played_model_calls`).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from protocol._base import dump_wire
from protocol.runs import RunStartSettings
from protocol.snapshots import ProfileInput
from sidecar.runs.loop_state import RunSettings
from sidecar.tools.catalog import EFFECTS

if TYPE_CHECKING:
    from protocol.inputs import FrozenInput
    from sidecar.inputs.profiles import Effective
    from sidecar.runs.journal import RunJournal

__all__ = [
    "history_turn",
    "loop_settings",
    "plain_profile",
    "played_model_calls",
    "started_commands",
    "started_with",
    "unanswered",
]

logger = logging.getLogger(__name__)


def plain_profile(profile: ProfileInput | None) -> ProfileInput | None:
    """A profile's content without its stored id (a stored ``Profile`` is a ``ProfileInput``
    plus ``profileId``)."""
    if profile is None:
        return None
    data = dump_wire(profile)
    data.pop("profileId", None)
    return ProfileInput.model_validate(data, by_alias=True)


def loop_settings(
    started: RunStartSettings,
    max_rounds: int,
    input_id: str,
    frozen: FrozenInput,
    effective: Effective,
) -> RunSettings:
    """What the run loop runs with, from the settings a run was started with."""
    return RunSettings(
        max_rounds=max_rounds,
        tool_timeout_s=started.tool_timeout_ms / 1000,
        approval_required=frozenset(started.approval_required),
        input_id=input_id,
        frozen=frozen,
        effective=effective,
        compaction=started.compaction,
        delegation=started.delegation,
    )


def started_with(old: dict[str, Any], frozen: FrozenInput) -> tuple[RunStartSettings, bool]:
    """The settings a run was started with, and whether they had to be defaulted: a record
    written before they were kept gets run/start's defaults plus approval before every tool
    of the input (which tools needed it is unknown, and one the user meant to approve must
    not run unasked)."""
    if "settings" in old:
        return RunStartSettings.model_validate(old["settings"], by_alias=True), False
    logger.warning(
        "run %s was recorded without its start settings: resuming it with the defaults and "
        "approval before every tool",
        old["runId"],
    )
    return RunStartSettings(approval_required=sorted(t.name for t in frozen.tools)), True


def history_turn(
    entries: list[dict[str, Any]], revision_guidance: str | None
) -> list[dict[str, Any]]:
    """The turn as history holds it after the input's head, as prompt messages: the user
    message and every settled round after it, then the revision guidance, if any."""
    turn = [
        {
            "role": e["role"],
            "content": e["content"],
            "tokens": 0,
            "provenance": [
                {
                    "kind": "transcript",
                    "id": e["id"],
                    "fromSeq": e["seq"],
                    "throughSeq": e["seq"],
                }
            ],
        }
        for e in entries
        if e["kind"] == "message"
    ]
    if revision_guidance:
        turn.append(
            {
                "role": "user",
                "content": [{"type": "text", "text": revision_guidance}],
                "tokens": 0,
                "provenance": [{"kind": "userTurn", "id": "revision"}],
            }
        )
    return turn


def played_model_calls(journal: RunJournal) -> int:
    """Model calls a run made, sub-agents' and compaction summaries' included: the rounds of
    a script it played (each call plays one)."""
    return sum(
        e["type"] in ("model.requestCreated", "compaction.started") for e in journal.iter_after(0)
    )


def started_commands(journal: RunJournal, pending: list[dict[str, Any]]) -> frozenset[str]:
    """The calls among ``pending`` of a built-in command (effect ``execute``) that the run of
    ``journal`` had started: approved (``tool.approval``, written before the command
    starts).  A resume answers them as interrupted instead of running them a second time;
    a call that had not got that far runs as it would have."""
    commands = {c["callId"] for c in pending if EFFECTS.get(c["name"]) == "execute"}
    if not commands:
        return frozenset()
    started: set[str] = set()
    for _, line in journal.lines_after(0):
        if b'"tool.approval"' in line:  # decode only the few lines that can matter
            event = json.loads(line)
            payload = event["payload"]
            if event["type"] == "tool.approval" and payload.get("approved") is True:
                started.add(payload["callId"])
    return frozenset(commands & started)


def unanswered(turn: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls of the last assistant message that have no stored result."""
    last_calls: list[dict[str, Any]] = []
    answered: set[str] = set()
    for message in turn:
        parts = message["content"]
        if message["role"] == "assistant":
            last_calls = [p for p in parts if p["type"] == "toolCall"]
            answered = set()
        else:
            answered |= {p["callId"] for p in parts if p["type"] == "toolResult"}
    return [c for c in last_calls if c["callId"] not in answered]
