"""The session's own pauses: which TTL its stable prefix should ask for, and whether its cache
is cold now (``profile.cache.fromPauses``, ``profile.cache.compactWhenCold``).

Both read the times of the session's model calls: each assistant message in the history is
a model call's answer, stamped when it was stored (``time``) — or, for a session imported
from an agent's log, when the log says it came (``meta.transcript.at``).  Only the newest
:data:`RECENT_CALLS` are read (the record cache keeps them parsed), so the cost does not
grow with the session; and nothing but the history and the request's time goes in, so a
restart decides the same.

**The TTL** (:func:`pause_ttl`).  A pause longer than 5 minutes and at most an hour between
two model calls expires every 5-minute entry, and the next request writes its whole prompt
again (1.25x the input price instead of a 0.1x read: 1.15x more per token); 1-hour entries
survive it, but every token written to one costs 2x instead of 1.25x (0.75x more).  Over the
recent calls, with ``E`` such pauses, ``L`` pauses over an hour (they expire both), ``P`` the
prompt's size and ``G`` the tokens the session grew by (what the requests wrote), an hour
pays when ``1.15 E P >= 0.75 (G + P (1 + L))``.  Then the stable prefix, the masked history
and the transcript before the new turn ask for an hour, and only the new turn's marker keeps
5 minutes (written every turn, read by the next: a pause costs it one turn's worth).  A
session with fewer than :data:`MIN_GAPS` pauses measured keeps the profile's TTLs, and an
hour needs at least :data:`MIN_EXPIRED` expired pauses (one is not a habit).

**Cold** (:func:`cache_cold`): the time from the newest model call to this request is past
the stable prefix's TTL, so the request writes the prefix again whatever it holds: the
moment to compact, the rewrite costing the same either way.
"""

from __future__ import annotations

import itertools
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from sidecar.context.limits import available_input
from sidecar.store.history import SHAPE_ASSISTANT, SHAPE_CALLS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sidecar.context.assembly_inputs import AssemblyInputs
    from sidecar.store.history import HistoryView

__all__ = [
    "LIFETIME_SECONDS",
    "MIN_EXPIRED",
    "MIN_GAPS",
    "RECENT_CALLS",
    "apply_pauses",
    "cache_cold",
    "model_call_times",
    "parse_time",
    "pause_ttl",
]

#: The model calls whose pauses are read (the newest).
RECENT_CALLS = 64
#: Pauses needed before the session's own history decides (else the profile's TTL).
MIN_GAPS = 4
#: Expired pauses among them before an hour is asked: one pause is not a habit (on the real
#: suite, an hour asked after a single pause paid 2x writes for the next one that never came).
MIN_EXPIRED = 2
LIFETIME_SECONDS = {"5m": 300.0, "1h": 3600.0}
#: What one pause in (5m, 1h] costs a 5-minute entry more than a 1-hour one (a write at
#: 1.25x instead of a read at 0.1x), and what each write of a 1-hour entry costs more (2x
#: instead of 1.25x), per token of the prefix.
_EXPIRY_COST = 1.25 - 0.1
_LONGER_WRITE_COST = 2.0 - 1.25
#: Entries scanned back from the head for model calls (bounds the walk of a session of
#: tool results with few calls).
_SCAN = 4 * RECENT_CALLS


def model_call_times(view: HistoryView, limit: int = RECENT_CALLS) -> list[tuple[int, float]]:
    """(seq, epoch seconds) of the newest ``limit`` model calls of the history (its assistant
    messages), oldest first."""
    calls: list[tuple[int, float]] = []
    shapes = view.shapes
    seq = view.head
    while seq >= 1 and len(calls) < limit and view.head - seq < _SCAN:
        if shapes[seq - 1] in (SHAPE_ASSISTANT, SHAPE_CALLS):
            at = _entry_time(view.record(seq))
            if at is not None:
                calls.append((seq, at))
        seq -= 1
    calls.reverse()
    return calls


def pause_ttl(times: Sequence[float], grown: int, prompt: int) -> Literal["5m", "1h"] | None:
    """``1h`` when the pauses between the model calls at ``times`` would expire 5-minute
    entries often enough to pay for 1-hour writes (``grown``: tokens the session grew by over
    those calls; ``prompt``: the prompt's size), ``5m`` when not, ``None`` when too few pauses
    were measured to say (see the module docstring)."""
    gaps = [b - a for a, b in itertools.pairwise(times)]
    if len(gaps) < MIN_GAPS:
        return None
    expired = sum(LIFETIME_SECONDS["5m"] < g <= LIFETIME_SECONDS["1h"] for g in gaps)
    rewritten = 1 + sum(g > LIFETIME_SECONDS["1h"] for g in gaps)
    saved = _EXPIRY_COST * expired * prompt
    paid = _LONGER_WRITE_COST * (grown + prompt * rewritten)
    return "1h" if expired >= MIN_EXPIRED and saved >= paid else "5m"


def cache_cold(times: Sequence[float], now: float, ttl: str) -> bool:
    """Whether an entry of ``ttl`` the newest model call at ``times`` refreshed has expired
    at ``now`` (no call yet: nothing to be cold)."""
    return bool(times) and now - times[-1] > LIFETIME_SECONDS.get(ttl, LIFETIME_SECONDS["5m"])


def _entry_time(record: dict[str, Any]) -> float | None:
    meta = record.get("meta")
    logged = meta.get("transcript") if isinstance(meta, dict) else None
    at = logged.get("at") if isinstance(logged, dict) else None
    if isinstance(at, int | float) and not isinstance(at, bool):
        return float(at)
    stamp = record.get("time")
    return parse_time(stamp) if isinstance(stamp, str) else None


def parse_time(stamp: str) -> float | None:
    """Epoch seconds of an ISO 8601 time (``Z`` or an offset); ``None`` if it is not one."""
    try:
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.timestamp() if parsed.tzinfo is not None else None


def apply_pauses(inputs: AssemblyInputs, now: float | None) -> None:
    """Set, in place, what the session's pauses decide for this assembly: the stable
    prefix's and the masked history's TTL (``cache.fromPauses``, Anthropic) and whether the
    cache is cold at ``now`` (``cache.compactWhenCold``; never within a turn in progress,
    whose previous round was a model call moments ago)."""
    profile = inputs.profile
    cache = profile.cache
    if not cache.from_pauses and cache.compact_when_cold is None:
        return
    view = inputs.view
    calls = model_call_times(view)
    times = [at for _, at in calls]
    if cache.from_pauses and profile.provider == "anthropic" and calls:
        grown = view.tokens_between(calls[0][0], view.head)
        prompt = min(view.tokens_between(1, view.head), available_input(inputs.limits))
        if pause_ttl(times, grown, prompt) == "1h":
            longer = cache.model_copy(update={"prefix_ttl": "1h", "history_ttl": "1h"})
            inputs.profile = profile = profile.model_copy(update={"cache": longer})
            inputs.settled_ttl = "1h"
    if cache.compact_when_cold is not None and now is not None and not inputs.turn:
        inputs.cache_cold = cache_cold(times, now, profile.marker_ttls()["prefix"])
