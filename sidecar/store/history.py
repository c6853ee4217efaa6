"""Read access to one session's history whose cost grows with what is read, not its length.

Assembling a prompt walks the history from the newest entry backwards and stops when the
budget is full, so it must never parse or re-count the whole history.  :class:`HistoryIndex`
keeps, per session, what that walk needs in memory:

- ``kinds``: the kind of every entry (to skip notes, pins, ... without parsing them);
- ``control_seqs``: seqs of the entries that steer selection (compaction, pin, unpin, drop,
  recover, skillActivated) — few, parsed on demand;
- a bounded cache of parsed records (the kept tail is parsed once, then reused);
- per tokenizer, every entry's token count and their running sums, filled from the persisted
  count cache and extended incrementally, so the tokens of any seq range cost O(1); the same
  for the tool output alone (entries carrying tool results), which observation masking and
  the history window measure;
- running counts of message entries and of tool-result entries, for the same reason.

A :class:`HistoryView` is a consistent read-only view at one head: appends that land while it
is in use are not visible through it.  A view from ``SessionStore.history`` holds a lease on
its session until it is closed or collected, so the session is not dropped under it.
"""

from __future__ import annotations

import json
import sys
import threading
import weakref
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import TracebackType

    from sidecar.store.token_counts import CountFn, TokenCountCache

__all__ = [
    "CONTROL_KINDS",
    "SHAPE_ASSISTANT",
    "SHAPE_CALLS",
    "SHAPE_OTHER",
    "SHAPE_RESULTS",
    "SHAPE_USER",
    "HistoryIndex",
    "HistoryView",
    "entry_shape",
]

CONTROL_KINDS = frozenset(
    {"compaction", "pin", "unpin", "drop", "recover", "skillActivated", "variables"}
)
_RECORD_CACHE = 8192


@dataclass(slots=True)
class _TokenIndex:
    counts: list[int] = field(default_factory=list)
    cum: list[int] = field(default_factory=lambda: [0])  # cum[i] = sum(counts[:i])
    tool_cum: list[int] = field(default_factory=lambda: [0])
    """``tool_cum[i]``: tokens of the tool-result entries among the first ``i``."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held while counts are extended: two views synced at once in two threads would each
    append the same counts (interleaved), and every later sum would be wrong."""


#: One character per entry saying what grouping needs to know without parsing it:
#: ``u`` user message with text, ``r`` user message carrying tool results, ``a`` assistant
#: message, ``c`` assistant message with tool calls, ``-`` anything that is not a message.
SHAPE_USER, SHAPE_RESULTS, SHAPE_ASSISTANT, SHAPE_CALLS, SHAPE_OTHER = "u", "r", "a", "c", "-"


def entry_shape(record: dict[str, Any]) -> str:
    if record.get("kind") != "message":
        return SHAPE_OTHER
    types = {p.get("type") for p in record.get("content", ())}
    if record.get("role") == "assistant":
        return SHAPE_CALLS if "toolCall" in types else SHAPE_ASSISTANT
    if record.get("role") == "user" and "toolResult" in types:
        return SHAPE_RESULTS
    return SHAPE_USER if record.get("role") == "user" else SHAPE_ASSISTANT


@dataclass(slots=True)
class HistoryIndex:
    """In-memory index of one session's entries (see the module docstring)."""

    kinds: list[str] = field(default_factory=list)
    shapes: list[str] = field(default_factory=list)
    group_cache: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    """Built transcript groups, per tokenizer: an entry never changes, so neither does the
    rendering of a group made of the same entries (see ``sidecar.context.transcript``)."""
    control_seqs: list[int] = field(default_factory=list)
    message_cum: list[int] = field(default_factory=lambda: [0])
    """``message_cum[i]``: message entries among the first ``i``."""
    result_cum: list[int] = field(default_factory=lambda: [0])
    """``result_cum[i]``: tool-result entries (shape ``r``) among the first ``i``."""
    user_seqs: list[int] = field(default_factory=list)
    """The seqs of the user's own messages (shape ``u``), ascending."""
    _records: OrderedDict[int, dict[str, Any]] = field(default_factory=OrderedDict)
    _tokens: dict[str, _TokenIndex] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)  # views run in worker threads

    def add(self, records: Sequence[dict[str, Any]], first_seq: int) -> None:
        for offset, record in enumerate(records):
            kind = sys.intern(str(record.get("kind", "")))
            self.kinds.append(kind)
            shape = entry_shape(record)
            self.shapes.append(shape)
            self.message_cum.append(self.message_cum[-1] + (shape != SHAPE_OTHER))
            self.result_cum.append(self.result_cum[-1] + (shape == SHAPE_RESULTS))
            if shape == SHAPE_USER:
                self.user_seqs.append(first_seq + offset)
            if kind in CONTROL_KINDS:
                self.control_seqs.append(first_seq + offset)

    def bulk(self) -> list[dict[Any, Any]]:
        """The containers whose every element holds a graph of objects (its parsed records,
        its built groups), for :func:`sidecar.interpreter.reaper.dismantle` once the session
        is dropped.  Its flat lists (kinds, running sums, counts) free in microseconds."""
        return [self._records, self.group_cache]

    def record(self, seq: int, lines: Sequence[bytes]) -> dict[str, Any]:
        with self._lock:
            cached = self._records.get(seq)
            if cached is not None:
                self._records.move_to_end(seq)
                return cached
        record: dict[str, Any] = json.loads(lines[seq - 1])
        with self._lock:
            self._records[seq] = record
            if len(self._records) > _RECORD_CACHE:
                self._records.popitem(last=False)
        return record

    def sync_tokens(
        self,
        tokenizer: str,
        head: int,
        hashes: Sequence[str],
        lines: Sequence[bytes],
        cache: TokenCountCache,
        count: CountFn,
    ) -> _TokenIndex:
        """Make the counts of entries 1..head known for ``tokenizer`` (only new ones are
        looked up, only never-counted ones are tokenized)."""
        with self._lock:
            index = self._tokens.setdefault(tokenizer, _TokenIndex())
        if len(index.counts) >= head:
            return index
        with index.lock:
            done = len(index.counts)
            if done < head:
                seqs = list(range(done + 1, head + 1))
                fresh = cache.counts(
                    tokenizer,
                    [hashes[s - 1] for s in seqs],
                    lambda idx: [self.record(seqs[i], lines) for i in idx],
                    count,
                )
                running, tool = index.cum[-1], index.tool_cum[-1]
                for seq, n in zip(seqs, fresh, strict=True):
                    running += n
                    if self.shapes[seq - 1] == SHAPE_RESULTS:
                        tool += n
                    index.cum.append(running)
                    index.tool_cum.append(tool)
                    index.counts.append(n)  # last: readers go by len(counts) without the lock
        return index


