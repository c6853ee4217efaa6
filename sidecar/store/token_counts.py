"""Persisted token counts per entry, keyed by (content hash, tokenizer id).

Counting is the expensive part of assembling a prompt; an entry's content never changes, so
its count is computed once per tokenizer and appended to ``tokens-<tokenizer>.jsonl`` beside
the session's history.  The file is a cache: it is not fsynced, torn or unreadable lines are
skipped, and a lost count is simply computed again.  Views in several worker threads may ask
at once: one lock per session makes the table load once and keeps appended rows whole.
Several processes may count the same session (the one writing it, others reading it): each
batch of rows is one ``write`` to a file opened in append mode, so their rows never mix.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from sidecar.store.jsonl import write_fully

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["TokenCountCache"]

logger = logging.getLogger(__name__)

CountFn = Callable[[Sequence[dict[str, Any]]], list[int]]


class TokenCountCache:
    """Counts of one session's entries for each tokenizer used so far."""

    def __init__(self, session_dir: Path, can_write: Callable[[], bool] = lambda: True) -> None:
        """``can_write``: whether this process may append to the store (one that opened it
        read-only counts in memory only)."""
        self._dir = session_dir
        self._can_write = can_write
        self._counts: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    def _file(self, tokenizer: str) -> Path:
        return self._dir / f"tokens-{tokenizer}.jsonl"

    def _table(self, tokenizer: str) -> dict[str, int]:
        table = self._counts.get(tokenizer)
        if table is None:
            table = {}
            path = self._file(tokenizer)
            if path.exists():
                for line in path.read_bytes().splitlines():
                    try:
                        row = json.loads(line)
                        # interned: the history index holds the same hash strings
                        table[sys.intern(str(row["h"]))] = int(row["n"])
                    except (ValueError, KeyError, TypeError):
                        continue
            self._counts[tokenizer] = table
        return table

    def counts(
        self,
        tokenizer: str,
        hashes: Sequence[str],
        records: Callable[[list[int]], Sequence[dict[str, Any]]],
        count: CountFn,
    ) -> list[int]:
        """Counts for ``hashes``; the missing ones are computed from ``records(indexes)`` with
        ``count`` and persisted."""
        with self._lock:
            return self._counts_locked(tokenizer, hashes, records, count)

    def _counts_locked(
        self,
        tokenizer: str,
        hashes: Sequence[str],
        records: Callable[[list[int]], Sequence[dict[str, Any]]],
        count: CountFn,
    ) -> list[int]:
        table = self._table(tokenizer)
        missing = [i for i, h in enumerate(hashes) if h not in table]
        if missing:
            fresh = count(records(missing))
            rows = []
            for i, n in zip(missing, fresh, strict=True):
                table[hashes[i]] = n
                rows.append(json.dumps({"h": hashes[i], "n": n}, separators=(",", ":")))
            if not self._can_write():
                return [table[h] for h in hashes]
            try:
                fd = os.open(self._file(tokenizer), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    write_fully(fd, ("\n".join(rows) + "\n").encode())
                finally:
                    os.close(fd)
            except OSError:
                logger.warning("could not persist token counts in %s", self._dir, exc_info=True)
        return [table[h] for h in hashes]
