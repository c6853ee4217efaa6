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

from typing import TYPE_CHECKING, Any

from sidecar.context.ledger import ledger_item
from sidecar.context.transcript import Group, cached

if TYPE_CHECKING:
    from collections.abc import Collection

    from sidecar.context.transcript import MessageCounter
    from sidecar.store.history import HistoryView

__all__ = ["USER_MESSAGES_NOTE", "hidden_user_messages"]

USER_MESSAGES_NOTE = (
    "[the user's earlier messages, verbatim, oldest first; the turns around them are not "
    "shown in this window]"
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
