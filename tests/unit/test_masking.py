"""Observation masking (sidecar/context/masking.py) over a growing synthetic coding session.

The rule under test: with ``T`` the tool output of the whole history, a result entry whose
tool output ends at or before ``M`` is shown as a placeholder inside its call/result group;
nothing else is.  ``M`` is the protect line where the output crossed the last batch line
``floor((T - protect) / batch) * batch`` (``masking.toProtect``; the batch line itself when
it is off).  So the newest ``protect`` tokens of
tool output are always whole, the boundary moves only in batches (the transcript of one turn is
a byte prefix of the next turn's between moves), a pinned or recovered result stays whole, and
``masking: "off"`` turns it off.  The oracle sums the entries' own token counts; it does not
use the store's running sums the implementation reads.
"""

from __future__ import annotations

import itertools
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sidecar.context.masking import observation_id
from sidecar.context.tokens import count_entries
from sidecar.jsonbytes import canonical, dumps_bytes
from tests.unit.selection_kit import READ_FILE, TOKENIZERS, GrowingSession, coding_turn
from tests.unit.test_selection import _assert_lowered_pairs

PROTECT, BATCH = 3000, 2000
PROFILE: dict[str, Any] = {
    "window": 100_000,
    "masking": {"protectTokens": PROTECT, "batchTokens": BATCH},
}
TURNS = 24


def _sizes(rng: random.Random) -> list[int]:
    return [rng.randint(150, 700) for _ in range(rng.randint(1, 3))]


@pytest.fixture
def grown() -> Iterator[GrowingSession]:
    """A session of ``TURNS`` coding turns (results at seqs 3, 7, 11, ...)."""
    with tempfile.TemporaryDirectory() as tmp:
        session = GrowingSession(Path(tmp), PROFILE, [READ_FILE])
        rng = random.Random(12)
        for i in range(TURNS):
            session.append(coding_turn(i, _sizes(rng)))
        try:
            yield session
        finally:
            session.close()


