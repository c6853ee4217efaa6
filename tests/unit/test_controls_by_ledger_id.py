"""Pin, unpin, drop and recover of a transcript group named by its ledger id.

The ledger lists a message, or a tool call with its results, under one id (``ctx_transcript_…``
of the group's first entry); a host pins or drops what it was shown by that id.  Such a control
must act exactly as one on the group's seq range (``sidecar/context/controls.py`` resolves the
id to the seqs, one path for both):

- pinned, the group is kept when the history window moves past it (``maxMessages`` and
  ``maxTokens``), shown whole (never masked) in its place, under one ``pinned`` ledger item;
  unpinned, it goes again and the prompt is what it was before the pin;
- a pinned group older than the window start does not re-write the cached prefix between
  window moves;
- dropped, it stays out and the ledger lists it as ``dropped`` wherever the window starts;
  a drop beats a pin of the group's range, as a drop of the range does; recover undoes it.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.context import PromptProfile
from sidecar.jsonbytes import canonical
from tests.unit.selection_kit import READ_FILE, GrowingSession, coding_turn
from tests.unit.test_window import _start

PROFILE: dict[str, Any] = {
    "window": 100_000,
    "masking": {"protectTokens": 3000, "batchTokens": 2000},
    # the transcript's own messages only (the user's hidden messages are another test's)
    "historyWindow": {"keepUserMessages": False},
}
TURNS = 24
#: The caps that move the window far past the first turn's group (seqs 2-3).
CAPS = {"maxMessages": {"max_messages": 8}, "maxTokens": {"max_tokens": 3000}}


@pytest.fixture
def grown() -> Iterator[GrowingSession]:
    """``TURNS`` coding turns: turn ``i`` is seqs ``4i+1..4i+4``, its call/result group
    ``4i+2..4i+3``; the oldest results are masked."""
    with tempfile.TemporaryDirectory() as tmp:
        session = GrowingSession(Path(tmp), PROFILE, [READ_FILE])
        rng = random.Random(12)
        for i in range(TURNS):
            session.append(coding_turn(i, [rng.randint(150, 700) for _ in range(2)]))
        try:
            yield session
        finally:
            session.close()


def _capped(profile: PromptProfile, **cap: Any) -> PromptProfile:
    window = profile.history_window.model_copy(update=cap)
    return profile.model_copy(update={"history_window": window})


def _seqs(prompt: dict[str, Any]) -> list[int]:
    """Seqs of the transcript messages, in prompt order (the user turn left out)."""
    return [m["provenance"][0]["fromSeq"] for m in prompt["messages"][:-1]]


def _items(prompt: dict[str, Any], item_id: str) -> list[tuple[str, int, int]]:
    return [
        (i["visibility"], i["fromSeq"], i["throughSeq"])
        for i in prompt["ledger"]
        if i["itemId"] == item_id
    ]


def _group_id(prompt: dict[str, Any], first: int, last: int) -> str:
    (item,) = [
        i
        for i in prompt["ledger"]
        if i["kind"] == "transcript" and (i.get("fromSeq"), i.get("throughSeq")) == (first, last)
    ]
    assert item["itemId"].startswith("ctx_transcript_")
    return str(item["itemId"])


def _control(kind: str, item_id: str) -> list[dict[str, Any]]:
    return [{"kind": kind, "target": {"kind": "item", "itemId": item_id}}]


@pytest.mark.parametrize("cap", CAPS.values(), ids=CAPS.keys())
def test_a_group_pinned_by_its_ledger_id_is_kept_when_the_window_moves(
    grown: GrowingSession, cap: dict[str, int]
) -> None:
    """Mutation: without the id resolved to the group's seqs (``fold_controls``), the group
    is only exempt from masking and vanishes with the window (the colleague's report)."""
    whole = grown.assemble()
    group = _group_id(whole, 2, 3)
    assert 3 in {i["fromSeq"] for i in whole["ledger"] if i["visibility"] == "masked"}
    grown.profile = _capped(grown.profile, **cap)
    cut = grown.assemble()
    start = _start(cut)
    assert start is not None and start > 3 and not {2, 3} & set(_seqs(cut))

    grown.append(_control("pin", group))
    pinned = grown.assemble()
    assert _items(pinned, group) == [("pinned", 2, 3)]
    (item,) = [i for i in pinned["ledger"] if i["itemId"] == group]
    assert item["reason"].startswith("pinned")
    # kept in its place, before the window, which did not move for it
    assert _start(pinned) == start
    assert _seqs(pinned)[:2] == [2, 3] and min(_seqs(pinned)[2:]) >= start
    # whole: the call and its result as stored, nothing masked, counted as pinned
    view = grown.view()
    for message in pinned["messages"][:2]:
        seq = message["provenance"][0]["fromSeq"]
        assert message["content"] == view.record(seq)["content"]
    assert 3 not in {i["fromSeq"] for i in pinned["ledger"] if i["visibility"] == "masked"}
    assert pinned["dashboard"]["categories"]["pinned"] == item["tokens"]

    grown.append(_control("unpin", group))
    unpinned = grown.assemble()
    assert "pinned" not in [v for v, _, _ in _items(unpinned, group)]
    assert canonical(unpinned["messages"]) == canonical(cut["messages"])


def test_a_pin_by_ledger_id_is_a_pin_of_the_groups_seq_range(grown: GrowingSession) -> None:
    """One path: the prompt, ledger and dashboard are the same whichever way it was pinned."""
    group = _group_id(grown.assemble(), 2, 3)
    grown.profile = _capped(grown.profile, **CAPS["maxMessages"])
    grown.append(_control("pin", group))
    by_id = grown.assemble()
    grown.append(
        [
            *_control("unpin", group),
            {"kind": "pin", "target": {"kind": "range", "fromSeq": 3, "throughSeq": 3}},
        ]
    )
    by_range = grown.assemble()
    for key in ("messages", "ledger", "dashboard"):
        assert canonical(by_id[key]) == canonical(by_range[key]), key


def test_a_group_pinned_by_id_outside_the_window_keeps_the_cached_prefix() -> None:
    """Between window moves, each turn's transcript is a byte prefix of the next one's, the
    pinned group first.  Mutation: rendering pinned groups after the window (next to the
    user turn) re-writes the transcript from the window start on every turn."""
    with tempfile.TemporaryDirectory() as tmp:
        session = GrowingSession(
            Path(tmp),
            {
                "window": 100_000,
                "masking": "off",
                "historyWindow": {"maxMessages": 24, "keepUserMessages": False},
            },
            [READ_FILE],
        )
        rng = random.Random(5)
        try:
            session.append(coding_turn(0, [300, 200]))
            session.append(_control("pin", _group_id(session.assemble(), 2, 3)))
            previous: bytes | None = None
            previous_start: int | None = None
            moves = holds = 0
            for i in range(1, 40):
                session.append(coding_turn(i, [rng.randint(150, 700)]))
                prompt = session.assemble()
                seqs = _seqs(prompt)
                assert seqs == sorted(seqs) and {2, 3} <= set(seqs)  # in its place
                transcript = canonical(prompt["messages"][:-1])[:-1]
                start = _start(prompt)
                assert start is None or seqs[:3] == [2, 3, start]
                if previous is not None and start is not None:
                    if start == previous_start:
                        holds += 1
                        assert transcript.startswith(previous), f"turn {i}: prefix re-written"
                    else:
                        moves += 1
                previous, previous_start = transcript, start
            assert moves >= 2 and holds >= moves
        finally:
            session.close()


@pytest.mark.parametrize("window", [100_000, 6_000], ids=["whole", "cut by the budget"])
def test_a_group_dropped_by_its_ledger_id_is_listed_wherever_the_window_starts(
    grown: GrowingSession, window: int
) -> None:
    """Mutation: with the drop matched only by the window's walk (as before), a window that
    starts after the group loses its ledger item (and a pin of its range showed it again)."""
    group = _group_id(grown.assemble(), 2, 3)
    grown.profile = grown.profile.model_copy(update={"window": window})
    grown.append(_control("drop", group))
    dropped = grown.assemble()
    assert _items(dropped, group) == [("dropped", 2, 3)]
    assert not {2, 3} & set(_seqs(dropped))
    assert (_start(dropped) is None) == (window == 100_000)
    # a drop beats a pin of the group's range, as a drop of the range does
    grown.append([{"kind": "pin", "target": {"kind": "range", "fromSeq": 3, "throughSeq": 3}}])
    both = grown.assemble()
    assert _items(both, group) == [("dropped", 2, 3)]
    assert not {2, 3} & set(_seqs(both))
    # recovered, the pin of the range holds again
    grown.append(_control("recover", group))
    recovered = grown.assemble()
    assert _items(recovered, group) == [("pinned", 2, 3)]
    assert {2, 3} <= set(_seqs(recovered))
