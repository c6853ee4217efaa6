"""When the masked boundary moves (sidecar/context/masking.py: ``countTurn``, ``toProtect``).

A move of the boundary re-writes the cached prompt from the first newly masked result on.
Two rules keep that re-write to what a request writes anyway:

- ``masking.countTurn``: the tool output of the turn in progress (a run's later round, with
  ``turn``) counts on the tool-output axis, so the boundary moves on the request that brings
  the new output — which writes it to the cache anyway — never on the next turn's first
  request, which would write the previous turn's output a second time;
- ``masking.toProtect``: a move masks up to the protect line where the output crossed the
  batch line, so a result larger than ``protectTokens`` that straddles the batch line is
  masked with the move, not re-written by it and masked by the next.

The session is a run's: per turn the assembly of the turn, then of the turn with its call and
result (``turn``), each lowered to Anthropic and priced by the reference cache simulator
(``sidecar/context/cache_sim.py``); then the turn is appended, as a run's loop does.
"""

from __future__ import annotations

import itertools
import random
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol.context import ContextAssembleParams
from protocol.sessions import SessionAppendParams
from sidecar.context.cache_sim import AnthropicCache
from sidecar.context.service import ContextService
from sidecar.store import Store
from tests.unit.selection_kit import READ_FILE, TOKENIZERS, coding_turn

PROTECT, BATCH = 1_000, 6_000
TURNS = 30


def _masked(prompt: dict[str, Any]) -> frozenset[int]:
    return frozenset(i["fromSeq"] for i in prompt["ledger"] if i["visibility"] == "masked")


def _run(masking: dict[str, Any], sizes: list[int]) -> list[tuple[str, frozenset[int], int]]:
    """Per request of a run's session: (round, masked seqs, tokens written to the cache)."""
    out: list[tuple[str, frozenset[int], int]] = []
    cache = AnthropicCache()
    profile = {
        "window": 120_000,
        "maxOutput": 256,
        "masking": {"protectTokens": PROTECT, "batchTokens": BATCH, **masking},
    }
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        service = ContextService(store, TOKENIZERS, home=Path(tmp) / "home")

        async def main() -> None:
            created = await store.sessions.create(
                title="moves", workspace_roots=[], profile_id=None, meta=None
            )
            sid = created.session_id
            for index, size in enumerate(sizes):
                entries = coding_turn(index, [size])
                params = ContextAssembleParams.model_validate(
                    {
                        "sessionId": sid,
                        "userTurn": entries[0]["content"],
                        "date": "2026-12-01",
                        "tools": [READ_FILE],
                        "lowerTo": "anthropic-messages",
                        "profile": profile,
                    },
                    by_alias=True,
                )
                settled = [
                    {"role": m["role"], "content": m["content"], "tokens": 0, "provenance": []}
                    for m in entries[1:3]
                ]
                for name, turn in (("first", None), ("with results", settled)):
                    answer = service.assemble(params, turn)
                    out.append((name, _masked(answer), cache.price(answer["body"]).write))
                appended = SessionAppendParams.model_validate(
                    {"sessionId": sid, "entries": entries}, by_alias=True
                ).entries
                await store.sessions.append(sid, list(appended))

        try:
            anyio.run(main)
        finally:
            store.close()
    return out


def _sizes(seed: int, low: int, high: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randint(low, high) for _ in range(TURNS)]


def _moves(requests: list[tuple[str, frozenset[int], int]]) -> dict[str, int]:
    """How many times the masked set changed, by the round that changed it."""
    out = {"first": 0, "with results": 0}
    for (_, before, _), (name, after, _) in itertools.pairwise(requests):
        if before != after:
            out[name] += 1
    return out


def test_the_boundary_moves_on_the_request_that_brings_the_new_output() -> None:
    """Mutation: the turn's output left off the axis (``turn_output`` ignored in
    ``plan_masking``) moves the boundary on the next turn's first request instead."""
    sizes = _sizes(7, 600, 2_500)
    moves = _moves(_run({}, sizes))
    assert moves["first"] == 0 and moves["with results"] >= 4, moves
    # the setting off: the same session moves on first requests, each re-writing the output
    # of the turn before (written once already, by that turn's second request)
    off = _run({"countTurn": False}, sizes)
    assert _moves(off)["first"] >= 4, _moves(off)
    on_writes = sum(w for _, _, w in _run({}, sizes))
    assert on_writes < sum(w for _, _, w in off)


@pytest.mark.parametrize("count_turn", [True, False])
def test_a_move_masks_the_result_that_straddles_the_batch_line(count_turn: bool) -> None:
    """Every result larger than ``protectTokens``: right after each move the newest result is
    the only one left whole (``toProtect``); with the grid line alone the result that straddles
    it stays whole and is re-written.  Mutation: ``toProtect`` ignored leaves two whole."""
    sizes = _sizes(11, 1_500, 4_000)  # every result over PROTECT
    requests = _run({"countTurn": count_turn}, sizes)
    results = {3 + 4 * i for i in range(TURNS)}  # the seq of each turn's result entry
    checked = 0
    for number, ((_, before, _), (name, after, _)) in enumerate(
        itertools.pairwise(requests), start=1
    ):
        if before == after:
            continue
        appended = number // 2  # turns in history at this request (two requests a turn)
        in_history = {s for s in results if s < 4 * appended}
        whole = in_history - after
        # the newest result is in history on a first request, in the turn on the second
        newest = 1 if name == "first" else 0
        assert len(whole) == newest, (number, sorted(whole))
        checked += 1
    assert checked >= 4
    off = _run({"countTurn": count_turn, "toProtect": False}, sizes)
    assert sum(w for _, _, w in requests) < sum(w for _, _, w in off)
