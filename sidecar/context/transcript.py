"""History -> transcript groups, newest first (DESIGN.md §4 stages 2-3).

- **Compaction filter**: with a compaction ``{throughSeq T, keepFromSeq K}`` the candidate
  transcript is the kept tail ``K..T`` plus everything after ``T``; older entries are
  represented by the summary (rendered elsewhere as the checkpoint section).
- **Groups**: an assistant message with tool calls and the user messages carrying their
  results form one atomic group; every other message is a group of its own.  Selection takes
  or leaves whole groups, so a tool call is never separated from its result.
- **Interruptions**: a tool call whose result never arrived is rendered as a short text note
  in place of the call (history is not rewritten, the tool is not re-run); a result whose call
  is not right before it (e.g. the call was compacted away) is rendered as text.  Providers
  reject unpaired tool blocks; a note keeps the facts without breaking the request.

The walk is lazy and goes backwards, so its cost is proportional to the groups consumed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sidecar.store.history import HistoryView

__all__ = ["Group", "TranscriptRange", "iter_groups"]

MessageCounter = Callable[[dict[str, Any]], int]


@dataclass(frozen=True, slots=True)
class TranscriptRange:
    """Seq ranges of the candidate transcript, oldest first (inclusive bounds)."""

    spans: tuple[tuple[int, int], ...]

    def contains(self, seq: int) -> bool:
        return any(a <= seq <= b for a, b in self.spans)


@dataclass(frozen=True, slots=True)
class Group:
    first_seq: int
    last_seq: int
    first_id: str
    """Entry id of the first message: keys the group's stable ledger id."""
    messages: tuple[dict[str, Any], ...]
    """Wire-shaped prompt messages ``{role, content, tokens, provenance}``."""
    tokens: int
    starts_on_user_turn: bool
    interrupted: bool


def _message(
    record: dict[str, Any], content: list[dict[str, Any]], tokens: int, kind: str = "transcript"
) -> dict[str, Any]:
    seq = record["seq"]
    return {
        "role": record["role"],
        "content": content,
        "tokens": tokens,
        "provenance": [{"kind": kind, "id": record["id"], "fromSeq": seq, "throughSeq": seq}],
    }


def _result_as_text(part: dict[str, Any]) -> dict[str, Any]:
    texts = [p.get("text", "") for p in part.get("content", []) if p.get("type") == "text"]
    label = "error result" if part.get("isError") else "result"
    body = "\n".join(texts)
    return {"type": "text", "text": f"[{label} of earlier tool call {part['callId']}]\n{body}"}


def _interruption(part: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "text",
        "text": f"[tool call {part['name']} ({part['callId']}) was interrupted before it "
        "returned a result; it was not re-run]",
    }


class _Walker:
    def __init__(self, view: HistoryView, count: MessageCounter) -> None:
        self.view = view
        self.count = count

    def plain(self, seq: int, record: dict[str, Any]) -> Group:
        msg = _message(record, list(record["content"]), self.view.tokens(seq))
        has_text = any(p["type"] != "toolResult" for p in record["content"])
        return Group(
            seq,
            seq,
            record["id"],
            (msg,),
            msg["tokens"],
            record["role"] == "user" and has_text,
            False,
        )

    def orphan_results(self, seq: int, record: dict[str, Any]) -> Group:
        content = [
            _result_as_text(p) if p["type"] == "toolResult" else p for p in record["content"]
        ]
        msg = _message(record, content, 0, "interruption")
        msg["tokens"] = self.count(msg)
        return Group(seq, seq, record["id"], (msg,), msg["tokens"], False, True)

    def call_group(
        self, seq: int, record: dict[str, Any], results: list[tuple[int, dict[str, Any]]]
    ) -> tuple[Group, list[tuple[int, dict[str, Any]]]]:
        """The group of an assistant message with calls; returns unmatched result messages."""
        calls = {p["callId"] for p in record["content"] if p["type"] == "toolCall"}
        members: list[tuple[int, dict[str, Any]]] = []
        others: list[tuple[int, dict[str, Any]]] = []
        answered: set[str] = set()
        for rseq, rrec in results:
            ids = {p["callId"] for p in rrec["content"] if p["type"] == "toolResult"}
            if ids & calls:
                members.append((rseq, rrec))
                answered |= ids & calls
            else:
                others.append((rseq, rrec))
        interrupted = answered != calls
        messages: list[dict[str, Any]] = []
        if interrupted:
            content = [
                _interruption(p) if p["type"] == "toolCall" and p["callId"] not in answered else p
                for p in record["content"]
            ]
            msg = _message(record, content, 0, "interruption")
            msg["tokens"] = self.count(msg)
        else:
            msg = _message(record, list(record["content"]), self.view.tokens(seq))
        messages.append(msg)
        for rseq, rrec in members:
            stray = [
                p for p in rrec["content"] if p["type"] == "toolResult" and p["callId"] not in calls
            ]
            if stray:
                content = [
                    _result_as_text(p)
                    if p["type"] == "toolResult" and p["callId"] not in calls
                    else p
                    for p in rrec["content"]
                ]
                rmsg = _message(rrec, content, 0, "interruption")
                rmsg["tokens"] = self.count(rmsg)
            else:
                rmsg = _message(rrec, list(rrec["content"]), self.view.tokens(rseq))
            messages.append(rmsg)
        last = max([seq] + [s for s, _ in members])
        group = Group(
            seq,
            last,
            record["id"],
            tuple(messages),
            sum(m["tokens"] for m in messages),
            False,
            interrupted,
        )
        return group, others


def iter_groups(
    view: HistoryView,
    transcript: TranscriptRange,
    excluded: Callable[[int], bool],
    count: MessageCounter,
) -> Iterator[Group]:
    """Groups of the candidate transcript, newest first.  ``excluded(seq)`` hides dropped
    entries; ``count`` counts a message whose rendering differs from its stored entry."""
    walker = _Walker(view, count)
    for first, last in reversed(transcript.spans):
        pending: list[tuple[int, dict[str, Any]]] = []  # result messages, oldest first
        seq = last
        while seq >= first:
            if view.kind(seq) != "message" or excluded(seq):
                seq -= 1
                continue
            record = view.record(seq)
            parts = record["content"]
            if record["role"] == "user" and any(p["type"] == "toolResult" for p in parts):
                pending.insert(0, (seq, record))
            elif record["role"] == "assistant" and any(p["type"] == "toolCall" for p in parts):
                group, others = walker.call_group(seq, record, pending)
                for rseq, rrec in reversed(others):
                    yield walker.orphan_results(rseq, rrec)
                pending = []
                yield group
            else:
                for rseq, rrec in reversed(pending):
                    yield walker.orphan_results(rseq, rrec)
                pending = []
                yield walker.plain(seq, record)
            seq -= 1
        for rseq, rrec in reversed(pending):
            yield walker.orphan_results(rseq, rrec)
