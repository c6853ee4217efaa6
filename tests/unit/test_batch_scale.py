"""The working budget grown for sessions of large tool rounds (sidecar/context/batch_scale.py).

``masking.batchRounds``: while the default batch (five twelfths of the working budget) holds
fewer than ``batchRounds`` rounds of the session's own output, the working budget doubles and
the batch is five eighths of it; the output per round is measured every
:data:`~sidecar.context.batch_scale.MEASURED_EVERY` rounds.  Here a working budget of 8,000
tokens (batch 3,333) under rounds of 1,200-1,500 tokens (four rounds: 4,800-6,000): the
budget doubles to 16,000, the batch is 10,000, protect stays 666.
"""

from __future__ import annotations

import itertools
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest

from sidecar.context.batch_scale import MEASURED_EVERY
from tests.unit.selection_kit import READ_FILE, GrowingSession, coding_turn

WORKING = 8_000
TURNS = 40


def _grow(
    masking: dict[str, Any], sizes: list[int], window: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """``dashboard.masking`` at each turn of a session of one result a turn."""
    profile = {
        "window": 100_000,
        "historyWindow": window or {"workingTokens": WORKING},
        "masking": masking,
    }
    states = []
    with tempfile.TemporaryDirectory() as tmp:
        session = GrowingSession(Path(tmp), profile, [READ_FILE])
        try:
            for index, size in enumerate(sizes):
                states.append(session.assemble()["dashboard"]["masking"])
                session.append(coding_turn(index, [size]))
        finally:
            session.close()
    return states


def _large(seed: int = 4) -> list[int]:
    rng = random.Random(seed)
    return [rng.randint(1_200, 1_500) for _ in range(TURNS)]


def test_large_rounds_grow_the_budget_and_the_batch_once_measured() -> None:
    """Mutation: ``working_scale`` answering ``None`` keeps the 3,333-token batch."""
    states = _grow({}, _large())
    for rounds, state in enumerate(states):  # ``rounds`` results in history at that turn
        grown = rounds >= MEASURED_EVERY
        expected = (WORKING // 12, 10_000) if grown else (WORKING // 12, WORKING * 5 // 12)
        assert (state["protectTokens"], state["batchTokens"]) == expected, rounds


def test_with_the_grown_batch_the_boundary_moves_every_four_rounds_at_most() -> None:
    """What it is for: moves of the masked boundary (each a cache re-write) at most every
    ``batchRounds`` rounds once grown; the budget as set moves every other round."""

    def grid(state: dict[str, Any]) -> int:  # the batch line the output last crossed
        return int(
            state["toolTokens"]
            + state["nextMoveIn"]
            - state["batchTokens"]
            - state["protectTokens"]
        )

    def gaps(states: list[dict[str, Any]]) -> list[int]:
        moved = [
            i
            for i in range(MEASURED_EVERY + 1, len(states))
            if grid(states[i]) != grid(states[i - 1])
        ]
        return [b - a for a, b in itertools.pairwise(moved)]

    grown = gaps(_grow({}, _large()))
    assert grown and min(grown) >= 4, grown
    fixed = gaps(_grow({"batchRounds": None}, _large()))
    assert fixed and min(fixed) <= 2, fixed


@pytest.mark.parametrize(
    ("masking", "window"),
    [
        ({}, {"workingTokens": WORKING, "maxTokens": WORKING}),  # an explicit cap stays small
        ({"batchTokens": 3_000}, None),  # an explicit batch is the batch
        ({}, None),  # small rounds: four fit in the batch as set
    ],
)
def test_the_budget_stays_as_set(masking: dict[str, Any], window: dict[str, Any] | None) -> None:
    sizes = [300] * TURNS if masking == {} and window is None else _large()
    batch = masking.get("batchTokens", WORKING * 5 // 12)
    states = _grow(masking, sizes, window)
    assert {s["batchTokens"] for s in states} == {batch}
