"""The context dashboard and a snapshot's diff as markdown, for the chat of an ACP editor
(``/context``, ``/snapshot``).  Pure functions of ``serve``'s answers (wire JSON): the same
figures the dashboard page and the Neovim float show.
"""

from __future__ import annotations

from typing import Any

from protocol.context import SECTION_CATEGORIES

__all__ = ["LEFT_OUT", "context_markdown", "snapshot_markdown"]

#: Ledger visibilities listed under "masked or left out" (the rest are shown as they are).
LEFT_OUT = ("masked", "candidate", "blocked", "dropped", "archived", "summaryOnly")
_MAX_ITEMS = 40
_CATEGORY_ORDER = SECTION_CATEGORIES


def _k(tokens: int) -> str:
    """``18.2k`` for 18,234 tokens; exact below 1,000."""
    return f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)


def _seqs(item: dict[str, Any]) -> str:
    first, last = item.get("fromSeq"), item.get("throughSeq")
    if first is None:
        return ""
    return f" seq {first}" if last in (None, first) else f" seq {first}-{last}"


def context_markdown(answer: dict[str, Any]) -> str:
    """A ``context/assemble`` answer as the dashboard: categories, used / available, the
    cache prediction, the history window, masking, and what was masked or left out, why."""
    dash = answer["dashboard"]
    limits = answer.get("modelLimits") or {}
    used, available = int(dash["used"]), int(dash["availableInput"])
    share = f" ({used * 100 // available}%)" if available else ""
    lines = [
        f"**Context** · {limits.get('model', '?')} · **{_k(used)} / {_k(available)}** tokens "
        f"of input used{share} · {_k(int(dash['free']))} free · window {_k(int(dash['window']))}, "
        f"{_k(int(dash['reservedOutput']))} reserved for output",
        "",
        f"_{dash['summary']}_",
        "",
        "| category | tokens |",
        "|---|---:|",
    ]
    categories: dict[str, int] = dash.get("categories") or {}
    order: list[str] = [c for c in _CATEGORY_ORDER if c in categories]
    order += sorted(c for c in categories if c not in _CATEGORY_ORDER)
    lines += [f"| {name} | {categories[name]:,} |" for name in order]
    lines += ["", _cache_line(answer.get("cache"))]
    window = dash.get("historyWindow")
    if window:
        start = window.get("startSeq")
        where = f"starts at seq {start}" if start is not None else "shows the whole history"
        unit = window["unit"]
        lines += [
            "",
            f"**History window**: {where} · bound by {window['boundBy']} "
            f"(limit {window['limit']:,} {unit}) · moves in steps of {window['quantum']:,} "
            f"{unit} · {window['roomLeft']:,} {unit} of room left",
        ]
    masking = dash.get("masking")
    if masking:
        lines += [
            "",
            f"**Masking**: {masking['maskedResults']} tool result(s) masked "
            f"({_k(int(masking['maskedTokens']))} tokens whole) · protect "
            f"{_k(int(masking['protectTokens']))} · batch {_k(int(masking['batchTokens']))} · "
            f"tool output {_k(int(masking['toolTokens']))} · the boundary moves in "
            f"{_k(int(masking['nextMoveIn']))} tokens of new tool output",
        ]
    else:
        lines += ["", "**Masking**: off"]
    left = [i for i in answer.get("ledger", []) if i.get("visibility") in LEFT_OUT]
    lines += ["", f"**Masked or left out**: {len(left) or 'nothing'}"]
    for item in left[:_MAX_ITEMS]:
        locator = f" `{item['locator']}`" if item.get("locator") else ""
        lines.append(
            f"- `{item['visibility']}` {item['kind']}{locator}{_seqs(item)} "
            f"({item['tokens']:,} tokens) — {item['reason']} · `{item['itemId']}`"
        )
    if len(left) > _MAX_ITEMS:
        lines.append(f"- … and {len(left) - _MAX_ITEMS} more")
    advice = answer.get("compaction") or {}
    if advice.get("advised"):
        why = (
            " — the cache has gone cold, so a summary now costs no re-write"
            if advice.get("reason") == "coldCache"
            else ""
        )
        lines += [
            "",
            f"**Compaction advised**: the transcript takes {_k(int(advice['transcriptTokens']))}"
            f" of a {_k(int(advice['thresholdTokens']))} threshold{why} (`/compact`)",
        ]
    return "\n".join(lines) + "\n"


def _cache_line(cache: dict[str, Any] | None) -> str:
    if not cache:
        return "**Cache**: no prediction"
    against = "against the previous request" if cache.get("againstPrevious") else "first request"
    line = (
        f"**Cache** ({against}): read {_k(int(cache['readTokens']))} · write "
        f"{_k(int(cache['writeTokens']))} · uncached {_k(int(cache['uncachedTokens']))} of "
        f"{_k(int(cache['inputTokens']))} input tokens"
    )
    cost = cache.get("cost")
    if cost:
        line += f" · input cost ${cost['total']:.4f} (prices of {cost['pricesAsOf']})"
    else:
        line += " · cost unknown (the model is not in the price table)"
    if cache.get("firstChange"):
        line += f" · first change: {cache['firstChange']}"
    return line


def snapshot_markdown(answer: dict[str, Any]) -> str:
    """A ``snapshot/assemble`` answer: the snapshot's id and one paragraph on what changed
    against the session's previous snapshot."""
    dash, diff = answer["dashboard"], answer["diff"]
    head = (
        f"**Snapshot** `{answer['snapshotId']}` · {_k(int(dash['used']))} / "
        f"{_k(int(dash['availableInput']))} tokens"
    )
    before = diff.get("fromSnapshot")
    if before is None:
        return f"{head}\n\nThe session's first snapshot: nothing to compare it with.\n"
    changes = diff.get("ledgerChanges") or []
    moved = [
        f"{c['kind']}{' `' + c['locator'] + '`' if c.get('locator') else ''} "
        f"{c.get('before', 'new')} → {c.get('after', 'gone')}"
        for c in changes[:8]
    ]
    more = f" and {len(changes) - 8} more" if len(changes) > 8 else ""
    sections = [
        f"{what} {', '.join(f'`{s}`' for s in diff[key])}"
        for what, key in (
            ("added", "sectionsAdded"),
            ("removed", "sectionsRemoved"),
            ("changed", "sectionsChanged"),
        )
        if diff.get(key)
    ]
    paragraph = (
        f"Against `{before}`: {int(diff['totalTokensBefore']):,} → "
        f"{int(diff['totalTokensAfter']):,} tokens, {diff['messagesBefore']} → "
        f"{diff['messagesAfter']} messages; the first {diff['prefixUnits']} units "
        f"({int(diff['prefixTokens']):,} tokens) are unchanged. "
        + (f"System sections {'; '.join(sections)}. " if sections else "No section changed. ")
        + (
            f"{len(changes)} ledger change(s): {'; '.join(moved)}{more}."
            if changes
            else "No ledger item changed visibility."
        )
    )
    return f"{head}\n\n{paragraph}\n"
