"""Ledger items: what the model sees of each candidate, and why (``AssembledPrompt.ledger``).

Every stage of selection (the system sections, masking, the history window) reports its
decisions as ledger items under stable ids, so a host can pin, drop or recover an item by the
id it was shown.
"""

from __future__ import annotations

from typing import Any

import xxhash

__all__ = ["SHOWN_INTERRUPTED_REASON", "SHOWN_REASON", "item_id", "ledger_item"]

#: Why the history window shows a transcript group (whole, or with older results masked).
SHOWN_REASON = "recent conversation within the budget"
SHOWN_INTERRUPTED_REASON = "interrupted tool call shown as a note"


def item_id(kind: str, key: str) -> str:
    """Stable ledger id: ``ctx_<kind>_<16 hex>``."""
    return f"ctx_{kind}_{xxhash.xxh3_64_hexdigest(key.encode())}"


def ledger_item(
    kind: str,
    key: str,
    visibility: str,
    reason: str,
    tokens: int,
    locator: str | None = None,
    first: int | None = None,
    last: int | None = None,
) -> dict[str, Any]:
    """A wire-shaped ledger item; ``key`` is hashed into the id unless it already is one."""
    item: dict[str, Any] = {
        "itemId": key if key.startswith("ctx_") else item_id(kind, key),
        "kind": kind,
        "visibility": visibility,
        "reason": reason,
        "tokens": tokens,
    }
    if locator is not None:
        item["locator"] = locator
    if first is not None:
        item["fromSeq"], item["throughSeq"] = first, last
    return item