def _masked(prompt: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {i["fromSeq"]: i for i in prompt["ledger"] if i["visibility"] == "masked"}


def _expected_masked(
    session: GrowingSession, protect: int, batch: int, to_protect: bool = True
) -> set[int]:
    """The rule, from the entries' own token counts: the grid line, or (``toProtect``) the
    protect line where the output crossed it."""
    view = session.view()
    results = [s for s in range(1, view.head + 1) if (s - 3) % 4 == 0]
    total = sum(view.tokens(s) for s in results)
    boundary = max(total - protect, 0) // batch * batch
    if to_protect and boundary:
        ends = list(itertools.accumulate(view.tokens(s) for s in results))
        crossed = next(end for end in ends if end >= boundary + protect)
        boundary = min(crossed, total) - protect
    out, running = set(), 0
    for seq in results:
        running += view.tokens(seq)
        if boundary and running <= boundary:
            out.add(seq)
    return out


def _message_at(prompt: dict[str, Any], seq: int) -> dict[str, Any]:
    return next(m for m in prompt["messages"] if m["provenance"][0].get("fromSeq") == seq)


@pytest.mark.parametrize("to_protect", [True, False])
def test_the_boundary_keeps_the_newest_tool_output_and_masks_what_is_older(
    to_protect: bool,
) -> None:
    profile = {**PROFILE, "masking": {**PROFILE["masking"], "toProtect": to_protect}}
    with tempfile.TemporaryDirectory() as tmp:
        session = GrowingSession(Path(tmp), profile, [READ_FILE])
        rng = random.Random(3)
        reached = 0
        try:
            for i in range(TURNS):
                prompt = session.assemble()
                expected = _expected_masked(session, PROTECT, BATCH, to_protect)
                assert set(_masked(prompt)) == expected, i
                reached = max(reached, len(expected))
                view = session.view()
                whole = [view.tokens(s) for s in range(3, view.head + 1, 4) if s not in expected]
                # the newest `protect` tokens of tool output are never masked
                assert sum(whole) >= min(
                    PROTECT, sum(whole) + sum(view.tokens(s) for s in expected)
                )
                session.append(coding_turn(i, _sizes(rng)))
        finally:
            session.close()
    assert reached >= 10  # the session did mask, many times over


def test_the_boundary_moves_in_batches_and_holds_the_prefix_between_moves() -> None:
    """Between two moves the serialized transcript of turn N is a byte prefix of turn N+1's;
    a move masks at least a batch less one result (mutation: ``batch = 1`` masks a little
    every turn and fails the count)."""
    with tempfile.TemporaryDirectory() as tmp:
        session = GrowingSession(Path(tmp), PROFILE, [READ_FILE])
        rng = random.Random(5)
        previous: bytes | None = None
        previous_masked: dict[int, dict[str, Any]] = {}
        moves = holds = 0
        total = largest = 0
        try:
            for i in range(40):
                prompt = session.assemble()
                transcript = canonical(prompt["messages"][:-1])[:-1]  # without the closing "]"
                masked = _masked(prompt)
                if previous is not None:
                    if masked.keys() == previous_masked.keys():
                        holds += 1
                        assert transcript.startswith(previous), f"turn {i} rewrote its prefix"
                    else:
                        moves += 1
                        assert previous_masked.keys() <= masked.keys()
                        freed = sum(masked[s]["tokens"] for s in masked.keys() - previous_masked)
                        assert freed >= BATCH - largest, (i, freed)
                previous, previous_masked = transcript, masked
                sizes = _sizes(rng)
                session.append(coding_turn(i, sizes))
                view = session.view()
                total += view.tokens(view.head - 1)
                largest = max(largest, view.tokens(view.head - 1))
        finally:
            session.close()
    assert moves >= 5 and holds >= moves
    assert moves <= (total - PROTECT) // BATCH + 1


def test_a_placeholder_keeps_its_call_and_names_the_way_back(
    grown: GrowingSession,
) -> None:
    prompt = grown.assemble()
    masked = _masked(prompt)
    seq = min(masked)
    item = masked[seq]
    record = grown.view().record(seq)
    assert item["itemId"] == observation_id(record["id"])
    assert item["tokens"] == grown.view().tokens(seq)  # the size it would have whole
    assert "older than the newest 3,000 tokens of tool output" in item["reason"]
    assert "batches of 2,000 tokens" in item["reason"]
    message = _message_at(prompt, seq)
    results = [p for p in message["content"] if p["type"] == "toolResult"]
    original = [p for p in record["content"] if p["type"] == "toolResult"]
    assert [p["callId"] for p in results] == [p["callId"] for p in original]
    for part, whole in zip(results, original, strict=True):
        (body,) = part["content"]
        index = whole["callId"].split("_")[-1]
        path = f"src/mod0_{index}.py"
        assert body["text"].startswith(
            f'[older tool output masked to save context: read_file {{"path": "{path}"}}'
        )
        assert f"ledger id {item['itemId']}" in body["text"]
        assert "session/recover" in body["text"]
        assert body["text"].endswith("…")
        preview = body["text"].split("\npreview:\n", 1)[1]
        assert whole["content"][0]["text"].startswith(preview[:-1])
        assert len(preview) == 301
    # the call before it is untouched; providers still see a well-formed pair
    call_message = _message_at(prompt, seq - 1)
    assert call_message["content"] == grown.view().record(seq - 1)["content"]
    call_ids = {
        p["callId"] for m in prompt["messages"] for p in m["content"] if p["type"] == "toolCall"
    }
    _assert_lowered_pairs(prompt, call_ids)


def test_placeholders_are_counted_at_their_size_and_the_spliced_json_is_exact(
    grown: GrowingSession,
) -> None:
    tokenizer = TOKENIZERS.get(None)
    first, first_json = grown.assemble_with_json()
    again, again_json = grown.assemble_with_json()  # groups now come from the cache
    assert first == again and first_json == again_json
    assert first_json == dumps_bytes(first["messages"])
    masked = _masked(first)
    assert masked
    for seq in masked:
        message = _message_at(first, seq)
        (counted,) = count_entries(tokenizer, [{"kind": "message", "content": message["content"]}])
        assert message["tokens"] == counted < masked[seq]["tokens"]
    transcript = sum(m["tokens"] for m in first["messages"][:-1])
    assert first["dashboard"]["categories"]["transcript"] == transcript
    visible = [
        i for i in first["ledger"] if i["kind"] == "transcript" and i["visibility"] == "visible"
    ]
    assert sum(i["tokens"] for i in visible) == transcript
    assert f"{len(masked)} masked" in first["dashboard"]["summary"]


def test_a_pinned_result_is_never_masked(grown: GrowingSession) -> None:
    masked = _masked(grown.assemble())
    by_range, by_id = sorted(masked)[:2]
    grown.append(
        [
            {
                "kind": "pin",
                "target": {"kind": "range", "fromSeq": by_range, "throughSeq": by_range},
            },
            {"kind": "pin", "target": {"kind": "item", "itemId": masked[by_id]["itemId"]}},
        ]
    )
    prompt = grown.assemble()
    now = _masked(prompt)
    assert by_range not in now and by_id not in now
    assert set(now) >= set(masked) - {by_range, by_id}
    for seq in (by_range, by_id):
        assert _message_at(prompt, seq)["content"] == grown.view().record(seq)["content"]
    pinned = [i for i in prompt["ledger"] if i["visibility"] == "pinned"]
    assert [(i["fromSeq"], i["throughSeq"]) for i in pinned] == [(by_range - 1, by_range)]


def test_a_group_pinned_by_its_ledger_id_is_never_masked(grown: GrowingSession) -> None:
    """A pin may name the call/result group by the id the ledger lists it under
    (``ctx_transcript_…`` of its first entry), not the result's own observation id: its
    results are shown whole, and the ledger lists the group once, pinned, as for a pin of its
    range (its results again under their own ids would count their tokens twice).  Mutation:
    without the id resolved to the group's seqs (``fold_controls``) the result is masked.
    The window keeping such a group: tests/unit/test_controls_by_ledger_id.py."""
    prompt = grown.assemble()
    masked = _masked(prompt)
    seq = min(masked)
    (group,) = [
        i
        for i in prompt["ledger"]
        if i["kind"] == "transcript" and i["visibility"] == "visible" and i["fromSeq"] == seq - 1
    ]
    assert group["itemId"].startswith("ctx_transcript_") and group["throughSeq"] == seq
    assert group["itemId"] != masked[seq]["itemId"]  # the group's id, not the result's
    grown.append([{"kind": "pin", "target": {"kind": "item", "itemId": group["itemId"]}}])
    pinned = grown.assemble()
    assert set(_masked(pinned)) == set(masked) - {seq}
    view = grown.view()
    for member in (seq - 1, seq):  # the call and its result, as stored
        assert _message_at(pinned, member)["content"] == view.record(member)["content"]
    ids = (group["itemId"], masked[seq]["itemId"])
    items = [i for i in pinned["ledger"] if i["itemId"] in ids]
    assert [(i["itemId"], i["visibility"], i["fromSeq"], i["throughSeq"]) for i in items] == [
        (group["itemId"], "pinned", seq - 1, seq)
    ]
    # unpinned, it is masked again: the boundary itself did not move
    grown.append([{"kind": "unpin", "target": {"kind": "item", "itemId": group["itemId"]}}])
    assert set(_masked(grown.assemble())) == set(masked)


def test_recover_shows_a_masked_result_in_full_until_it_is_dropped_again(
    grown: GrowingSession,
) -> None:
    masked = _masked(grown.assemble())
    seq = min(masked)
    target = {"kind": "item", "itemId": masked[seq]["itemId"]}
    grown.append([{"kind": "recover", "target": target}])
    prompt = grown.assemble()
    assert seq not in _masked(prompt)
    assert _message_at(prompt, seq)["content"] == grown.view().record(seq)["content"]
    assert set(_masked(prompt)) == set(masked) - {seq}
    # the recovered result is still in the ledger, under the id it was masked with, visible
    kept = [i for i in prompt["ledger"] if i["itemId"] == target["itemId"]]
    assert [(i["visibility"], i["fromSeq"]) for i in kept] == [("visible", seq)]
    assert "recovered" in kept[0]["reason"] and kept[0]["tokens"] == masked[seq]["tokens"]
    # a range recover works too
    other = sorted(masked)[1]
    grown.append(
        [{"kind": "recover", "target": {"kind": "range", "fromSeq": other, "throughSeq": other}}]
    )
    assert set(_masked(grown.assemble())) == set(masked) - {seq, other}
    # the last word on a target wins: a drop of the same item takes the recovery back
    grown.append([{"kind": "drop", "target": target}])
    assert seq in _masked(grown.assemble())


@pytest.mark.parametrize("off", ["off", {"mode": "off"}])
def test_masking_off_shows_every_result_whole(off: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        session = GrowingSession(Path(tmp), {**PROFILE, "masking": off}, [READ_FILE])
        rng = random.Random(12)
        try:
            for i in range(TURNS):
                session.append(coding_turn(i, _sizes(rng)))
            prompt = session.assemble()
            assert not _masked(prompt)
            view = session.view()
            for seq in range(3, view.head + 1, 4):
                assert _message_at(prompt, seq)["content"] == view.record(seq)["content"]
        finally:
            session.close()


def test_a_result_smaller_than_its_placeholder_stays_whole() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        session = GrowingSession(Path(tmp), PROFILE, [READ_FILE])
        try:
            session.append(coding_turn(0, [2]))  # a tiny result, the oldest of all
            for i in range(1, 12):
                session.append(coding_turn(i, [600]))
            prompt = session.assemble()
            masked = _masked(prompt)
            assert 3 not in masked and 7 in masked
            assert _expected_masked(session, PROTECT, BATCH) - {3} == set(masked)
            assert _message_at(prompt, 3)["content"] == session.view().record(3)["content"]
        finally:
            session.close()


def test_a_move_of_the_masked_boundary_reads_the_masked_history_from_the_cache() -> None:
    """A marker sits on the newest masked result: everything before it is unchanged until the
    boundary moves, and the move changes only what follows it.  So the turn the boundary
    moves reads that prefix from the cache (predicted by ``cache``) instead of writing the
    whole transcript again.  Mutation: without the marker, every such turn reads nothing
    (the earlier entries sit more than 20 blocks before every marker, or were never written).
    """
    from protocol.context import ContextAssembleParams
    from sidecar.context.service import ContextService

    rng = random.Random(5)
    with tempfile.TemporaryDirectory() as tmp:
        session = GrowingSession(Path(tmp), PROFILE, [READ_FILE])
        service = ContextService(session.store, TOKENIZERS, home=Path(tmp) / "home")
        params = ContextAssembleParams.model_validate(
            {
                "sessionId": session.sid,
                "userTurn": [{"type": "text", "text": "what now?"}],
                "date": "2026-11-30",
                "tools": [READ_FILE],
                "profile": {"model": "claude-sonnet-4-5", **PROFILE},
            },
            by_alias=True,
        )
        moves = 0
        previous: dict[str, Any] | None = None
        try:
            for i in range(40):
                session.append(coding_turn(i, _sizes(rng)))
                prompt = service.assemble(params)
                stable = [
                    p
                    for p in prompt["cacheBreakpoints"]
                    if p["reason"].startswith("end of the masked history")
                ]
                assert len(stable) <= 1 and (not stable or _masked(prompt))
                before = [
                    p
                    for p in (previous or {}).get("cacheBreakpoints", [])
                    if p["reason"].startswith("end of the masked history")
                ]
                if before and set(_masked(prompt)) != set(_masked(previous or {})):
                    moves += 1
                    assert prompt["cache"]["readTokens"] >= before[0]["prefixTokens"], (
                        i,
                        prompt["cache"],
                        before,
                    )
                previous = prompt
        finally:
            session.close()
    assert moves >= 3


#: The shipped default batch (``MaskingPolicy.batch_tokens``: "five twelfths of the room tool
#: output has"): on claude-sonnet-4-5, whose 200k window leaves 198,720 tokens of room as the
#: shipped limits resolve it, 158,976 of our tokens once divided by the uncalibrated count
#: factor of Claude models (1.25: ``sidecar.context.calibration``), 5/12 of that.  Written out
#: here on purpose: a test reading the constants would follow a broken default instead of
#: failing on it.
SHIPPED_BATCH = 66_240


def test_the_shipped_default_batch_holds_the_prefix_for_many_turns_between_moves() -> None:
    """No masking settings at all, on a shipped 200k-window model: the boundary moves only
    when about 83,000 tokens of tool output can be masked at once, and between moves the
    transcript of turn N is a byte prefix of turn N+1's.  Every other masking, window and
    cache test sets ``batchTokens`` itself.  Mutation: ``BATCH_SHARE = 0`` (a batch of one
    token) masks a little on every turn (each move frees one turn's output, and no turn holds
    the prefix)."""
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        # the room of the whole window (the default working budget would cut the window too)
        profile = {"model": "claude-sonnet-4-5", "historyWindow": {"workingTokens": None}}
        session = GrowingSession(Path(tmp), profile, [READ_FILE])
        previous: bytes | None = None
        previous_masked: dict[int, dict[str, Any]] = {}
        moves = holds = 0
        try:
            for i in range(15):  # ~60k tokens of tool output: past protect, short of a batch
                session.append(coding_turn(i, [rng.randint(1200, 2800) for _ in range(2)]))
            for i in range(15, 65):
                prompt = session.assemble()
                assert prompt["dashboard"]["window"] == 200_000
                view = session.view()
                largest = max(view.tokens(s) for s in range(3, view.head + 1, 4))
                transcript = canonical(prompt["messages"][:-1])[:-1]  # without the closing "]"
                masked = _masked(prompt)
                if previous is not None:
                    if masked.keys() == previous_masked.keys():
                        holds += 1
                        assert transcript.startswith(previous), f"turn {i} rewrote its prefix"
                    else:
                        moves += 1
                        assert previous_masked.keys() < masked.keys()
                        freed = sum(masked[s]["tokens"] for s in masked.keys() - previous_masked)
                        assert freed >= SHIPPED_BATCH - largest, (i, freed)
                previous, previous_masked = transcript, masked
                session.append(coding_turn(i, [rng.randint(1200, 2800) for _ in range(2)]))
        finally:
            session.close()
    assert moves == 3 and holds >= 40  # ~4k tokens of tool output a turn: ~16 turns a batch


def test_under_a_token_cap_masking_is_sized_to_the_cap() -> None:
    """``historyWindow.maxTokens`` without explicit sizes: a twelfth of the cap protected,
    five twelfths per batch (the budget's sizes would keep a small window all unmasked)."""
    cap = 12_000
    profile = {"window": 100_000, "historyWindow": {"maxTokens": cap}}
    protect, batch = cap // 12, cap * 5 // 12
    with tempfile.TemporaryDirectory() as tmp:
        session = GrowingSession(Path(tmp), profile, [READ_FILE])
        rng = random.Random(5)
        reached = 0
        try:
            for i in range(TURNS):
                prompt = session.assemble()
                state = prompt["dashboard"]["masking"]
                assert (state["protectTokens"], state["batchTokens"]) == (protect, batch)
                shown = set(_masked(prompt))  # the masked results the window still shows
                assert shown <= _expected_masked(session, protect, batch), i
                assert prompt["dashboard"]["categories"]["transcript"] <= cap
                reached = max(reached, len(shown))
                session.append(coding_turn(i, _sizes(rng)))
        finally:
            session.close()
    assert reached >= 3
