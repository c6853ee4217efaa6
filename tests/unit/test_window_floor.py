"""The history window's start never moves back (issue 41; ``sidecar/context/window_floor.py``).

- A public 471-request pi session (claude-opus-4-5, 200k window), replayed request by request
  through ``context/assemble``'s path (the completed turns in history, the turn in progress
  as ``turn``): the window start, once cut, never goes back — where computed from the history
  alone it jumped forward, back to the session's start when a masking batch freed room, and
  forward again, each move re-writing the whole cached transcript.
- A synthetic coding session whose masking batches free room: the same, across a restart of
  the store and the service (the floor is kept in the store, not in the process).
- A floor whose entry is gone (the history replaced under it) is ignored.

Mutation tried: ``window_hold.floored_at`` returning ``None`` (no floor) — both replays go red
(the pi session moves back from seq 183 to seq 1 at request 218, from 439 to 183 at request
342).
"""

from __future__ import annotations

import itertools
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sidecar.context.service import ContextService
from sidecar.context.window_floor import FILE, read_floor, read_mark, record_start
from sidecar.store import Store
from sidecar.store.history import HistoryView
from tests.unit.pi_session_kit import PI_BEFORE_COMPACTION, read_pi_turns, requests_of
from tests.unit.selection_kit import (
    TOKENIZERS,
    append_entries,
    assemble_live,
    coding_turn,
    new_session,
    text,
)


