"""``recall``: the model brings back one masked tool result by the ledger id its placeholder
names (``ctx_transcript_…``).

The result comes back as the recall's own tool result, at the end of the transcript: the
prompt prefix (and what the provider has cached of it) is untouched, where restoring the
result in its place would re-write the cache from there on.  It is bounded like every tool
result (head and tail, saying what was cut) and counted in the budget as any result is.
``session/recover`` is the host's way to show a result whole *in its place* (from the next
turn: a turn's inputs are frozen); the ledger then lists it as visible under the same id.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sidecar.context.masking import observation_id
from sidecar.tools.bounds import DEFAULT_BOUNDS, Bounds, count_tokens, fit_head_tail
from sidecar.tools.errors import ToolError
from sidecar.tools.output import ToolOutput

if TYPE_CHECKING:
    from sidecar.store import Store

__all__ = ["RECALL_ID", "recall"]

RECALL_ID = re.compile(r"^ctx_transcript_[0-9a-f]{16}$")
_PAGE = 1000


def recall(
    store: Store, session_id: str, item: object, bounds: Bounds = DEFAULT_BOUNDS
) -> ToolOutput:
    """The tool output of the history entry whose observation id is ``item``."""
    if not isinstance(item, str) or not RECALL_ID.match(item):
        raise ToolError(
            "tool.failed",
            "id must be the ledger id a masked placeholder names (ctx_transcript_ and 16 hex "
            "digits)",
        )
    entry = _entry(store, session_id, item)
    if entry is None:
        raise ToolError("tool.failed", f"no tool result of this session has the id {item}")
    text = "\n".join(
        "\n".join(
            c.get("text", "") if c.get("type") == "text" else f"[{c.get('type')}]"
            for c in part.get("content", ())
        )
        for part in entry["content"]
        if part.get("type") == "toolResult"
    )
    hint = "call the tool again with a narrower request (an offset, a pattern) for the rest"
    shown, cut = fit_head_tail(text, bounds.max_tokens, hint)
    head = f"[recalled {item}: the tool result at seq {entry['seq']}"
    head += f", cut to {bounds.max_tokens:,} tokens]" if cut else "]"
    return ToolOutput(
        f"{head}\n{shown}",
        cut,
        meta={"seq": entry["seq"], "tokens": count_tokens(text)},
    )


def _entry(store: Store, session_id: str, item: str) -> dict[str, Any] | None:
    after = 0
    while True:
        page = store.sessions.read(session_id, after_seq=after, before_seq=None, limit=_PAGE)
        for entry in page.entries:
            if (
                entry.get("kind") == "message"
                and any(p.get("type") == "toolResult" for p in entry.get("content", ()))
                and observation_id(entry["id"]) == item
            ):
                return entry
        if not page.has_more or not page.entries:
            return None
        after = page.entries[-1]["seq"]
