"""Where the history window's start holds (DESIGN.md §4 stage 6; :mod:`sidecar.context.window`).

The caps put the start on a grid line; two rules hold it where the session's window last
started (its *floor*, :mod:`sidecar.context.window_floor`):

- **Never back** (:func:`floored_at`): when a move of the masked boundary frees room, the
  natural cut moves back (to the session's first turn when the whole transcript fits again);
  taking it would re-write the whole cached transcript for the one turn until it moves forward
  again (issue 41: 1.0-1.2M tokens of cache writes in a 471-request session).
- **Not on until a line is crossed** (:func:`same_lines`, :func:`held_while_it_fits`): the
  token axis reckons only the *masked* results at a placeholder's size, so a move of the masked
  boundary shrinks the positions before a grid line and the line's turn drifts later;
  re-resolving the same line moved the start a few turns at a time, each move re-writing the
  whole cached transcript (the synthetic coding session: 425, 445, 453 within twelve turns).
  Each cap's line and quantum are kept with the floor; while no cap's line is past its own and
  the transcript from the floor fits, the start holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from sidecar.context.masking import Masked
    from sidecar.context.transcript import Group

__all__ = [
    "HELD",
    "STILL",
    "Grids",
    "Shown",
    "floored_at",
    "held_while_it_fits",
    "same_lines",
]

#: Per cap (``budget``, ``maxTokens``, ``maxMessages``): (the grid line its start was snapped
#: to, its quantum).
Grids = dict[str, tuple[int, int]]
#: A group the walk can show, as shown (masked), and what masking replaced in it.
Shown = tuple["Group", tuple["Masked", ...]]

#: Why the window start is later than the caps alone would put it.
HELD = "held at the session's last window start (it never moves back)"
STILL = "held at the session's last window start until the history crosses the next grid line"


def floored_at(
    chrono: list[Shown], user_starts: list[int], start: int, floor: int | None
) -> int | None:
    """The chronological index the window starts at when ``floor`` (the session's last
    window start) is later than ``start``: its first user turn at or after the floor;
    ``len(chrono)`` when the floor is past every entry shown (the window last started at the
    turn now in progress); ``None`` when the floor does not bind (no floor, the start is past
    it, or no user turn after it is shown while entries after it are)."""
    if floor is None or start >= len(chrono) or chrono[start][0].first_seq >= floor:
        return None
    held = _turn_at(chrono, user_starts, floor)
    if held is None and chrono[-1][0].last_seq < floor:
        # the window last started at a turn after everything shown (the turn in progress,
        # appended since): it holds there — only the user's messages before it are shown
        return len(chrono)
    return held


def _turn_at(chrono: list[Shown], user_starts: list[int], seq: int) -> int | None:
    """The chronological index of the first shown user turn at or after ``seq``."""
    return next((i for i in user_starts if chrono[i][0].first_seq >= seq), None)


def same_lines(lines: Grids, floor_grids: Grids | None) -> bool:
    """Whether no cap's grid line (``lines``, this assembly's) is past the one the window's
    last start was snapped to, on the same quantum; a cap that cuts nothing (line 0) holds
    nothing back."""
    if not floor_grids:
        return False
    for name, (line, quantum) in lines.items():
        kept, kept_quantum = floor_grids.get(name, (0, quantum))
        if line > 0 and (kept_quantum != quantum or line > kept):
            return False
    return True


def held_while_it_fits(
    chrono: list[Shown],
    user_starts: list[int],
    start: int,
    floor: int | None,
    overflows: Callable[[int], bool],
) -> int | None:
    """The chronological index of the session's last window start (``floor``) when ``start``
    is past it and the transcript from it still fits every cap (``overflows``: whether a
    start at an index does not); else ``None``."""
    if floor is None:
        return None
    held = _turn_at(chrono, user_starts, floor)
    if held is None or held >= start or overflows(held):
        return None
    return held
