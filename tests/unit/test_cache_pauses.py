"""The session's own pauses (sidecar/context/cache_pauses.py): the stable prefix's TTL chosen
from them (``cache.fromPauses``) and compaction advised when the cache is cold anyway
(``cache.compactWhenCold``), through ``context/assemble``'s path on a real store."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import ValidationError

from protocol.context import ContextAssembleParams
from sidecar.context.cache_pauses import MIN_GAPS, cache_cold, pause_ttl
from sidecar.context.service import ContextService
from tests.unit.selection_kit import TOKENIZERS, GrowingSession, msg, text

if TYPE_CHECKING:
    from pathlib import Path

START = 1_780_000_000.0
MINUTE = 60.0


def _turns(gaps_minutes: list[float]) -> tuple[list[dict[str, Any]], float]:
    """A chat whose model calls (the assistant messages, with their logged times) come
    ``gaps_minutes`` apart; the time of the last one."""
    entries: list[dict[str, Any]] = []
    at = START
    for index, gap in enumerate([0.0, *gaps_minutes]):
        at += gap * MINUTE
        entries.append(msg("user", [text(f"question {index}: " + "please explain " * 40)]))
        answer = msg("assistant", [text(f"answer {index}: " + "because it works " * 60)])
        answer["meta"] = {"transcript": {"at": at}}
        entries.append(answer)
    return entries, at


def _assemble(
    service: ContextService, sid: str, cache: dict[str, Any], at: float | None, **profile: Any
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "sessionId": sid,
        "userTurn": [text("what now?")],
        "date": "2026-11-30",
        "profile": {
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            # a system prompt past the model's cacheable minimum: it carries a marker
            "fragments": {"base_identity": "You are a careful coding assistant. " * 200},
            **profile,
        },
    }
    params["profile"]["cache"] = cache
    if at is not None:
        params["at"] = datetime.fromtimestamp(at, UTC).isoformat()
    return service.assemble(ContextAssembleParams.model_validate(params, by_alias=True))


def _system_ttl(result: dict[str, Any]) -> str:
    return str(next(p["ttl"] for p in result["cacheBreakpoints"] if p["location"] == "system"))


# --- the decision, a pure function of the times -----------------------------------------------


def test_the_ttl_follows_the_pauses_a_5_minute_entry_would_not_survive() -> None:
    prompt, grown = 100_000, 20_000
    minutes = [m * MINUTE for m in range(0, 200, 2)]  # a call every 2 minutes
    assert pause_ttl(minutes, grown, prompt) == "5m"
    paused = [0.0, 600.0, 1200.0, 1800.0, 2400.0]  # 10-minute pauses
    assert pause_ttl(paused, grown, prompt) == "1h"
    # one pause is not a habit
    assert pause_ttl([0.0, 60.0, 120.0, 180.0, 600.0], grown, prompt) == "5m"
    # a pause over an hour expires both: it counts against the dearer 1-hour writes
    twice = [0.0, 60.0, 120.0, 600.0, 1200.0]
    assert pause_ttl([*twice, 10_000.0], grown, prompt) == "1h"  # 2.3 P >= 0.75 (0.2 P + 2 P)
    assert pause_ttl([*twice, 10_000.0, 20_000.0], grown, prompt) == "5m"  # 2.3 < 2.4
    # a session that grows fast writes much at 2x: not worth it
    assert pause_ttl(twice, 4 * prompt, prompt) == "5m"
    # too few pauses measured: the profile's own TTL
    assert pause_ttl(paused[:MIN_GAPS], grown, prompt) is None
    assert cache_cold([0.0, 100.0], 100.0 + 301, "5m")
    assert not cache_cold([0.0, 100.0], 100.0 + 301, "1h")
    assert not cache_cold([], 1e9, "5m")


# --- cache.fromPauses ---------------------------------------------------------------------------


def test_a_session_that_pauses_past_5_minutes_asks_1h_for_its_stable_prefix(
    tmp_path: Path,
) -> None:
    session = GrowingSession(tmp_path / "store", {}, [])
    entries, last = _turns([12, 9, 20, 7, 15, 11])
    session.append(entries)
    quick = GrowingSession(tmp_path / "store", {}, [])
    quick_entries, quick_last = _turns([1, 2, 1, 3, 1, 2])
    quick.append(quick_entries)
    try:
        on = _assemble(session.service, session.sid, {"fromPauses": True}, last + 60)
        assert _system_ttl(on) == "1h"
        # the transcript before the new turn an hour too; the new turn's marker 5 minutes
        # (longer TTLs first)
        assert [p["ttl"] for p in on["cacheBreakpoints"][-2:]] == ["1h", "5m"]
        assert (
            _system_ttl(_assemble(session.service, session.sid, {"fromPauses": False}, last + 60))
            == "5m"
        )
        # a session answering within minutes keeps 5 minutes
        assert (
            _system_ttl(_assemble(quick.service, quick.sid, {"fromPauses": True}, quick_last))
            == "5m"
        )
        # from the history alone: a restart (a new service on the same store) decides the same
        again = ContextService(session.store, TOKENIZERS, home=tmp_path / "home2")
        assert _system_ttl(_assemble(again, session.sid, {"fromPauses": True}, None)) == "1h"
    finally:
        session.close()
        quick.close()


# --- cache.compactWhenCold ----------------------------------------------------------------------


def test_compaction_is_advised_when_the_cache_is_cold_anyway(tmp_path: Path) -> None:
    session = GrowingSession(tmp_path / "store", {}, [])
    entries, last = _turns([1, 1, 1, 1, 1, 1, 1, 1])
    session.append(entries)
    cold = {"compactWhenCold": 0.05}
    small = {"window": 8_000, "maxOutput": 256}  # the transcript far from the threshold

    def advice(cache: dict[str, Any], at: float) -> dict[str, Any]:
        compaction: dict[str, Any] = _assemble(session.service, session.sid, cache, at, **small)[
            "compaction"
        ]
        return compaction

    try:
        warm = _assemble(session.service, session.sid, cold, last + 2 * MINUTE, **small)
        available = warm["dashboard"]["availableInput"]
        # past the share, short of the usual threshold
        tokens = warm["compaction"]["transcriptTokens"]
        assert available * 0.05 < tokens < warm["compaction"]["thresholdTokens"]
        assert not warm["compaction"]["advised"]
        late = last + 6 * MINUTE  # the 5-minute prefix has expired
        assert advice(cold, late)["advised"]
        # switched off: only the usual threshold
        assert not advice({"compactWhenCold": None}, late)["advised"]
        # a 1-hour prefix is still warm after 6 minutes
        assert not advice({**cold, "ttl": "1h"}, late)["advised"]
        # under the share: nothing to gain
        assert not advice({"compactWhenCold": 0.9}, late)["advised"]
        # within a turn (a later round: its previous round was a model call moments ago)
        params = ContextAssembleParams.model_validate(
            {
                "sessionId": session.sid,
                "userTurn": [text("what now?")],
                "at": datetime.fromtimestamp(late, UTC).isoformat(),
                "profile": {"model": "claude-sonnet-4-5", "cache": cold, **small},
            },
            by_alias=True,
        )
        rounds = [
            {"role": "assistant", "content": [text("looking")], "tokens": 0, "provenance": []}
        ]
        assert session.service.assemble(params)["compaction"]["advised"]
        assert not session.service.assemble(params, rounds)["compaction"]["advised"]
    finally:
        session.close()


def test_the_request_time_must_be_an_iso_time_with_an_offset() -> None:
    base = {"sessionId": "s", "userTurn": [text("hi")]}
    for bad in ("yesterday", "2026-11-30T12:00:00"):
        with pytest.raises(ValidationError, match="at:"):
            ContextAssembleParams.model_validate({**base, "at": bad}, by_alias=True)
    ok = ContextAssembleParams.model_validate({**base, "at": "2026-11-30T12:00:00Z"}, by_alias=True)
    assert ok.at == "2026-11-30T12:00:00Z"
