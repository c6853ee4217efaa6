"""The user's hidden messages (``keepUserMessages``) found through the store's index.

``hidden_user_messages`` used to scan every entry before the window start on every assembly
(6.5 ms of a 100k-entry session's selection step, the `assembly` bench); it now bisects the
store's list of user-message seqs and builds the message only when the window start, the
hidden seqs or the budget changed.  Checked here against a plain scan of the entries, on a
real store, for many window starts and hidden sets, each assembled twice in a row through the
same view (a stale memo would show a message the plain scan does not).

Mutations tried: the user seqs indexed for every shape (tool results counted as user
messages): red; the memo's key without the hidden seqs: red.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from sidecar.context.user_messages import USER_MESSAGES_NOTE, hidden_user_messages
from sidecar.store import Store
from sidecar.store.history import SHAPE_USER
from tests.unit.selection_kit import TOKENIZERS, append_entries, coding_turn, new_session


def _count(message: dict[str, Any]) -> int:
    return sum(len(p.get("text", "")) // 4 + 1 for p in message["content"])


def _plain_scan(records: list[dict[str, Any]], before: int, hidden: set[int]) -> list[str]:
    """The texts of the user's own messages before ``before`` not hidden, by a plain scan."""
    out = []
    for seq, record in enumerate(records[: before - 1], start=1):
        parts = record["content"]
        if record["role"] != "user" or any(p["type"] == "toolResult" for p in parts):
            continue
        if seq not in hidden:
            out += [p["text"] for p in parts if p["type"] == "text"]
    return out


def test_hidden_user_messages_match_a_plain_scan_of_the_history(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    rng = random.Random(41)
    try:
        sid = new_session(store)
        records: list[dict[str, Any]] = []
        for i in range(30):
            turn = coding_turn(i, [rng.randint(5, 40) for _ in range(rng.randint(1, 3))])
            records += turn
            append_entries(store, sid, turn)
        tokenizer = TOKENIZERS.get(None)
        view = store.sessions.history(sid, tokenizer.info.id, lambda r: [1] * len(r))
        try:
            users = [s for s in range(1, view.head + 1) if view.shape(s) == SHAPE_USER]
            assert users == view.user_seqs_before(view.head + 1)
            assert len(users) == 30
            for _ in range(60):
                before = rng.randint(1, view.head + 1)
                hidden = set(rng.sample(range(1, view.head + 1), rng.randint(0, 8)))
                for _again in range(2):
                    group, _ledger = hidden_user_messages(view, before, hidden, 10**6, _count)
                    shown = (
                        [p["text"] for p in group.messages[0]["content"]][1:]
                        if group is not None
                        else []
                    )
                    if group is not None:
                        assert group.messages[0]["content"][0]["text"] == USER_MESSAGES_NOTE
                    assert shown == _plain_scan(records, before, hidden), (before, hidden)
        finally:
            view.close()
    finally:
        store.close()
