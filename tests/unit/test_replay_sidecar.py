"""The sidecar's side of a replay (``sidecar/transcripts/replay_sidecar.py``, through
:func:`sidecar.transcripts.replay.replay`): a real session in a real store, every request
assembled and priced; when the assembly advises compaction the replay does what a run does —
a priced summary call and a compaction entry in the session — and a host that ignores the
advice never pays for one.  The system prompt every policy sends is the recorded size.  An
OpenAI session goes through OpenAI's lowering and its automatic prefix cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.context.cache_sim import Bill
from sidecar.store import Store
from sidecar.transcripts.pricing import rates_for
from sidecar.transcripts.read import read_transcript
from sidecar.transcripts.replay import Recorded, Replay, ReplayOptions, replay, window_check
from sidecar.transcripts.replay_report import KEEP_EVERYTHING, SIDECAR
from sidecar.transcripts.replay_views import PolicyRun, RequestFigures, user_turn_at
from tests.unit.test_replay_references import _session

SMALL = {"window": 20_000, "maxOutput": 2_000}
CODEX = Path(__file__).parents[1] / "data" / "transcripts" / "codex-rollout.jsonl"


def test_the_replay_compacts_as_a_run_does_when_the_assembly_advises_it(tmp_path: Path) -> None:
    session = _session(24)
    store = tmp_path / "store"
    result = replay(session, ReplayOptions(profile=SMALL, store=store, references=False))
    ours = result.policy(SIDECAR)
    assert ours is not None and len(ours.requests) == len(session.requests)
    assert ours.summaries >= 1
    assert ours.summary_cost > ours.summaries * 2_000 * 3.0 / 1e6  # input and output priced
    # the session holds the transcript's messages before the last request's turn and one
    # compaction entry per summary
    opened = Store(store, read_only=True)
    try:
        head = opened.sessions.get(result.session_id).head_seq
    finally:
        opened.close()
    appended = user_turn_at(session.messages, session.requests[-1].context_end)
    assert appended is not None and head == appended + ours.summaries
    # a compaction makes room: some request is smaller than the one before it
    assert any(_shrank(ours, i) for i in range(1, len(ours.requests)))
    ignoring = replay(
        session, ReplayOptions(profile=SMALL, follow_advice=False, references=False)
    ).policy(SIDECAR)
    assert ignoring is not None and ignoring.summaries == 0 and ignoring.summary_cost == 0
    assert sum(t["summaries"] for t in result.trace) == ours.summaries


def _shrank(run: PolicyRun, index: int) -> bool:
    return run.requests[index].prompt_tokens < run.requests[index - 1].prompt_tokens


def test_every_policy_sends_the_recorded_system_size() -> None:
    session = _session(3)
    result = replay(session, ReplayOptions())
    assert session.system_tokens is not None
    assert abs(result.system_tokens - session.system_tokens) <= 2
    ours, keep = result.policy(SIDECAR), result.policy(KEEP_EVERYTHING)
    assert ours is not None and keep is not None
    # the first request: the system prompt and the first user message, the same in both
    assert ours.requests[0].prompt_tokens - ours.requests[0].view_tokens == result.system_tokens
    assert keep.requests[0].prompt_tokens - keep.requests[0].view_tokens == result.system_tokens


def test_an_openai_session_is_replayed_through_openais_cache() -> None:
    session = read_transcript(CODEX)
    assert {r.provider for r in session.requests} == {"openai"}
    result = replay(session, ReplayOptions())
    assert result.model.startswith("gpt-5")
    rates = rates_for(result.model)
    assert rates.input == rates_for("gpt-5").input
    for run in result.policies:
        # OpenAI caches on its own: nothing is billed as a write, and a later request reads
        assert all(f.bill.write == 0 for f in run.requests), run.name
        assert any(f.bill.read > 0 for f in run.requests[1:]), run.name
    ours = result.policy(SIDECAR)
    assert ours is not None
    assert [f.user_turns for f in ours.requests] == [
        f.user_turns for f in result.policies[1].requests
    ]


def test_the_window_check_scales_to_the_providers_count_and_adds_the_reserve() -> None:
    run = PolicyRun("p")
    for index, tokens in enumerate((100_000, 150_000, 160_000)):
        run.requests.append(RequestFigures(index, 0.0, Bill(), 0.0, tokens, tokens, 1, 0))
    # our count of request 2 is 20% under the provider's: 160k -> 192k, + 32k > 200k
    check = window_check(run, {0: 1.0, 1: 1.0, 2: 1.2}, window=200_000, reserve=32_000)
    assert check.worst_request == 2
    assert check.worst == pytest.approx((160_000 * 1.2 + 32_000) / 200_000)
    assert check.over == 1
    # a request without a ratio of its own takes the median (1.0 here)
    median = window_check(run, {0: 1.0, 1: 1.0}, window=200_000, reserve=32_000)
    assert median.over == 0 and median.worst == pytest.approx(192_000 / 200_000)


def test_a_window_start_moving_back_is_counted_with_what_it_wrote() -> None:
    run = PolicyRun(SIDECAR)
    writes = (0, 5_000, 0, 150_000, 9_000, 0, 0)
    for index, written in enumerate(writes):
        run.requests.append(RequestFigures(index, 0.0, Bill(write=written), 0.0, 1, 1, 1, 0))
    starts = (None, 40, 40, None, 60, 20, 20)  # back at 3 (to the start) and at 5
    summaries = (0, 0, 0, 0, 0, 1, 0)  # ...but 5 follows a compaction: a new history
    trace = [
        {"request": i, "startSeq": s, "summaries": n}
        for i, (s, n) in enumerate(zip(starts, summaries, strict=True))
    ]
    result = Replay(
        path="p",
        format="pi",
        model="m",
        window=1,
        max_output=1,
        budget=1,
        system_tokens=1,
        requests=len(writes),
        new_tokens=1,
        thinking_tokens=0,
        ttl="5m",
        policies=[run],
        recorded=Recorded(),
        window_checks={},
        ratios=[],
        trace=trace,
        session_id="s",
        warnings=[],
    )
    assert result.window_moves_back() == (1, 150_000)
