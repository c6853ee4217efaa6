"""When to compact, as a run follows an assembly's advice: one decision for every follower.

An assembly says whether to compact (``compaction.advised``, ``reason`` ``threshold`` or
``coldCache``, ``keepFromSeq``, ``transcriptTokens``).  A run's compaction
(:mod:`sidecar.runs.compaction`) follows it with paid summary calls; ``context-sidecar replay``
(:mod:`sidecar.transcripts.replay_sidecar`) prices what the sidecar would have sent, and so
must take the same decisions at the same requests.  Both ask :class:`CompactionSteps`; only
what a summary call is, and what a failure emits, is theirs.

The rules (a summary is a model call, paid): compact only when it archives history no summary
of this run stands for yet; at most :data:`COMPACTION_ATTEMPTS` summaries for one need; a
compaction because the cache is cold anyway (``coldCache``) is a saving taken once, never a
failure; a summary that made no room gives up for the rest of the run (its turn).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["COMPACTION_ATTEMPTS", "CompactionSteps", "Step", "archived_through"]

#: Compaction attempts before the run gives up (behest's circuit breaker).
COMPACTION_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class Step:
    """What to do with an assembly's advice."""

    action: Literal["compact", "stop", "give up"]
    why: str = ""
    """For ``give up``: why compaction cannot bring the transcript under the threshold."""


_STOP = Step("stop")
_COMPACT = Step("compact")


class CompactionSteps:
    """The decisions of one compaction (the summaries one round asks for, in order)."""

    def __init__(self) -> None:
        self.calls = 0
        """Summaries asked for so far (each attempt, failed or not)."""
        self._before: dict[str, Any] | None = None

    def next(self, advice: dict[str, Any], archives_more: bool) -> Step:
        """The step for ``advice`` (the latest assembly's ``compaction``); ``archives_more``:
        compacting as advised would archive history no summary of this run stands for."""
        before, self._before = self._before, advice
        if not advice["advised"]:
            return _STOP
        if advice.get("reason") == "coldCache" and (self.calls or not archives_more):
            return _STOP  # a saving taken once (or not at all), never a failure
        if before is not None and advice["transcriptTokens"] >= before["transcriptTokens"]:
            return Step("give up", "the summary made no room")  # the assembly after a summary
        if not archives_more:
            return Step(
                "give up", "nothing older than the recent part kept verbatim is left to summarize"
            )
        if self.calls == COMPACTION_ATTEMPTS:
            return Step("give up", f"{self.calls} summaries did not make room")
        self.calls += 1
        return _COMPACT

    def failed(self) -> None:
        """The summary call asked for failed: the next step decides on the same advice (the
        history did not change), not on an assembly after a summary."""
        self._before = None


def archived_through(keep: int | None, through: int) -> int:
    """The newest seq a compaction through ``through`` keeping ``keep`` onwards verbatim
    stands for (0: none)."""
    return keep - 1 if keep is not None and keep <= through else through
