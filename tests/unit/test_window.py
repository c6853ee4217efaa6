"""The history window (sidecar/context/window.py): a start that moves by a quantum, then holds.

- Over a growing synthetic coding session, the serialized transcript of turn N is a byte
  prefix of turn N+1's except where the window start or the masked boundary moved, and the
  start moves about once per quantum of growth (a quantum of 1% moves it nearly every turn:
  the count is what the rule buys).
- The cut is a pure function: the same history assembled in another store, with cold caches,
  gives the same window; for ``historyWindow.maxMessages`` a property checks the start against
  the rule itself (natural cut, snapped forward to the grid of quanta, on a user turn).
- The ledger says where the window starts and how far it moves.
"""

from __future__ import annotations

import random
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sidecar.jsonbytes import canonical
from tests.unit.selection_kit import (
    READ_FILE,
    GrowingSession,
    assemble_entries,
    coding_turn,
    msg,
    text,
)


def _start(prompt: dict[str, Any]) -> int | None:
    """The window start the ledger names (``None``: nothing was cut)."""
    for item in prompt["ledger"]:
        found = re.search(r"older than the window start at seq (\d+);", item["reason"])
        if found:
            assert item["throughSeq"] == int(found.group(1)) - 1
            return int(found.group(1))
    return None


def _run(profile: dict[str, Any], turns: int, seed: int = 1) -> dict[str, Any]:
    """Grow a coding session turn by turn; count prefix breaks, window moves, mask moves."""
    rng = random.Random(seed)
    stats: dict[str, Any] = {"breaks": 0, "moves": 0, "mask_moves": 0, "starts": []}
    with tempfile.TemporaryDirectory() as tmp:
        session = GrowingSession(Path(tmp), profile, [READ_FILE])
        previous: bytes | None = None
        previous_start: int | None = None
        previous_masked: set[int] = set()
        try:
            for i in range(turns):
                prompt = session.assemble()
                dashboard = prompt["dashboard"]
                assert dashboard["used"] <= dashboard["availableInput"]
                first = prompt["messages"][0]
                assert first["role"] == "user"
                assert not any(p["type"] == "toolResult" for p in first["content"])
                transcript = canonical(prompt["messages"][:-1])[:-1]
                start = _start(prompt)
                masked = {i["fromSeq"] for i in prompt["ledger"] if i["visibility"] == "masked"}
                if previous is not None:
                    moved = start != previous_start
                    mask_moved = masked != previous_masked
                    stats["moves"] += moved
                    stats["mask_moves"] += mask_moved
                    if not transcript.startswith(previous):
                        stats["breaks"] += 1
                        assert moved or mask_moved, f"turn {i}: prefix rewritten, nothing moved"
                    if moved and previous_start is not None and not mask_moved:
                        # back only when masking freed room, in the turn that re-writes
                        # from the masked boundary anyway
                        assert start is not None and start > previous_start, "moved back"
                stats["starts"].append(start)
                previous, previous_start, previous_masked = transcript, start, masked
                session.append(coding_turn(i, [rng.randint(150, 700) for _ in range(2)]))
            view = session.view()
            stats["total"] = view.tokens_between(1, view.head)
        finally:
            session.close()
    return stats


WINDOW = 30_000


def test_the_window_holds_still_between_quantum_moves() -> None:
    """Masking off, so only the window moves.  Mutation: without the snap to the grid the
    start follows the overflow every turn and the count fails."""
    held = _run({"window": WINDOW, "masking": "off"}, 70)
    starts = [s for s in held["starts"] if s is not None]
    assert len(starts) > 30  # it overflowed early and stayed over
    assert held["moves"] >= 3  # and the window did move
    # the quantum is a quarter of the room (~7k of ~29k tokens); ~1.3k tokens a turn
    assert held["moves"] <= held["total"] // (WINDOW // 4 - 1000) + 1
    assert held["breaks"] == held["moves"]
    # a tiny quantum is the old behaviour: the start moves on nearly every turn
    jittery = _run({"window": WINDOW, "masking": "off", "historyWindow": {"quantum": 0.01}}, 70)
    assert jittery["moves"] >= 3 * held["moves"]


def test_masking_and_the_window_together_rewrite_the_prefix_only_when_one_moves() -> None:
    profile = {"window": 20_000, "masking": {"protectTokens": 3000, "batchTokens": 3000}}
    stats = _run(profile, 70, seed=4)
    assert stats["moves"] >= 1 and stats["mask_moves"] >= 5
    assert stats["breaks"] <= stats["moves"] + stats["mask_moves"]
    assert stats["breaks"] <= 70 // 3


def test_the_cut_is_a_pure_function_of_history_profile_and_input() -> None:
    """A session grown turn by turn (warm caches, assembled at every turn) answers the same
    bytes as the same store with its caches cleared, and as the store reopened from disk."""
    rng = random.Random(9)
    profile = {"window": 12_000, "masking": {"protectTokens": 3000, "batchTokens": 3000}}
    with tempfile.TemporaryDirectory() as tmp:
        grown = GrowingSession(Path(tmp), profile, [READ_FILE])
        try:
            for i in range(40):
                grown.append(coding_turn(i, [rng.randint(150, 700) for _ in range(2)]))
                grown.assemble()
            warm = grown.assemble_with_json()
            assert _start(warm[0]) is not None
            assert any(i["visibility"] == "masked" for i in warm[0]["ledger"])
            grown.view().group_cache.clear()
            assert grown.assemble_with_json() == warm
        finally:
            grown.close()
        reopened = GrowingSession(Path(tmp), profile, [READ_FILE], session_id=grown.sid)
        try:
            assert reopened.assemble_with_json() == warm
        finally:
            reopened.close()


