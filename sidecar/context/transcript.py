"""History -> transcript groups, newest first (DESIGN.md §4 stages 2-3).

- **Compaction filter**: with a compaction ``{throughSeq T, keepFromSeq K}`` the candidate
  transcript is the kept tail ``K..T`` plus everything after ``T``; older entries are
  represented by the summary (rendered elsewhere as the checkpoint section).
- **Groups**: an assistant message with tool calls and the user messages carrying their
  results form one atomic group; every other message is a group of its own.  Selection takes
  or leaves whole groups, so a tool call is never separated from its result;
  :func:`group_bounds` finds the group around one entry (a pin takes the whole group), and
  :func:`named_group` the group a ledger id names (a pin, drop or recover by that id acts on
  the group's seqs, as one by range does).
- **Interruptions**: a tool call whose result never arrived is rendered as a short text note
  in place of the call (history is not rewritten, the tool is not re-run); a result whose call
  is not right before it (e.g. the call was compacted away) is rendered as text.  Providers
  reject unpaired tool blocks; a note keeps the facts without breaking the request.

The walk is lazy and goes backwards, so its cost is proportional to the groups consumed.
It decides grouping from the per-entry shapes of the history index (no parsing) and reuses
built groups — with their JSON already serialised — from the index's group cache: an entry
never changes, so a group made of the same entries renders the same every turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sidecar.context.cache_accounting import Unit, message_unit
from sidecar.context.ledger import SHOWN_INTERRUPTED_REASON, SHOWN_REASON, item_id, ledger_item
from sidecar.jsonbytes import dumps_bytes
from sidecar.store.history import SHAPE_CALLS, SHAPE_OTHER, SHAPE_RESULTS, SHAPE_USER, HistoryView

T = TypeVar("T")

__all__ = [
    "Group",
    "TranscriptRange",
    "cached",
    "group_bounds",
    "group_ledger_id",
    "iter_groups",
    "named_group",
    "observation_id",
]

MessageCounter = Callable[[dict[str, Any]], int]
_GROUP_CACHE = 50_000


@dataclass(frozen=True, slots=True)
class TranscriptRange:
    """Seq ranges of the candidate transcript, oldest first (inclusive bounds)."""

    spans: tuple[tuple[int, int], ...]

    def contains(self, seq: int) -> bool:
        return self.span_of(seq) is not None

    def span_of(self, seq: int) -> tuple[int, int] | None:
        """The span holding ``seq``, if any."""
        return next(((a, b) for a, b in self.spans if a <= seq <= b), None)


def group_ledger_id(first_id: str) -> str:
    """The ledger id of the group whose first entry has id ``first_id``:
    ``ctx_transcript_<16 hex>`` of ``transcript:<first entry id>``."""
    return item_id("transcript", f"transcript:{first_id}")


def observation_id(entry_id: str) -> str:
    """Ledger id of the tool result(s) in one history entry (what a masked placeholder names,
    and ``session/recover`` takes): ``ctx_transcript_<16 hex>`` of ``observation:<entry id>``."""
    return item_id("transcript", f"observation:{entry_id}")


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
    json: bytes = b""
    """The messages as compact JSON (keys in their order), comma-separated, ready to splice
    into a JSON array (an RPC answer, or a snapshot whose id is the hash of its JSON)."""
    ledger_id: str = ""
    """``ctx_transcript_<16 hex>`` of ``transcript:<first entry id>``."""
    units: tuple[Unit, ...] = field(default=(), compare=False, repr=False)
    """The messages as prompt-cache units (``cache_accounting.message_unit``), built once with
    the group rather than on every assembly that shows it."""
    shown_item: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Its ledger item when the history window shows it (``visible``): a template the window
    copies (never hands out), built once with the group."""

    @classmethod
    def build(
        cls,
        first: int,
        last: int,
        first_id: str,
        messages: tuple[dict[str, Any], ...],
        starts_on_user_turn: bool,
        interrupted: bool,
    ) -> Group:
        ledger_id = group_ledger_id(first_id)
        tokens = sum(m["tokens"] for m in messages)
        return cls(
            first,
            last,
            first_id,
            messages,
            tokens,
            starts_on_user_turn,
            interrupted,
            b",".join(dumps_bytes(m) for m in messages),
            ledger_id,
            tuple(message_unit(m) for m in messages),
            ledger_item(
                "transcript",
                ledger_id,
                "visible",
                SHOWN_INTERRUPTED_REASON if interrupted else SHOWN_REASON,
                tokens,
                first=first,
                last=last,
            ),
        )


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