@contextmanager
def _two_turns() -> Iterator[tuple[Store, str]]:
    """A store on a temporary disk with a session of two coding turns."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        try:
            sid = new_session(store)
            append_entries(store, sid, coding_turn(0, [50]) + coding_turn(1, [50]))
            yield store, sid
        finally:
            store.close()


def _view(store: Store, sid: str) -> HistoryView:
    return store.sessions.history(sid, "cl100k_base", lambda r: [1] * len(r))


def _start(prompt: dict[str, Any]) -> int:
    start = prompt["dashboard"]["historyWindow"]["startSeq"]
    return 1 if start is None else int(start)


@pytest.mark.skipif(not PI_BEFORE_COMPACTION.exists(), reason="the shared sessions are absent")
def test_the_window_start_never_moves_back_over_a_real_471_request_session() -> None:
    turns = read_pi_turns(PI_BEFORE_COMPACTION)
    requests = requests_of(turns)
    assert len(requests) >= 471
    profile = {"model": "claude-opus-4-5"}
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        try:
            service = ContextService(store, TOKENIZERS, home=Path(tmp) / "home")
            sid = new_session(store)
            appended = 0
            starts: list[int] = []
            for request in requests:
                while appended < request.turn_index:
                    append_entries(store, sid, turns[appended].entries())
                    appended += 1
                prompt = assemble_live(
                    service, sid, turns[request.turn_index].user, request.turn, profile
                )
                dashboard = prompt["dashboard"]
                assert dashboard["used"] <= dashboard["availableInput"]
                starts.append(_start(prompt))
        finally:
            store.close()
    assert max(starts) > 1, "the session never overflowed: the test checks nothing"
    back = [(i, a, b) for i, (a, b) in enumerate(itertools.pairwise(starts)) if b < a]
    assert not back, f"the window start moved back (request, from, to): {back[:5]}"
    assert len(set(starts)) <= 8, "the start moves by quanta, not request by request"


def test_the_window_start_never_moves_back_across_a_restart() -> None:
    """Masking batches (6,000 tokens of tool output) free room on a 12k window: computed from
    the history alone, the start goes back after each (seq 53 to 1, 105 to 53); the floor
    holds it, and is read again from the store by a new service after a restart."""
    profile = {
        "model": "test-model",
        "window": 12_000,
        "maxOutput": 256,
        "masking": {"protectTokens": 500, "batchTokens": 6_000},
    }
    user = [text("what now?")]
    starts: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = Store(root)
        sid = new_session(store)
        service = ContextService(store, TOKENIZERS, home=root / "home")
        try:
            for i in range(40):
                if i == 20:  # a restart: a new store and service on the same root
                    store.close()
                    store = Store(root)
                    service = ContextService(store, TOKENIZERS, home=root / "home")
                append_entries(store, sid, coding_turn(i, [1_000 + 37 * (i % 5)]))
                starts.append(_start(assemble_live(service, sid, user, [], profile)))
            floor_file = store.sessions.session_dir(sid) / FILE
            kept = json.loads(floor_file.read_bytes())["byModel"]["test-model"]
            assert kept["startSeq"] == starts[-1]
        finally:
            store.close()
    assert len(set(starts)) >= 2, f"the window never moved: {starts}"
    back = [(i, a, b) for i, (a, b) in enumerate(itertools.pairwise(starts)) if b < a]
    assert not back, f"the window start moved back (turn, from, to): {back[:5]}"


def test_a_floor_whose_entry_is_gone_is_ignored() -> None:
    with _two_turns() as (store, sid):
        view = _view(store, sid)
        path = store.sessions.session_dir(sid) / FILE
        path.write_text(json.dumps({"byModel": {"m": {"startSeq": 5, "startId": "nope"}}}))
        assert read_floor(store.sessions, sid, "m", view) is None
        right = view.record(5)["id"]
        path.write_text(json.dumps({"byModel": {"m": {"startSeq": 5, "startId": right}}}))
        assert read_floor(store.sessions, sid, "m", view) == 5
        assert read_floor(store.sessions, sid, "other-model", view) is None
        path.write_text("{not json")
        assert read_floor(store.sessions, sid, "m", view) is None


def test_a_window_that_starts_at_the_new_turn_is_the_floor_once_the_turn_is_appended() -> None:
    """A window can start at the new turn itself (``head + 1``: not in the history yet) — a
    held-out Claude Code session did, and the next request, its turn appended, started back
    where the window had started before (39,874 tokens re-written).  Such a start is kept,
    named by the entry before it, and binds once the turn is in the history; a history
    rewritten under it voids it.  Mutation tried: ``record_start`` refusing ``head + 1`` (as
    it did): red."""
    with _two_turns() as (store, sid):
        view = _view(store, sid)
        head = view.head
        record_start(store.sessions, sid, "m", view, head + 1)
        assert read_floor(store.sessions, sid, "m", view) == head + 1
        view.close()
        append_entries(store, sid, coding_turn(2, [50]))  # the new turn, appended
        view = _view(store, sid)
        assert read_floor(store.sessions, sid, "m", view) == head + 1
        record_start(store.sessions, sid, "m", view, 3)  # an earlier start: not kept
        assert read_floor(store.sessions, sid, "m", view) == head + 1
        view.close()
        path = store.sessions.session_dir(sid) / FILE
        mark = json.loads(path.read_text())["byModel"]["m"]
        path.write_text(json.dumps({"byModel": {"m": {**mark, "afterId": "gone"}}}))
        view = _view(store, sid)
        assert read_floor(store.sessions, sid, "m", view) is None
        view.close()


def test_a_floor_past_every_entry_shown_holds_the_window_at_the_turn_in_progress() -> None:
    """The other half of the case above: on the request after the one that started at the
    new turn (the turn now appended, its results coming in), nothing shown starts at or after
    the floor — every shown entry is older — so the window holds after all of them instead of
    falling back to where the history alone would start it (a held-out Claude Code session
    went back 124 entries, re-writing 63k tokens).  Mutation tried: the old ``None`` (the
    floor not binding) — red."""
    from types import SimpleNamespace

    from sidecar.context.window_hold import floored_at as _floored

    def shown(first: int, last: int) -> tuple[Any, tuple[()]]:
        return (SimpleNamespace(first_seq=first, last_seq=last), ())

    chrono: list[Any] = [
        shown(1, 4),
        shown(5, 9),
        shown(10, 14),
    ]  # three turns, user messages at 1, 5, 10
    user_starts = [0, 1, 2]
    assert _floored(chrono, user_starts, 0, None) is None
    assert _floored(chrono, user_starts, 0, 5) == 1  # a floor on a shown turn: held there
    assert _floored(chrono, user_starts, 2, 5) is None  # the start is past it already
    assert _floored(chrono, user_starts, 0, 15) == len(chrono)  # past everything shown
    assert _floored(chrono, user_starts, 0, 12) is None  # inside a shown turn: does not bind


def test_the_window_start_moves_only_when_the_history_crosses_a_grid_line() -> None:
    """The synthetic coding shape of the ``cache`` suite (150 turns, default profile), assembled
    turn by turn as a host appends it, the service made anew at turn 100 (the grid lines are
    kept in the store with the start, not in the process).  The token axis reckons only the
    masked results at a placeholder's size, so each move of the masked boundary shrinks the
    positions before a grid line and its turn drifts later: re-resolving the same line moved
    the start at turns 112, 117 and 124 (seq 425, 445, 453), each move re-writing the whole
    cached window.  Held until a line is crossed, it moves at 62 and 112 only, and never
    twice within a quantum's growth of the history.  Mutation tried: ``window_hold.same_lines``
    returning ``False`` (the lines not kept) — red (moves at 62, 69, 112, 117, 124)."""
    from bench.cache import SEEDS, _request, session, tools_for

    turns = session(150, SEEDS["coding"])
    tools = tools_for(turns)
    starts: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        try:
            sid = new_session(store)
            service = ContextService(store, TOKENIZERS, home=Path(tmp) / "home")
            for number, turn in enumerate(turns, start=1):
                if number == 100:  # a restart: what holds the start is read from the store
                    service = ContextService(store, TOKENIZERS, home=Path(tmp) / "home")
                prompt = service.assemble(_request(sid, turn, {}, tools))
                starts.append(_start(prompt))
                append_entries(store, sid, [turn.user, *turn.rest])
        finally:
            store.close()
    moves = [n for n, (a, b) in enumerate(itertools.pairwise(starts), start=2) if b != a]
    assert len(moves) >= 2, f"the window hardly moved: {moves}"
    gaps = [b - a for a, b in itertools.pairwise(moves)]
    assert min(gaps) >= 10, f"moves at turns {moves}: one within a few turns of another"


def test_the_grid_lines_are_kept_with_the_start_and_a_malformed_record_holds_nothing() -> None:
    with _two_turns() as (store, sid):
        view = _view(store, sid)
        record_start(store.sessions, sid, "m", view, 5, grids={"maxTokens": (64_000, 32_000)})
        assert read_mark(store.sessions, sid, "m", view) == (5, {"maxTokens": (64_000, 32_000)})
        path = store.sessions.session_dir(sid) / FILE
        mark = json.loads(path.read_text())["byModel"]["m"]
        for bad in ({"maxTokens": [64_000]}, {"maxTokens": ["x", 1]}, [1, 2], {"b": [True, 1]}):
            path.write_text(json.dumps({"byModel": {"m": {**mark, "grids": bad}}}))
            assert read_mark(store.sessions, sid, "m", view) == (5, None)
        record_start(store.sessions, sid, "m", view, view.head + 1, grids={"b": (1, 1)})
        assert read_mark(store.sessions, sid, "m", view) == (view.head + 1, None)
        view.close()
