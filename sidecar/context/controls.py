"""Fold a session's control entries into the state selection needs.

Pins, unpins, drops and recovers are entries in history (never edits of it); the state at a
head is their fold in seq order: the last word on a target wins.  A recover undoes a drop
and also shows a masked tool result in full again (until a later drop of the same target).
The latest compaction and the activated skills are collected the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sidecar.store.history import HistoryView

__all__ = ["ControlState", "fold_controls", "target_key"]


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

    def is_dropped(self, kind: str, locator: str | None = None, item_id: str | None = None) -> bool:
        return (locator is not None and f"{kind}:{locator}" in self.dropped) or (
            item_id is not None and f"item:{item_id}" in self.dropped
        )


def fold_controls(view: HistoryView) -> ControlState:
    state = ControlState()
    for record in view.controls():
        kind = record["kind"]
        if kind == "compaction":
            state.compaction = record
        elif kind == "skillActivated":
            state.activated[record["name"]] = record
        elif kind in ("pin", "unpin", "drop", "recover"):
            key = target_key(record["target"])
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
        for target in targets.values():
            if target["kind"] == "range":
                seqs.update(range(target["fromSeq"], target["throughSeq"] + 1))
    return state
