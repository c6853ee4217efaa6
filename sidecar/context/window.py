"""The history window (DESIGN.md §4 stage 6): which transcript groups the model sees.

The transcript (after masking) is walked newest first by whole groups.  When it all fits, all
of it is shown, from its first user turn.  When it does not fit — the room the budget leaves,
``historyWindow.maxTokens`` or ``historyWindow.maxMessages`` — the window start does **not**
follow the overflow group by group (that re-writes the whole cached transcript on every
turn).  It moves by a *quantum* and then holds still:

1. For each cap, the natural cut ``k`` is the oldest user turn from which the transcript fits.
2. Positions are measured from the start of the candidate transcript on a fixed axis — tokens
   (a masked tool result reckoned at a nominal placeholder size) or messages — read from the
   store's running sums, so an entry's position never changes once written.
3. The cut snaps forward to the grid of that axis: the window starts at the first user turn
   at or after ``ceil(position(k) / quantum) * quantum``.  As the history grows, ``k`` moves
   a little every turn, but the snapped start moves only when ``k`` crosses the next grid
   line: once per quantum (a share of the room, of ``maxTokens``, or of ``maxMessages``).
4. The caps' starts are combined (the latest wins) and checked against the exact sizes; a
   start that still overflows moves on by whole quanta.

The window start is a function of the history, the profile and the input, and of one fact
kept beside the history: where the session's window last started, with the grid lines it was
snapped to (``Caps.floor``, ``Caps.floor_grids``, :mod:`sidecar.context.window_floor`).  It
never moves back before it, nor on until the history crosses a next line
(:mod:`sidecar.context.window_hold`).  Pins, drops, blocked groups, and compaction summaries
work as before the window: pinned groups are shown on top of it; a dropped or blocked group is
left out without ending the walk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sidecar.context.ledger import ledger_item
from sidecar.context.masking import (
    Masked,
    MaskPlan,
    kept_whole,
    mask_group,
    shown_tokens_between,
)
from sidecar.context.transcript import Group, TranscriptRange, iter_groups
from sidecar.context.window_hold import (
    HELD,
    STILL,
    Grids,
    Shown,
    floored_at,
    held_while_it_fits,
    same_lines,
)

if TYPE_CHECKING:
    from sidecar.context.controls import ControlState
    from sidecar.context.transcript import MessageCounter
    from sidecar.store.history import HistoryView

__all__ = ["KEEP_RECENT_TOKENS", "Caps", "TranscriptWindow", "select_window"]

#: Recent transcript tokens a compaction should keep verbatim (thndrs/Codex: 20,000), or a
#: quarter of the available input for small windows.
KEEP_RECENT_TOKENS = 20_000
#: Default quantum of the budget's room (Cline drops a quarter or a half, then holds still).
BUDGET_QUANTUM = 0.25
#: Default quantum of an explicit ``maxTokens`` / ``maxMessages``: such windows are small, so
#: a quarter of one is a few turns; half keeps cache re-writes rare (``bench/cache.py``: a
#: 50-message window reads 77% of its input from the cache with half, 61% with a quarter).
CAP_QUANTUM = 0.5


@dataclass(frozen=True, slots=True)
class Caps:
    """What bounds the transcript for one assembly."""

    room: int
    """Tokens the budget leaves for the transcript."""
    steady_room: int
    """The room with the current turn left aside: the base of the budget's quantum, so the
    grid does not shift with the length of each user turn."""
    available: int
    """The whole input budget: a group larger than it is ``blocked``."""
    max_messages: int | None
    max_tokens: int | None
    quantum: float | None
    """``historyWindow.quantum``; ``None``: :data:`BUDGET_QUANTUM` / :data:`CAP_QUANTUM`."""
    floor: int | None = None
    """The seq the session's window last started at: the start never moves before it."""
    floor_grids: Grids | None = None
    """The grid line each cap's start was snapped to when the window last moved (to
    :attr:`floor`), with its quantum: while no cap's line is past its own, the start holds at
    the floor (:func:`~sidecar.context.window_hold.same_lines`)."""
    users_tokens: int = 0
    users_messages: int = 0
    """What a host's explicit cap keeps for the user's earlier messages besides the window
    (``keepUserMessages``; :attr:`max_tokens` and :attr:`max_messages` are the window's
    part): said in the ledger."""