class HistoryView:
    """A session's history at one head, for one tokenizer."""

    def __init__(
        self,
        head: int,
        index: HistoryIndex,
        lines: Sequence[bytes],
        tokens: _TokenIndex,
        tokenizer: str = "",
        *,
        release: Callable[[], None] | None = None,
    ) -> None:
        """``release``: gives back what keeps the lines readable (a lease on the session);
        called once, by :meth:`close` or when the view is collected."""
        self.head = head
        self.tokenizer = tokenizer
        self._index = index
        self._lines = lines
        self._tokens = tokens
        self._release: weakref.finalize[[], HistoryView] | None = None
        if release is not None:
            self._release = weakref.finalize(self, release)
            self._release.atexit = False

    def close(self) -> None:
        """Release the session (idempotent); the view must not be read afterwards."""
        if self._release is not None:
            self._release()

    def __enter__(self) -> HistoryView:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def kind(self, seq: int) -> str:
        return self._index.kinds[seq - 1]

    def shape(self, seq: int) -> str:
        return self._index.shapes[seq - 1]

    @property
    def shapes(self) -> list[str]:
        """:meth:`shape` of every entry, at index ``seq - 1`` (read-only; it may run past the
        head: entries appended after the view was made)."""
        return self._index.shapes

    @property
    def group_cache(self) -> dict[tuple[Any, ...], Any]:
        return self._index.group_cache

    def record(self, seq: int) -> dict[str, Any]:
        return self._index.record(seq, self._lines)

    def tokens(self, seq: int) -> int:
        return self._tokens.counts[seq - 1]

    def tokens_between(self, first: int, last: int) -> int:
        """Sum of the counts of seqs ``first..last`` inclusive (0 when empty)."""
        if last < first:
            return 0
        return self._tokens.cum[last] - self._tokens.cum[first - 1]

    def tool_tokens_through(self, seq: int) -> int:
        """Tokens of the tool-result entries among seqs ``1..seq`` (0 for ``seq <= 0``)."""
        return self._tokens.tool_cum[max(seq, 0)]

    def last_seq_with_tool_tokens_at_most(self, tokens: int) -> int:
        """The largest seq ``<= head`` whose :meth:`tool_tokens_through` is ``<= tokens``
        (0 when none): where a boundary on the tool-output axis falls in seqs."""
        return bisect_right(self._tokens.tool_cum, tokens, 0, self.head + 1) - 1

    def seq_of_result(self, number: int) -> int:
        """The seq of the ``number``-th tool-result entry (1-based; ``head + 1`` when the
        history has fewer)."""
        return bisect_left(self._index.result_cum, number, 0, self.head + 1)

    def user_seqs_before(self, before: int) -> list[int]:
        """The seqs of the user's own messages before ``before`` (and at most the head),
        ascending: found by bisection, not by a scan of the history."""
        users = self._index.user_seqs
        return users[: bisect_left(users, min(before, self.head + 1))]

    def results_between(self, first: int, last: int) -> int:
        """Tool-result entries among seqs ``first..last`` inclusive."""
        if last < first:
            return 0
        return self._index.result_cum[last] - self._index.result_cum[first - 1]

    def messages_between(self, first: int, last: int) -> int:
        """Message entries among seqs ``first..last`` inclusive."""
        if last < first:
            return 0
        return self._index.message_cum[last] - self._index.message_cum[first - 1]

    def control_seqs(self) -> list[int]:
        return [s for s in self._index.control_seqs if s <= self.head]

    def controls(self, kinds: Callable[[str], bool] = lambda _: True) -> list[dict[str, Any]]:
        """Parsed control entries (compaction, pin, ...) up to the head, oldest first."""
        return [self.record(s) for s in self.control_seqs() if kinds(self.kind(s))]