def cached(view: HistoryView, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """``build()``, memoised in the history index's group cache under ``key`` (per
    tokenizer): ``key`` must name everything the built value depends on besides entries."""
    full = (view.tokenizer, *key)
    hit = view.group_cache.get(full)
    return hit if hit is not None else _remember(view, full, build())


def _remember(view: HistoryView, full: tuple[Any, ...], value: T) -> T:
    cache = view.group_cache
    if len(cache) > _GROUP_CACHE:
        cache.clear()
    cache[full] = value
    return value


class _Walker:
    """Builds the groups of a walk, each memoised in the group cache.  ``plain`` and
    ``call_group`` run once per entry walked: they look in the cache before making a
    builder (no closure, no frame beyond their own on a hit)."""

    def __init__(self, view: HistoryView, count: MessageCounter) -> None:
        self.view = view
        self.count = count
        self._cache = view.group_cache
        self._tokenizer = view.tokenizer

    def cached(self, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
        return cached(self.view, key, build)

    def plain(self, seq: int) -> Group:
        full = (self._tokenizer, "p", seq)
        hit: Group | None = self._cache.get(full)
        if hit is not None:
            return hit
        view = self.view
        record = view.record(seq)
        msg = _message(record, list(record["content"]), view.tokens(seq))
        group = Group.build(seq, seq, record["id"], (msg,), view.shape(seq) == SHAPE_USER, False)
        return _remember(view, full, group)

    def orphan_results(self, seq: int) -> Group:
        def build() -> Group:
            record = self.view.record(seq)
            content = [
                _result_as_text(p) if p["type"] == "toolResult" else p for p in record["content"]
            ]
            msg = _message(record, content, 0, "interruption")
            msg["tokens"] = self.count(msg)
            return Group.build(seq, seq, record["id"], (msg,), False, True)

        group: Group = self.cached(("o", seq), build)
        return group

    def call_group(self, seq: int, results: list[int]) -> tuple[Group, list[int]]:
        """The group of an assistant message with calls and the result messages after it;
        also returns the result messages that answer none of its calls."""

        full = (self._tokenizer, "c", seq, tuple(results))
        hit: tuple[Group, list[int]] | None = self._cache.get(full)
        if hit is not None:
            return hit
        return _remember(self.view, full, self._build_call_group(seq, results))

    def _build_call_group(self, seq: int, results: list[int]) -> tuple[Group, list[int]]:
        record = self.view.record(seq)
        calls = {p["callId"] for p in record["content"] if p["type"] == "toolCall"}
        members: list[tuple[int, dict[str, Any]]] = []
        others: list[int] = []
        answered: set[str] = set()
        for rseq in results:
            rrec = self.view.record(rseq)
            ids = {p["callId"] for p in rrec["content"] if p["type"] == "toolResult"}
            if ids & calls:
                members.append((rseq, rrec))
                answered |= ids & calls
            else:
                others.append(rseq)
        interrupted = answered != calls
        if interrupted:
            content = [
                _interruption(p) if p["type"] == "toolCall" and p["callId"] not in answered else p
                for p in record["content"]
            ]
            msg = _message(record, content, 0, "interruption")
            msg["tokens"] = self.count(msg)
        else:
            msg = _message(record, list(record["content"]), self.view.tokens(seq))
        messages = [msg]
        for rseq, rrec in members:
            if any(p["type"] == "toolResult" and p["callId"] not in calls for p in rrec["content"]):
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
        group = Group.build(seq, last, record["id"], tuple(messages), False, interrupted)
        return group, others


def group_bounds(
    view: HistoryView, span: tuple[int, int], seq: int, excluded: Callable[[int], bool]
) -> tuple[int, int]:
    """``(first, last)`` seqs of the group :func:`iter_groups` makes around ``seq`` when it walks
    ``span``: a call message and its result messages are one group whichever of them ``seq``
    names, so a pin on any of them keeps the whole exchange well-formed."""
    first, last = span

    def skipped(s: int) -> bool:
        return view.shape(s) == SHAPE_OTHER or excluded(s)

    start = seq
    if view.shape(seq) == SHAPE_RESULTS:
        # results belong to the nearest call message before them, as in the backward walk
        start = seq - 1
        while start >= first and (view.shape(start) == SHAPE_RESULTS or skipped(start)):
            start -= 1
        if start < first or view.shape(start) != SHAPE_CALLS:
            return seq, seq  # no call before it in this span: an orphan, a group of its own
    elif view.shape(seq) != SHAPE_CALLS:
        return seq, seq
    end = start
    after = start + 1
    while after <= last and (view.shape(after) == SHAPE_RESULTS or skipped(after)):
        if not skipped(after):
            end = after
        after += 1
    return start, end


def named_group(view: HistoryView, ledger_id: str, before: int) -> tuple[int, int] | None:
    """``(first, last)`` seqs of the group whose ledger id (:func:`group_ledger_id`) is
    ``ledger_id``, for a control entry at seq ``before`` naming it; ``None`` when no entry
    before it starts a group of that id (the id names something else, or nothing).

    The group was in a ledger before the control named it, so its first entry is older:
    the search goes back from ``before`` and its answer, a function of those entries alone,
    is memoised — assembling costs one lookup per control, not a walk of the history.  The
    group's end is found afresh (its results may arrive after the control)."""

    def find() -> int:
        shapes = view.shapes
        for seq in range(min(before, view.head + 1) - 1, 0, -1):
            shape = shapes[seq - 1]
            if shape == SHAPE_OTHER:
                continue
            entry_id = view.record(seq)["id"]
            if group_ledger_id(entry_id) == ledger_id:
                return seq
            if shape == SHAPE_RESULTS and observation_id(entry_id) == ledger_id:
                return 0  # a result's own id: masking's business, not a group
        return 0

    first: int = cached(view, ("named", ledger_id, before), find)
    if not first:
        return None
    if view.shape(first) != SHAPE_CALLS:  # a message, or results whose call is not before them
        return first, first
    return group_bounds(view, (first, view.head), first, lambda _: False)


def iter_groups(
    view: HistoryView,
    transcript: TranscriptRange,
    excluded: Callable[[int], bool],
    count: MessageCounter,
) -> Iterator[Group]:
    """Groups of the candidate transcript, newest first.  ``excluded(seq)`` hides dropped
    entries; ``count`` counts a message whose rendering differs from its stored entry."""
    walker = _Walker(view, count)
    shapes = view.shapes  # read once per entry walked
    for first, last in reversed(transcript.spans):
        pending: list[int] = []  # seqs of result messages, oldest first
        seq = last
        while seq >= first:
            shape = shapes[seq - 1]
            if shape == SHAPE_OTHER or excluded(seq):
                seq -= 1
                continue
            if shape == SHAPE_RESULTS:
                pending.insert(0, seq)
            elif shape == SHAPE_CALLS:
                group, others = walker.call_group(seq, pending)
                for rseq in reversed(others):
                    yield walker.orphan_results(rseq)
                pending = []
                yield group
            else:
                if pending:
                    for rseq in reversed(pending):
                        yield walker.orphan_results(rseq)
                    pending = []
                yield walker.plain(seq)
            seq -= 1
        for rseq in reversed(pending):
            yield walker.orphan_results(rseq)
