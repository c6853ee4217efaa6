"""Fold a session's control entries into the state selection needs.

Pins, unpins, drops and recovers are entries in history (never edits of it); the state at a
head is their fold in seq order: the last word on a target wins.  A recover undoes a drop
and also shows a masked tool result in full again (until a later drop of the same target).
The latest compaction and the activated skills are collected the same way.

A target may name a transcript group by its ledger id (``ctx_transcript_…``, the id the
ledger lists a message or a call/result group under) instead of by seq range: it is resolved
to the group's seqs here, so selection, masking and the window act on it exactly as on a
range — one path for both (a group pinned by id is kept when the window moves, one dropped by
id stays out, and says so, wherever the window starts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sidecar.context.transcript import named_group

if TYPE_CHECKING:
    from sidecar.store.history import HistoryView

__all__ = ["ControlState", "fold_controls", "target_key"]

_TRANSCRIPT_ID = "ctx_transcript_"


def target_key(target: dict[str, Any]) -> str:
    """A stable key naming what an ItemRef points at."""
    kind = target["kind"]
    if kind == "range":
        return f"range:{target['fromSeq']}-{target['throughSeq']}"
    if kind == "item":
        return f"item:{target['itemId']}"
    return f"{kind}:{target['locator']}"


@dataclass(slots=True)
class ControlState:
    compaction: dict[str, Any] | None = None
    pinned: dict[str, dict[str, Any]] = field(default_factory=dict)
    """key -> the pin entry's target, for targets currently pinned."""
    dropped: dict[str, dict[str, Any]] = field(default_factory=dict)
    activated: dict[str, dict[str, Any]] = field(default_factory=dict)
    """skill name -> its latest skillActivated entry."""
    recovered: dict[str, dict[str, Any]] = field(default_factory=dict)
    """key -> the recover entry's target, for targets recovered and not dropped since."""
    dropped_seqs: set[int] = field(default_factory=set)
    pinned_seqs: set[int] = field(default_factory=set)
    recovered_seqs: set[int] = field(default_factory=set)
    groups: dict[str, tuple[int, int]] = field(default_factory=dict)
    """key -> ``(first, last)`` seqs of the transcript group an ``item`` target names, for
    the targets above that name one (their seqs are in the ``*_seqs`` sets, as a range's)."""

    def is_dropped(self, kind: str, locator: str | None = None, item_id: str | None = None) -> bool:
        return (locator is not None and f"{kind}:{locator}" in self.dropped) or (
            item_id is not None and f"item:{item_id}" in self.dropped
        )


def fold_controls(view: HistoryView) -> ControlState:
    state = ControlState()
    named_at: dict[str, int] = {}  # key of an item target -> seq of the first entry naming it
    for record in view.controls():
        kind = record["kind"]
        if kind == "compaction":
            state.compaction = record
        elif kind == "skillActivated":
            state.activated[record["name"]] = record
        elif kind in ("pin", "unpin", "drop", "recover"):
            key = target_key(record["target"])
            if record["target"]["kind"] == "item":
                named_at.setdefault(key, record["seq"])
            if kind == "pin":
                state.pinned[key] = record["target"]
                state.dropped.pop(key, None)
            elif kind == "unpin":
                state.pinned.pop(key, None)
            elif kind == "drop":
                state.dropped[key] = record["target"]
                state.pinned.pop(key, None)
                state.recovered.pop(key, None)
            else:
                state.dropped.pop(key, None)
                state.recovered[key] = record["target"]
    for targets, seqs in (
        (state.dropped, state.dropped_seqs),
        (state.pinned, state.pinned_seqs),
        (state.recovered, state.recovered_seqs),
    ):
        for key, target in targets.items():
            if target["kind"] == "range":
                seqs.update(range(target["fromSeq"], target["throughSeq"] + 1))
            elif target["kind"] == "item" and target["itemId"].startswith(_TRANSCRIPT_ID):
                group = state.groups.get(key) or named_group(view, target["itemId"], named_at[key])
                if group is not None:
                    state.groups[key] = group
                    seqs.update(range(group[0], group[1] + 1))
    return state
