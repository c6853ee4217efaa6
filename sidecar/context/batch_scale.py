"""The working budget grown for sessions whose tool rounds return a lot (``masking.batchRounds``).

Under the working budget (``historyWindow.workingTokens``, 64k by default) the masked
boundary moves by five twelfths of it (~27k).  A session whose commands return logs of 10k
tokens crosses that every two or three rounds, and every move re-writes the cached transcript
after the newly masked results; its requests are small beside what each round adds, so most
of what it sends is written, not read.  So the batch is made to hold at least ``batchRounds``
rounds of the session's own output: while it does not, the working budget doubles (within the
input budget), and the batch takes five eighths of it — the masked history and the turns' own
text do not grow with the size of a command's log, so what the doubling adds goes to the
batch; ``protectTokens`` stays what the budget as set gives it.

The output per round is the mean over the session's tool rounds, read at every 8th round
(:data:`MEASURED_EVERY`) from the store's running sums (O(1)): the budget is a function of the
history that changes at most once per 8 rounds, and the window and the masked boundary hold
still between changes.  On the ``cache`` bench's shapes (``bench/cache.py``): a session of
command logs (~10k tokens a round) doubles to 128k and reads 90.0% from the cache on a run's
requests instead of 84.3% (at $3.39 instead of $3.04 on the appended path: the larger view
is read on every request); coding (~3k a round) and chat (no tools) keep 64k.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sidecar.context.masking import BATCH_SHARE, PROTECT_SHARE, PROTECT_TOKENS

if TYPE_CHECKING:
    from protocol.context import PromptProfile
    from sidecar.store.history import HistoryView

__all__ = ["MEASURED_EVERY", "SCALED_BATCH_SHARE", "WorkingScale", "working_scale"]

#: The output per round is measured at every this-many-th tool round.
MEASURED_EVERY = 8
#: The batch's share of a grown working budget.
SCALED_BATCH_SHARE = 5 / 8
#: The working budget grows at most this many times.
MAX_SCALE = 8


@dataclass(frozen=True, slots=True)
class WorkingScale:
    """The working budget for one assembly, and the masking sizes that go with it."""

    scale: int
    working_tokens: int
    protect_tokens: int
    batch_tokens: int
    per_round: int
    """Tool output per round, as last measured."""


def working_scale(view: HistoryView, profile: PromptProfile, available: int) -> WorkingScale | None:
    """The grown working budget, or ``None`` when it stays as set (no growth needed, or the
    profile does not ask for it)."""
    policy = profile.masking_policy()
    window = profile.history_window
    working = window.working_tokens
    if (
        policy.mode == "off"
        or policy.batch_rounds is None
        or policy.batch_tokens is not None
        or working is None
        or window.max_tokens is not None
        or window.max_messages is not None
    ):
        return None
    measured = view.results_between(1, view.head) // MEASURED_EVERY * MEASURED_EVERY
    if measured == 0:
        return None
    per_round = view.tool_tokens_through(view.seq_of_result(measured)) // measured
    room = min(available, working)
    batch = room * BATCH_SHARE
    scale = 1
    while batch * scale < policy.batch_rounds * per_round and scale < MAX_SCALE:
        scale *= 2
    if scale == 1 or working >= available:
        return None
    grown = min(working * scale, available)
    protect = (
        policy.protect_tokens
        if policy.protect_tokens is not None
        else min(PROTECT_TOKENS, int(room * PROTECT_SHARE))
    )
    return WorkingScale(scale, grown, protect, int(grown * SCALED_BATCH_SHARE), per_round)
