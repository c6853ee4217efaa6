"""``context-sidecar inspect SNAPSHOT``: a snapshot's dashboard, ledger and diff in a terminal.

Reads the store directly and read-only (never takes the write lock), so it works beside a
running sidecar.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from protocol.context import SECTION_CATEGORIES
from sidecar.inputs.snapshots import diff_snapshots, load_snapshot

if TYPE_CHECKING:
    from sidecar.store import Store

__all__ = ["render_snapshot"]

_BAR = 48
_ORDER = SECTION_CATEGORIES
_MARKS = {
    "system": "S",
    "tools": "T",
    "instructions": "I",
    "skills": "K",
    "pinned": "P",
    "host": "H",
    "summary": "Σ",
    "transcript": "·",
    "userTurn": "U",
}


def _k(tokens: int) -> str:
    return f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)


def render_snapshot(
    store: Store, snapshot_id: str, out: TextIO, against: str | None = None
) -> None:
    snap = load_snapshot(store.blobs, snapshot_id)
    board = snap["dashboard"]
    say = out.write
    say(
        f"snapshot {snapshot_id}\n  input {snap['inputId']}  session {snap['sessionId']}  "
        f"through seq {snap['throughSeq']}\n"
    )
    limits = snap["modelLimits"]
    say(
        f"  model {limits['model']} (window {_k(limits['window'])}, output "
        f"{_k(limits['maxOutput'])}, from {limits['source']}), tokenizer {snap['tokenizer']}\n\n"
    )
    available = max(board["availableInput"], 1)
    used = max(board["used"], 1)
    bar = ""
    for category in _ORDER:  # the composition of what is used
        tokens = board["categories"].get(category, 0)
        cells = max(round(tokens / used * _BAR), 1 if tokens else 0)
        bar += _MARKS[category] * cells
    bar = bar[:_BAR].ljust(_BAR, " ")
    say(
        f"  [{bar}] {_k(board['used'])} of {_k(available)} input tokens used "
        f"({board['used'] / available * 100:.1f}%), {_k(board['free'])} free\n"
    )
    for category in _ORDER:
        tokens = board["categories"].get(category, 0)
        if tokens:
            say(
                f"   {_MARKS[category]} {category:<13}{tokens:>8}  "
                f"{tokens / available * 100:5.1f}%\n"
            )
    say(f"  {board['summary']}\n\n")
    hidden = [i for i in snap["ledger"] if i["visibility"] not in ("visible", "pinned")]
    say(f"  left out or archived ({len(hidden)}):\n" if hidden else "  nothing left out\n")
    for item in hidden[:20]:
        where = item.get("locator") or (
            f"seq {item['fromSeq']}-{item['throughSeq']}" if "fromSeq" in item else item["kind"]
        )
        say(f"   {item['visibility']:<12}{item['kind']:<12}{where:<28} {item['reason']}\n")
    breakpoints = snap["cacheBreakpoints"]
    if breakpoints:
        say("\n  cache breakpoints:\n")
        for point in breakpoints:
            say(
                f"   {point['location']:<8} prefix {_k(point['prefixTokens']):>7}  "
                f"{point.get('ttl') or 'auto':<4} {point['reason']}\n"
            )
    before = _previous(store, snap, against)
    diff = diff_snapshots(before, snap)
    say("\n  diff " + (f"against {diff['fromSnapshot']}" if before else "(first snapshot)") + "\n")
    if before:
        say(
            f"   identical prefix: {diff['prefixUnits']} units, {_k(diff['prefixTokens'])} tokens"
            f" (predicted cache hit)\n"
        )
        for label in ("sectionsAdded", "sectionsRemoved", "sectionsChanged"):
            if diff[label]:
                say(f"   {label}: {', '.join(diff[label])}\n")
        say(
            f"   messages {diff['messagesBefore']} -> {diff['messagesAfter']}, "
            f"tokens {_k(diff['totalTokensBefore'])} -> {_k(diff['totalTokensAfter'])}\n"
        )


def _previous(store: Store, snap: dict[str, Any], against: str | None) -> dict[str, Any] | None:
    if against:
        return load_snapshot(store.blobs, against)
    index = [e["snapshotId"] for e in store.snapshot_index.read(snap["sessionId"])]
    if snap["snapshotId"] in index:
        position = index.index(snap["snapshotId"])
        return load_snapshot(store.blobs, index[position - 1]) if position > 0 else None
    return None
