"""The decisions a run's compaction and ``replay`` share (``sidecar/runs/compaction_steps.py``).

Both followers ask the same object, so the replay prices the compactions a run would make at
the same requests.  Before it, the replay had its own loop, which treated a cold-cache advice
it could not act on as a failure (no more compaction for the rest of the turn, where a run
goes on and compacts at the threshold) and took a second cold compaction after the first.

Mutations tried: a cold advice that cannot archive more giving up (the second test red); the
"made no room" check before the cold one (the second red: a cold compaction that made no room
would be a failure); the "made no room" check dropped (the third red); the attempts cap off
(the fourth red).
"""

from __future__ import annotations

from typing import Any

from sidecar.runs.compaction_steps import COMPACTION_ATTEMPTS, CompactionSteps, archived_through


def _advice(tokens: int, reason: str = "threshold", advised: bool = True) -> dict[str, Any]:
    return {"advised": advised, "reason": reason, "transcriptTokens": tokens}


def test_not_advised_stops_and_an_advice_that_archives_compacts() -> None:
    steps = CompactionSteps()
    assert steps.next(_advice(100, advised=False), archives_more=True).action == "stop"
    steps = CompactionSteps()
    assert steps.next(_advice(100), archives_more=True).action == "compact"
    assert steps.calls == 1
    assert steps.next(_advice(60, advised=False), archives_more=True).action == "stop"


def test_a_cold_cache_compaction_is_taken_once_and_never_a_failure() -> None:
    steps = CompactionSteps()
    assert steps.next(_advice(100, "coldCache"), archives_more=False).action == "stop"
    steps = CompactionSteps()
    assert steps.next(_advice(100, "coldCache"), archives_more=True).action == "compact"
    # after the summary the cache is still "cold" by the clock: not a second summary
    assert steps.next(_advice(80, "coldCache"), archives_more=True).action == "stop"
    steps = CompactionSteps()
    assert steps.next(_advice(100, "coldCache"), archives_more=True).action == "compact"
    # a cold compaction that made no room is not a failure either: it was a saving, not a need
    assert steps.next(_advice(100, "coldCache"), archives_more=True).action == "stop"


def test_a_summary_that_made_no_room_gives_up() -> None:
    steps = CompactionSteps()
    assert steps.next(_advice(100), archives_more=True).action == "compact"
    step = steps.next(_advice(100), archives_more=True)
    assert step.action == "give up"
    assert "no room" in step.why


def test_nothing_left_to_archive_gives_up_and_attempts_are_capped() -> None:
    step = CompactionSteps().next(_advice(100), archives_more=False)
    assert step.action == "give up"
    assert "nothing older" in step.why
    steps = CompactionSteps()
    for _ in range(COMPACTION_ATTEMPTS):  # every summary call fails: the same advice again
        assert steps.next(_advice(100), archives_more=True).action == "compact"
        steps.failed()
    step = steps.next(_advice(100), archives_more=True)
    assert step.action == "give up"
    assert f"{COMPACTION_ATTEMPTS} summaries" in step.why


def test_archived_through() -> None:
    assert archived_through(None, 40) == 40
    assert archived_through(31, 40) == 30
    assert archived_through(41, 40) == 40  # a tail past the head keeps nothing back