def test_the_ledger_says_where_the_window_starts_and_how_far_it_moves() -> None:
    history = [
        msg("user" if i % 2 == 0 else "assistant", [text(f"message {i} " + "word " * 200)])
        for i in range(60)
    ]
    prompt, again = assemble_entries(history, window=8000)
    assert prompt == again
    start = _start(prompt)
    assert start is not None and prompt["messages"][0]["provenance"][0]["fromSeq"] == start
    older = next(i for i in prompt["ledger"] if i.get("throughSeq") == start - 1)
    assert older["visibility"] == "candidate" and older["fromSeq"] == 1
    # the quantum: a quarter of the room the transcript has beside the current turn
    steady = prompt["dashboard"]["availableInput"] - sum(s["tokens"] for s in prompt["system"])
    assert older["reason"] == (
        f"older than what fits in the budget: older than the window start at seq {start}; "
        f"the window moves in ~{int(steady * 0.25):,} tokens"
    )
    state = prompt["dashboard"]["historyWindow"]
    assert state["startSeq"] == start and state["quantum"] == int(steady * 0.25)
    assert (state["boundBy"], state["unit"]) == ("budget", "tokens")
    assert state["roomLeft"] == state["limit"] - prompt["dashboard"]["categories"]["transcript"]


# --- the maxMessages cap against the rule itself ---------------------------------------------


@st.composite
def chats(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Turns of a user message, up to two tool exchanges, and an answer (all messages)."""
    entries: list[dict[str, Any]] = []
    for turn in range(draw(st.integers(1, 14))):
        entries.append(msg("user", [text(f"q{turn}")]))
        for k in range(draw(st.integers(0, 2))):
            call_id = f"c{turn}_{k}"
            entries.append(
                msg(
                    "assistant",
                    [{"type": "toolCall", "callId": call_id, "name": "t", "arguments": {}}],
                )
            )
            entries.append(
                msg("user", [{"type": "toolResult", "callId": call_id, "content": [text("r")]}])
            )
        entries.append(msg("assistant", [text(f"a{turn}")]))
    return entries


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=chats(),
    max_messages=st.integers(2, 16),
    quantum=st.sampled_from([0.1, 0.25, 0.5, 1.0]),
)
def test_the_max_messages_window_starts_where_the_rule_puts_it(
    entries: list[dict[str, Any]], max_messages: int, quantum: float
) -> None:
    """Natural cut ``k``: the oldest user turn from which at most ``maxMessages`` follow.
    The start: the first user turn ``s >= k`` with ``s - 1`` (messages before it) at or past
    ``ceil((k - 1) / Q) * Q``, ``Q = max(1, int(maxMessages * quantum))``."""
    head = len(entries)
    users = [
        seq
        for seq, e in enumerate(entries, 1)
        if e["role"] == "user" and e["content"][0]["type"] == "text"
    ]
    step = max(int(max_messages * quantum), 1)
    if head <= max_messages:
        event("window: everything fits")
        expected = users[0]
    else:
        fitting = [s for s in users if head - s + 1 <= max_messages]
        if not fitting:
            event("window: no user turn fits, the window is empty")
            expected = head + 1
        else:
            natural = fitting[0]
            grid = -(-(natural - 1) // step) * step
            expected = next((s for s in users if s >= natural and s - 1 >= grid), head + 1)
            event(
                "window: snapped past the natural cut"
                if expected > natural
                else "window: on the grid"
            )
    prompt, again = assemble_entries(
        entries,
        window=60_000,
        max_messages=max_messages,
        quantum=quantum,
        keep_user_messages=False,  # the window alone (inside the cap: test_user_messages_kept)
    )
    assert prompt == again
    shown = [m["provenance"][0]["fromSeq"] for m in prompt["messages"][:-1]]
    assert shown == list(range(expected, head + 1))
    if head > max_messages and expected > 1:
        older = [
            i for i in prompt["ledger"] if i["reason"].startswith("outside the history window")
        ]
        assert [(i["fromSeq"], i["throughSeq"]) for i in older] == [(1, expected - 1)]
        assert older[0]["reason"] == (
            f"outside the history window ({max_messages} messages): older than the window "
            f"start at seq {expected}; the window moves in ~{step:,} messages"
        )


def test_a_max_tokens_window_over_protected_tool_output_is_never_emptied() -> None:
    """Most of a small ``maxTokens`` window is protected (unmasked) tool output.  Positions
    reckoned as if every result were masked put the grid lines many turns apart in real
    tokens, and a start that still overflowed jumped a whole quantum of them: past the head,
    an empty transcript for turns on end.  Measured as shown, the window keeps at least the
    cap less a quantum and one turn."""
    rng = random.Random(3)
    cap = 8_000
    profile = {
        "window": 100_000,
        "historyWindow": {"maxTokens": cap, "keepUserMessages": False},
        "masking": {"protectTokens": 6_000, "batchTokens": 2_000},
    }
    with tempfile.TemporaryDirectory() as tmp:
        session = GrowingSession(Path(tmp), profile, [READ_FILE])
        cut = 0
        try:
            for i in range(45):
                sizes = [rng.randint(150, 700) for _ in range(2)]
                session.append(coding_turn(i, sizes))
                prompt = session.assemble()
                shown = prompt["dashboard"]["categories"]["transcript"]
                assert shown <= cap
                if _start(prompt) is not None:
                    cut += 1
                    assert shown >= cap // 2 - 2_000, (i, shown)
        finally:
            session.close()
    assert cut >= 20
