"""The user's own messages the window hides, shown verbatim (``keepUserMessages``).

A history window that starts later, or a compaction that archives the start of the session,
takes the user's messages with the turns around them — and what the user asked is what a
model most needs to keep (the field's loudest complaint about compaction: claude-code #9796,
#21925, #36068).  With ``keepUserMessages``, every user message older than the transcript
shown (before the window start, or archived by a compaction), neither dropped nor pinned, is
shown whole at the start of the transcript, after a one-line note, one text block each: one
message whose text changes only when the window start moves or a compaction is recorded —
both re-write the transcript's cache anyway.

They get a fixed share of the input budget (``userMessagesShare``), kept for them before the
window is cut, so the window's grid does not shift with their size; when they need more, the
newest of them are shown and the oldest left out (the ledger says so).  Their text parts only:
an image a user attached is named, not shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sidecar.context.ledger import ledger_item
from sidecar.context.transcript import Group, cached

if TYPE_CHECKING:
    from collections.abc import Collection

    from protocol.context import HistoryWindow
    from sidecar.context.transcript import MessageCounter
    from sidecar.store.history import HistoryView

__all__ = ["USER_MESSAGES_NOTE", "UsersRoom", "hidden_user_messages", "room_for_users"]

USER_MESSAGES_NOTE = (
    "[the user's earlier messages, verbatim, oldest first; the turns around them are not "
    "shown in this window]"
)


@dataclass(frozen=True, slots=True)
class UsersRoom:
    """What the user's hidden messages get, and what it leaves the window's caps."""

    tokens: int = 0
    """Their message's token budget (0: none shown)."""
    reserved: int = 0
    """Taken from the window's room before it is cut."""
    most: int | None = None
    """At most this many of them (``maxMessages``)."""
    max_tokens: int | None = None
    max_messages: int | None = None
    """The window's caps: the profile's, less what is kept for them inside an explicit one."""
    in_tokens: int = 0
    in_messages: int = 0
    """What an explicit cap keeps for them (the ledger says it)."""


def room_for_users(window: HistoryWindow, available: int, remaining: int) -> UsersRoom:
    """A fixed share for the messages (the grid of the window's quanta stays put): inside a
    host's explicit cap, a share of its tokens and of its messages; else out of what the
    working budget leaves free, or kept from the window's room; never more than the user
    turn leaves (``remaining``), so the message cannot overrun the budget."""
    token_cap, max_messages = window.token_cap(), window.max_messages
    if not window.keeps_user_messages():
        return UsersRoom(max_tokens=token_cap, max_messages=max_messages)
    share = window.user_messages_share
    if window.max_tokens is None and max_messages is None:
        if window.working_tokens is not None:
            free = remaining - window.working_tokens
            tokens = max(min(int(available * share), free), 0)
            return UsersRoom(tokens, max_tokens=token_cap)
        tokens = max(min(int(available * share), remaining), 0)
        return UsersRoom(tokens, tokens, max_tokens=token_cap)
    most = in_messages = 0
    if max_messages is not None:  # a share of the host's, in one message
        most = int(max_messages * share) if max_messages > 1 else 0
        in_messages = 1 if most else 0
        max_messages -= in_messages
    base = available if token_cap is None else min(token_cap, available)
    tokens = max(min(int(base * share), remaining), 0) if most or window.max_messages is None else 0
    in_tokens = tokens if window.max_tokens is not None and token_cap is not None else 0
    return UsersRoom(
        tokens,
        tokens,
        most if window.max_messages is not None else None,
        None if token_cap is None else token_cap - in_tokens,
        max_messages,
        in_tokens,
        in_messages,
    )


def _texts(record: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for part in record.get("content", ()):
        if part.get("type") == "text" and part.get("text"):
            out.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image":
            out.append({"type": "text", "text": "[an image the user attached]"})
    return out


def hidden_user_messages(
    view: HistoryView,
    before: int,
    hidden: Collection[int],
    budget: int,
    count: MessageCounter,
    most: int | None = None,
) -> tuple[Group | None, list[dict[str, Any]]]:
    """The user messages at seqs ``1..before-1`` not ``hidden`` (dropped, pinned), as one
    message within ``budget`` tokens and, when given, ``most`` messages (newest kept first),
    and its ledger items; ``(None, [])`` when there are none.

    Costs a bisection and the hidden seqs on every assembly, not a scan of the history: the
    user messages are indexed by the store, and the message is built (a pass over them) only
    when the window start, the hidden seqs or the budget changed."""
    users = view.user_seqs_before(before)
    if not users or budget <= 0 or (most is not None and most <= 0):
        return None, []
    # what the message depends on besides the (immutable) entries before ``before``
    gone = tuple(sorted(s for s in hidden if s <= users[-1]))
    seqs: list[int] = []

    def build() -> tuple[Group | None, list[dict[str, Any]]]:
        out = set(gone)
        seqs.extend(s for s in users if s not in out)
        if not seqs:
            return None, []
        note = {"type": "text", "text": USER_MESSAGES_NOTE}
        kept: list[tuple[int, list[dict[str, Any]]]] = []
        used = count({"content": [note]})
        for seq in reversed(seqs):
            texts = _texts(view.record(seq))
            tokens = count({"content": texts}) if texts else 0
            if not texts:
                continue
            if used + tokens > budget or (most is not None and len(kept) >= most):
                break
            used += tokens
            kept.append((seq, texts))
        kept.reverse()
        ledger: list[dict[str, Any]] = []
        left = [s for s in seqs if not kept or s < kept[0][0]]
        if left:
            ledger.append(
                ledger_item(
                    "transcript",
                    f"userMessages:{left[0]}-{left[-1]}",
                    "candidate",
                    f"{len(left)} earlier user message(s): over the share kept for them",
                    sum(view.tokens(s) for s in left),
                    first=left[0],
                    last=left[-1],
                )
            )
        if not kept:
            return None, ledger
        first, last = kept[0][0], kept[-1][0]
        content = [note, *(part for _, texts in kept for part in texts)]
        message: dict[str, Any] = {
            "role": "user",
            "content": content,
            "tokens": 0,
            "provenance": [
                {
                    "kind": "summary",
                    "id": f"userMessages:{first}-{last}",
                    "fromSeq": first,
                    "throughSeq": last,
                }
            ],
        }
        tokens = message["tokens"] = count(message)
        group = Group.build(first, last, f"userMessages:{first}-{last}", (message,), True, False)
        ledger.append(
            ledger_item(
                "transcript",
                f"userMessages:{first}-{last}",
                "visible",
                f"{len(kept)} earlier user message(s) the window does not show, verbatim "
                "(historyWindow.keepUserMessages)",
                tokens,
                first=first,
                last=last,
            )
        )
        return group, ledger

    key = ("userMessages", users[-1], gone, budget, most)
    hit: tuple[Group | None, list[dict[str, Any]]] = cached(view, key, build)
    return hit[0], [dict(item) for item in hit[1]]