@dataclass(slots=True)
class TranscriptWindow:
    groups: list[Group]
    """Shown, chronological."""
    ledger: list[dict[str, Any]]
    tokens: int
    start_seq: int | None
    """Where the window starts when a cap cut the transcript."""
    keep_from: int | None
    """A suggested ``keepFromSeq`` for compaction (the newest ~20k tokens, on a user turn)."""
    state: dict[str, Any] = field(default_factory=dict)
    """``dashboard.historyWindow``: where the window starts, what binds it, how far it moves
    and how much growth it takes before it moves (wire-shaped)."""
    grids: Grids = field(default_factory=dict)
    """The caps' grid lines for this start: kept with it when the start moves
    (:mod:`sidecar.context.window_floor`)."""


@dataclass(slots=True)
class _Cap:
    """One bound on the transcript, with its axis and quantum."""

    name: str
    limit: int
    reserve: int
    quantum: int
    position: Callable[[int], int]
    """Position of a seq on this cap's axis: what lies before it in the candidate."""
    unit: str
    cause: str
    accepted: int | None = None
    """Groups (newest first) the cap accepts; ``None`` while it has not overflowed."""
    grid: int = 0
    start: int = 0

    def size(self, tokens: int, messages: int) -> int:
        return messages if self.unit == "messages" else tokens


@dataclass(slots=True)
class _Walk:
    shown: list[Shown] = field(default_factory=list)
    """Newest first."""
    fits: list[int] = field(default_factory=lambda: [0])
    """``fits[k]``: tokens of the ``k`` newest shown groups (as shown)."""
    counts: list[int] = field(default_factory=lambda: [0])
    """``counts[k]``: messages of the ``k`` newest shown groups."""
    starts: list[int] = field(default_factory=list)
    """Indexes in :attr:`shown` of the groups that start on a user turn."""
    ledger: list[dict[str, Any]] = field(default_factory=list)
    recent: int = 0
    keep_from: int | None = None
    """The start of the newest ~20k tokens (a quarter of small budgets), on a user turn:
    counted over every group walked, shown or not."""


