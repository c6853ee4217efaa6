"""What a prompt reads from a session's history and what its run leaves there.

- :func:`read_history`: every entry, paged (``session/load`` replays them);
- :func:`entry_at`: one entry by seq (a tool result is sent to the editor as stored);
- :func:`after_run`: besides the run's own entries, the replay note (:mod:`sidecar.acp.replay`)
  and, for a run that failed before the model answered anything, a ``drop`` of its user message.

Decision (issue 18, item 7): a prompt whose run failed with no answer stored is dropped from
what the model sees (it stays in history, and ``session/load`` still shows it).  The user sees
the error and sends the prompt again; kept, it would be merged with that retry into one user
message ("trigger a 500\\n\\ntrigger a 500") and the model would read it twice.  A run that
failed after the model answered (a tool round stored) keeps its turn: the answers refer to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio.to_thread

from protocol._base import parse_wire
from protocol.entries import DropInput, NoteInput
from sidecar.acp.replay import replay_note

if TYPE_CHECKING:
    from sidecar.acp.mapping import RunUpdates
    from sidecar.store import Store

__all__ = ["after_run", "entry_at", "read_history"]

_READ_PAGE = 1000


def read_history(store: Store, session_id: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    after = 0
    while True:
        page = store.sessions.read(session_id, after_seq=after, before_seq=None, limit=_READ_PAGE)
        entries += page.entries
        if not page.has_more or not page.entries:
            return entries
        after = page.entries[-1]["seq"]


def entry_at(store: Store, session_id: str, seq: int) -> dict[str, Any] | None:
    page = store.sessions.read(session_id, after_seq=seq - 1, before_seq=None, limit=1)
    return page.entries[0] if page.entries else None


async def after_run(store: Store, session_id: str, head_seq: int, updates: RunUpdates) -> None:
    """Append what the prompt's run leaves besides its own entries (``head_seq``: the
    session's head before the prompt)."""
    entries: list[NoteInput | DropInput] = []
    note = replay_note(updates.diffs, updates.interrupted, store.blobs.put)
    if note is not None:
        entries.append(parse_wire(NoteInput, note))
    outcome = updates.outcome
    if outcome is not None and outcome.stop is None and not updates.answered:
        user_seq = await anyio.to_thread.run_sync(
            lambda: _user_turn_after(store, session_id, head_seq)
        )
        if user_seq is not None:
            drop = {
                "kind": "drop",
                "target": {"kind": "range", "fromSeq": user_seq, "throughSeq": user_seq},
                "reason": "its run failed before the model answered; not sent again",
            }
            entries.append(parse_wire(DropInput, drop))
    if entries:
        await store.sessions.append(session_id, entries)


def _user_turn_after(store: Store, session_id: str, head_seq: int) -> int | None:
    """The seq of the first user message after ``head_seq`` (a prompt's user turn)."""
    page = store.sessions.read(session_id, after_seq=head_seq, before_seq=None, limit=_READ_PAGE)
    for entry in page.entries:
        if entry.get("kind") == "message" and entry.get("role") == "user":
            return int(entry["seq"])
    return None
