"""``historyWindow.keepUserMessages``: what the user asked survives what the window hides.

A coding session grown past a 3,000-token ``maxTokens`` window, assembled through
``context/assemble``'s path after each turn:

- with the setting, every user message older than the window start is shown whole, oldest
  first, in one message at the start of the transcript (so every user turn of the session is
  in view), and that message is byte-identical between two requests whose window start did
  not move (the cache keeps it);
- a dropped user message is not shown again; the share kept for them bounds them (the oldest
  left out, listed in the ledger); inside a host's explicit cap (``maxTokens``: a share of
  its tokens; ``maxMessages``: one of its messages, holding a share of its count), never on
  top of it;
- without it, the user messages before the window start are not in view.

Mutation tried: ``keep_user_messages`` ignored in ``Selection._transcript`` (no message of
earlier user turns): red.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from sidecar.context.service import ContextService
from sidecar.context.user_messages import USER_MESSAGES_NOTE
from sidecar.store import Store
from tests.unit.selection_kit import (
    TOKENIZERS,
    append_entries,
    assemble_live,
    coding_turn,
    new_session,
    text,
)

PROFILE: dict[str, Any] = {
    "model": "test-model",
    "window": 40_000,
    "maxOutput": 256,
    "historyWindow": {"maxTokens": 3_000, "workingTokens": None},
}


def _asked(i: int) -> str:
    return f"question {i}: " + "please " * 12


def _user_texts(prompt: dict[str, Any]) -> list[str]:
    return [
        p["text"]
        for m in prompt["messages"][:-1]
        if m["role"] == "user"
        for p in m["content"]
        if p["type"] == "text"
    ]


def _after_turns(
    profile: dict[str, Any],
    users: list[dict[str, Any]] | None = None,
    turns: int = 24,
    every_turn: bool = False,
) -> list[dict[str, Any]]:
    """A coding session of ``turns`` turns; the answers of ``context/assemble`` for each of
    ``users`` (default: one "next?") after the last turn, or after every turn."""
    prompts = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        try:
            sid = new_session(store)
            service = ContextService(store, TOKENIZERS, home=Path(tmp) / "home")
            for i in range(turns):
                append_entries(store, sid, coding_turn(i, [200]))
                if every_turn or i == turns - 1:
                    for user in users or [text("next?")]:
                        prompts.append(assemble_live(service, sid, [user], [], profile))
        finally:
            store.close()
    return prompts


def _grow(keep: bool, turns: int = 24) -> list[dict[str, Any]]:
    profile = {**PROFILE, "historyWindow": {**PROFILE["historyWindow"], "keepUserMessages": keep}}
    return _after_turns(profile, turns=turns, every_turn=True)


def test_every_earlier_user_message_stays_in_view_and_holds_still() -> None:
    prompts = _grow(keep=True)
    last = prompts[-1]
    start = last["dashboard"]["historyWindow"]["startSeq"]
    assert start is not None and start > 40, "the window never moved: checks nothing"
    asked = _user_texts(last)
    assert [t for t in asked if t.startswith("question")] == [_asked(i) for i in range(24)]
    first = last["messages"][0]
    assert first["content"][0]["text"] == USER_MESSAGES_NOTE
    assert first["provenance"][0]["kind"] == "summary"
    held = 0
    for before, after in itertools.pairwise(prompts):
        b, a = before["dashboard"]["historyWindow"], after["dashboard"]["historyWindow"]
        if a["startSeq"] == b["startSeq"] and a["startSeq"] is not None:
            held += 1
            assert json.dumps(after["messages"][0]) == json.dumps(before["messages"][0])
    assert held >= 5
    assert any("keepUserMessages" in i["reason"] for i in last["ledger"])
    assert last["dashboard"]["used"] <= last["dashboard"]["availableInput"]


def test_without_the_setting_the_window_hides_them() -> None:
    last = _grow(keep=False)[-1]
    asked = [t for t in _user_texts(last) if t.startswith("question")]
    assert len(asked) < 24
    assert USER_MESSAGES_NOTE not in json.dumps(last["messages"])


def test_inside_an_explicit_cap_the_share_bounds_them_and_the_oldest_are_left_out() -> None:
    """With ``maxTokens`` the user's messages are kept inside the cap, not on top of it: a
    share of its tokens for them (the oldest left out past it), the rest for the window."""
    share = 0.05
    profile = {
        **PROFILE,
        "historyWindow": {"maxTokens": 3_000, "workingTokens": None, "userMessagesShare": share},
    }
    prompt = _after_turns(profile)[-1]
    kept = prompt["messages"][0]
    assert kept["content"][0]["text"] == USER_MESSAGES_NOTE  # on by default, even capped
    assert kept["tokens"] <= int(3_000 * share)
    assert sum(m["tokens"] for m in prompt["messages"][:-1]) <= 3_000
    left = [i for i in prompt["ledger"] if i["reason"].endswith("over the share kept for them")]
    assert len(left) == 1 and left[0]["fromSeq"] == 1
    shown = [p["text"] for p in kept["content"][1:]]
    assert shown and shown[-1] == _asked(_newest_hidden(prompt))
    cut = [i for i in prompt["ledger"] if i["reason"].startswith("outside the history window")]
    assert cut and cut[0]["reason"].startswith(
        "outside the history window (2850 tokens, and 150 for the user's earlier messages)"
    )


def test_inside_max_messages_they_are_one_message_of_a_share_of_them() -> None:
    """With ``maxMessages: 20`` the user's earlier messages are one message of the twenty,
    holding at most a fifth of twenty (4), the newest; the window has the other 19."""
    profile = {**PROFILE, "historyWindow": {"maxMessages": 20}}
    prompt = _after_turns(profile)[-1]
    transcript = prompt["messages"][:-1]
    assert len(transcript) <= 20
    kept = transcript[0]
    assert kept["content"][0]["text"] == USER_MESSAGES_NOTE
    shown = [p["text"] for p in kept["content"][1:]]
    newest = _newest_hidden(prompt)
    assert shown == [_asked(i) for i in range(newest - 3, newest + 1)]
    cut = [i for i in prompt["ledger"] if i["reason"].startswith("outside the history window")]
    assert cut and cut[0]["reason"].startswith(
        "outside the history window (19 messages, and 1 message for the user's earlier messages)"
    )


def _newest_hidden(prompt: dict[str, Any]) -> int:
    """The index of the newest user turn before the window start (4 entries a turn)."""
    start = int(prompt["dashboard"]["historyWindow"]["startSeq"])
    return (start - 1) // 4 - 1


def test_the_default_working_budget_holds_the_transcript_under_64k_on_a_200k_window() -> None:
    """``historyWindow.workingTokens`` (default 64,000): on a 200k-window model the transcript
    stays under it, where without it the transcript fills the window's budget.  Mutation
    tried: ``token_cap`` ignoring ``working_tokens``: red."""
    used: dict[str, int] = {}
    for name, window in (("default", {}), ("whole window", {"workingTokens": None})):
        # nothing masked: the transcript's size is the window's business alone
        profile = {"model": "claude-sonnet-4-5", "masking": "off", "historyWindow": window}
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(Path(tmp))
            try:
                sid = new_session(store)
                service = ContextService(store, TOKENIZERS, home=Path(tmp) / "home")
                for i in range(60):
                    append_entries(store, sid, coding_turn(i, [1_500, 900]))
                prompt = assemble_live(service, sid, [text("next?")], [], profile)
            finally:
                store.close()
        used[name] = prompt["dashboard"]["categories"]["transcript"]
        if name == "default":
            assert prompt["dashboard"]["historyWindow"]["limit"] == 64_000
    assert used["default"] <= 64_000 < used["whole window"]


@pytest.mark.parametrize(
    "window",
    [{"workingTokens": None}, {"workingTokens": None, "maxTokens": 6_000}],
    ids=["the whole window", "inside maxTokens"],
)
def test_a_user_turn_that_leaves_less_than_their_share_still_gets_an_answer(
    window: dict[str, Any],
) -> None:
    """The whole window (``workingTokens: null``) keeps a fifth of the budget for the user's
    earlier messages, an explicit cap a fifth of itself; a user turn that leaves less than
    that left the window a room under zero (its cut looked for a start forever: a request
    that never answered — ``window.py`` stops now when nothing is left to leave out) and the
    message overran the budget.  The share is what the turn leaves at most: the turn whole,
    the rest what fits (red without the clamp: 6,858 tokens used of 6,720)."""
    profile = {"model": "test-model", "window": 8_000, "maxOutput": 256, "historyWindow": window}
    first = _after_turns(profile)[0]["dashboard"]
    left = first["availableInput"] - first["used"] + first["categories"]["transcript"]
    big = text("word " * (left - 150))  # leaves less than the user's 24 messages take
    prompt = _after_turns(profile, [big])[0]
    assert prompt["messages"][-1]["content"][0]["text"] == big["text"]
    assert prompt["dashboard"]["used"] <= prompt["dashboard"]["availableInput"]