def select_window(
    view: HistoryView,
    candidate: TranscriptRange,
    controls: ControlState,
    pinned_seqs: set[int],
    plan: MaskPlan | None,
    caps: Caps,
    count: MessageCounter,
) -> TranscriptWindow:
    """The transcript groups shown under ``caps``, with their ledger items."""
    origin = candidate.spans[0][0] if candidate.spans else 1
    axes = _caps(view, origin, plan, caps)
    walk = _walk(view, candidate, controls, pinned_seqs, plan, caps, axes, count)
    starts = walk.starts
    # chronological suffix sums over the shown groups (exact tokens and messages from each):
    # the walk's newest-first prefix sums, reversed
    chrono = walk.shown[::-1]
    tokens_from = walk.fits[::-1]
    messages_from = walk.counts[::-1]
    user_starts = [len(chrono) - 1 - i for i in reversed(starts)]  # chronological indexes

    def first_start(cap: _Cap, at_least: int) -> int:
        """Chronological index of the first user turn at or after ``at_least`` on the cap's
        axis (``len(chrono)``: none, the window is empty)."""
        for index in user_starts:
            if index >= at_least and cap.position(chrono[index][0].first_seq) >= cap.grid:
                return index
        return len(chrono)

    for cap in axes:
        if cap.accepted is None:  # fits whole: the window starts at the first user turn
            cap.grid, natural = 0, 0
        else:
            oldest = [i for i in starts if i < cap.accepted]
            natural = len(chrono) - 1 - oldest[-1] if oldest else len(chrono)
            at = (
                cap.position(chrono[natural][0].first_seq)
                if natural < len(chrono)
                else cap.position(view.head + 1)
            )
            cap.grid = -(-at // cap.quantum) * cap.quantum
        cap.start = first_start(cap, natural)

    def over_at(index: int) -> list[_Cap]:
        return [
            cap for cap in axes if cap.size(tokens_from[index], messages_from[index]) > cap.limit
        ]

    while True:  # the exact check: a start that still overflows moves on by whole quanta
        start = max(cap.start for cap in axes)
        over = over_at(start)
        if not over or start >= len(chrono):  # nothing left to leave out (a room under 0)
            break
        for cap in over:  # placeholders reckoned at their nominal size: step to the next turn
            cap.start = next((i for i in user_starts if i > start), len(chrono))
    binding = max(axes, key=lambda c: (c.start, c.accepted is not None))
    lines = {cap.name: (cap.grid, cap.quantum) for cap in axes}
    floored, held_why = floored_at(chrono, user_starts, start, caps.floor), HELD
    if floored is None and same_lines(lines, caps.floor_grids):
        floored = held_while_it_fits(
            chrono, user_starts, start, caps.floor, lambda i: bool(over_at(i))
        )
        held_why = STILL
    if floored is not None:
        start = floored
    ledger = walk.ledger
    shown = chrono[start:]
    append = ledger.append
    kept = plan is not None and bool(plan.exempt_seqs or plan.exempt_ids)
    for group, masked in reversed(shown):
        item = group.shown_item.copy()  # once per shown group: a copy of the group's own
        append(item)
        if masked:
            item["reason"] += f"; {len(masked)} older tool result(s) masked"
            if plan is not None:
                ledger += [_masked_item(m, plan) for m in masked]
        if kept:
            assert plan is not None
            ledger += [_kept_item(*k) for k in kept_whole(view, group, plan)]
    cut = floored is not None or any(cap.accepted is not None or cap.grid > 0 for cap in axes)
    start_seq = shown[0][0].first_seq if shown else view.head + 1
    if cut and start_seq > origin:
        cause = binding.cause if floored is None else held_why
        ledger.append(
            ledger_item(
                "transcript",
                f"older:{origin}-{start_seq - 1}",
                "candidate",
                f"{cause}: older than the window start at seq {start_seq}; "
                f"the window moves in ~{binding.quantum:,} {binding.unit}",
                view.tokens_between(origin, start_seq - 1),
                first=origin,
                last=start_seq - 1,
            )
        )
    else:
        for group, _ in chrono[:start]:
            ledger.append(
                ledger_item(
                    "transcript",
                    group.ledger_id,
                    "candidate",
                    "left out so the history starts on a user turn",
                    group.tokens,
                    first=group.first_seq,
                    last=group.last_seq,
                )
            )
    return TranscriptWindow(
        groups=[group for group, _ in shown],
        ledger=ledger,
        tokens=tokens_from[start],
        start_seq=start_seq if cut else None,
        keep_from=walk.keep_from,
        state=_state(axes, start_seq if cut else None, tokens_from[start], messages_from[start]),
        grids=lines,
    )


def _state(axes: list[_Cap], start_seq: int | None, tokens: int, messages: int) -> dict[str, Any]:
    """The cap nearest to moving the start (least room left, as a share of its limit)."""
    cap = min(axes, key=lambda c: (c.limit - c.size(tokens, messages)) / max(c.limit, 1))
    return {
        "startSeq": start_seq,
        "boundBy": cap.name,
        "unit": cap.unit,
        "limit": cap.limit,
        "quantum": cap.quantum,
        "roomLeft": max(cap.limit - cap.size(tokens, messages), 0),
    }


def _caps(view: HistoryView, origin: int, plan: MaskPlan | None, caps: Caps) -> list[_Cap]:

    def tokens_at(seq: int) -> int:
        return shown_tokens_between(view, plan, origin, seq - 1)

    def messages_at(seq: int) -> int:
        return view.messages_between(origin, seq - 1)

    out = [
        _Cap(
            "budget",
            caps.room,
            0,
            max(int(caps.steady_room * (caps.quantum or BUDGET_QUANTUM)), 1),
            tokens_at,
            "tokens",
            "older than what fits in the budget",
        )
    ]
    if caps.max_tokens is not None:
        out.append(
            _Cap(
                "maxTokens",
                caps.max_tokens,
                0,
                max(int(caps.max_tokens * (caps.quantum or CAP_QUANTUM)), 1),
                tokens_at,
                "tokens",
                f"outside the history window ({caps.max_tokens} tokens"
                + _besides(caps.users_tokens, "")
                + ")",
            )
        )
    if caps.max_messages is not None:
        out.append(
            _Cap(
                "maxMessages",
                caps.max_messages,
                0,
                max(int(caps.max_messages * (caps.quantum or CAP_QUANTUM)), 1),
                messages_at,
                "messages",
                f"outside the history window ({caps.max_messages} messages"
                + _besides(caps.users_messages, " message")
                + ")",
            )
        )
    return out


def _besides(kept: int, unit: str) -> str:
    return f", and {kept}{unit} for the user's earlier messages" if kept else ""


def _walk(
    view: HistoryView,
    candidate: TranscriptRange,
    controls: ControlState,
    pinned_seqs: set[int],
    plan: MaskPlan | None,
    caps: Caps,
    axes: list[_Cap],
    count: MessageCounter,
) -> _Walk:
    """Groups newest first, masked, until every cap has overflowed (on the transcript as if
    masking were not batched): what any window start can show."""
    walk = _Walk()

    dropped_seqs = controls.dropped_seqs
    hidden: Callable[[int], bool]
    if not pinned_seqs:  # a set's own __contains__: no Python frame per entry walked
        hidden = dropped_seqs.__contains__
    elif not dropped_seqs:
        hidden = pinned_seqs.__contains__
    else:

        def hidden(seq: int) -> bool:
            return seq in dropped_seqs or seq in pinned_seqs

    # a drop is listed whether or not the window reaches it: a range under a key of its own,
    # a group named by its ledger id under that id (its seqs are hidden like a range's)
    for key, target in controls.dropped.items():
        if target["kind"] == "range":
            first, last = target["fromSeq"], target["throughSeq"]
            ident = f"dropped:{first}-{last}"
        elif key in controls.groups:
            (first, last), ident = controls.groups[key], target["itemId"]
        else:
            continue
        walk.ledger.append(
            ledger_item(
                "transcript",
                ident,
                "dropped",
                "dropped by a drop entry",
                view.tokens_between(first, last),
                first=first,
                last=last,
            )
        )
    # the loop below runs once per group walked (hundreds per assembly): what it needs is
    # bound to locals
    shown_groups = walk.shown
    fits, counts, starts = walk.fits, walk.counts, walk.starts
    available = caps.available
    recent_limit = min(KEEP_RECENT_TOKENS, available // 4)
    recent = 0
    keep_from = None
    through_seq = plan.through_seq if plan is not None else 0
    open_caps = [(cap, cap.unit == "messages", cap.limit - cap.reserve) for cap in axes]
    fit = messages = 0
    for group in iter_groups(view, candidate, hidden, count):
        if plan is not None:
            shown, masked = mask_group(view, group, plan, through_seq, count)
        else:
            shown, masked = group, ()
        tokens = shown.tokens
        if recent < recent_limit:
            recent += tokens
            if group.starts_on_user_turn:
                keep_from = group.first_seq
        if tokens > available:
            reason = f"larger than the whole input budget ({tokens} > {available})"
            walk.ledger.append(_group_item(shown, "blocked", reason))
            continue
        fit += tokens
        messages += len(shown.messages)
        closed = False
        for cap, by_messages, bound in open_caps:
            if (messages if by_messages else fit) > bound:
                cap.accepted = len(shown_groups)
                closed = True
        if closed:
            open_caps = [entry for entry in open_caps if entry[0].accepted is None]
            if not open_caps:
                break
        if shown.starts_on_user_turn:
            starts.append(len(shown_groups))
        shown_groups.append((shown, masked))
        fits.append(fit)
        counts.append(messages)
    walk.recent = recent
    walk.keep_from = keep_from
    return walk


def _group_item(group: Group, visibility: str, reason: str) -> dict[str, Any]:
    return ledger_item(
        "transcript",
        group.ledger_id,
        visibility,
        reason,
        group.tokens,
        first=group.first_seq,
        last=group.last_seq,
    )


def _kept_item(seq: int, ident: str, tokens: int) -> dict[str, Any]:
    return ledger_item(
        "transcript",
        ident,
        "visible",
        "tool output old enough to be masked, shown in full: pinned or recovered "
        "(session/recover, or the model's recall)",
        tokens,
        first=seq,
        last=seq,
    )


def _masked_item(masked: Masked, plan: MaskPlan) -> dict[str, Any]:
    return ledger_item(
        "transcript",
        masked.item_id,
        "masked",
        f"tool output older than the newest {plan.protect:,} tokens of tool output: shown as "
        f"a {masked.shown_tokens}-token placeholder (masked in batches of {plan.batch:,} "
        "tokens); session/recover shows it in full",
        masked.tokens,
        first=masked.seq,
        last=masked.seq,
    )
