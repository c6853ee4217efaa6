"""The budget counts what the provider will count (issue 41; ``sidecar/context/calibration.py``).

- The factor: Claude's margin (1.25) until a usage is seen, 1.0 for a model nothing is known
  of; then the largest of the family's recent ratios times ``SPREAD``; kept in the store
  (a second :class:`Calibration` on the same root reads it); a ratio out of bounds (another
  request's usage) is not recorded.
- Over the public 471-request pi session replayed through ``context/assemble``'s path, the
  host reporting after every request that the provider counted 22% more than the sidecar
  (the under-count the issue measured of ``cl100k_base`` against Claude's tokenizer): no
  assembled request, scaled so, exceeds the window once the output reserve is added — and
  the session does fill the budget (the check is not vacuous).

Mutation tried: ``available_input`` ignoring ``count_factor``: the replay sends requests of
over 168k provider tokens with the 32k reserve on a 200k window (red).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from sidecar.context.calibration import SPREAD, Calibration, default_factor
from sidecar.context.service import ContextService
from sidecar.store import Store
from tests.unit.pi_session_kit import PI_BEFORE_COMPACTION, read_pi_turns, requests_of
from tests.unit.selection_kit import TOKENIZERS, append_entries, assemble_live, new_session

#: What Claude's tokenizer counts per ``cl100k_base`` token on the replayed sessions (issue 41).
TRUE_RATIO = 1.22


def test_the_factor_is_a_margin_until_calibrated_then_the_worst_recent_ratio(
    tmp_path: Path,
) -> None:
    assert default_factor("claude-opus-4-5") == 1.25
    assert default_factor("openrouter/anthropic/claude-sonnet-5") == 1.25
    assert default_factor("gpt-5.5") == 1.0
    calibration = Calibration(tmp_path)
    before = calibration.factor("claude-sonnet-4-5-20250929")
    assert before == {"family": "Claude Sonnet 4.5", "factor": 1.25, "samples": 0}
    assert calibration.record("claude-sonnet-4-5", 11_800, 10_000) == pytest.approx(1.18)
    assert calibration.record("claude-sonnet-4-5", 12_100, 10_000) == pytest.approx(1.21)
    assert calibration.record("claude-sonnet-4-5", 90_000, 10_000) is None  # not believable
    after = calibration.factor("claude-sonnet-4-5")
    assert after == {"family": "Claude Sonnet 4.5", "factor": round(1.21 * SPREAD, 4), "samples": 2}
    assert calibration.factor("claude-opus-4-5")["samples"] == 0  # another family
    assert Calibration(tmp_path).factor("claude-sonnet-4-5") == after  # kept in the store


@pytest.mark.skipif(not PI_BEFORE_COMPACTION.exists(), reason="the shared sessions are absent")
def test_no_request_exceeds_the_window_as_the_provider_counts_it() -> None:
    turns = read_pi_turns(PI_BEFORE_COMPACTION)
    requests = requests_of(turns)
    # the whole window's budget (no working budget): the factor is what keeps it inside
    profile = {
        "model": "claude-opus-4-5",
        "historyWindow": {"workingTokens": None, "keepUserMessages": False},
    }
    worst = 0.0
    over: list[tuple[int, int]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        try:
            service = ContextService(store, TOKENIZERS, home=Path(tmp) / "home")
            sid = new_session(store)
            appended = 0
            previous_used: int | None = None
            for index, request in enumerate(requests):
                while appended < request.turn_index:
                    append_entries(store, sid, turns[appended].entries())
                    appended += 1
                reported = (
                    {"previousUsage": {"promptTokens": round(previous_used * TRUE_RATIO)}}
                    if previous_used
                    else {}
                )
                prompt = assemble_live(
                    service,
                    sid,
                    turns[request.turn_index].user,
                    request.turn,
                    {**profile},
                    **reported,
                )
                dashboard = prompt["dashboard"]
                previous_used = dashboard["used"]
                sent = round(dashboard["used"] * TRUE_RATIO)
                worst = max(worst, sent / (dashboard["window"] - dashboard["reservedOutput"]))
                if sent + dashboard["reservedOutput"] > dashboard["window"]:
                    over.append((index, sent))
        finally:
            store.close()
    assert not over, f"requests over the window as the provider counts them: {over[:5]}"
    assert worst > 0.9, f"the session never filled the budget ({worst:.2f}): checks nothing"
