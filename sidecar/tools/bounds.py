"""How large a built-in tool's result may be, and the one way results are cut.

Bounds are in tokens, counted with the real tokenizer: results are first cut in characters
(3 per token, cheap), then :func:`fit_lines` / :func:`fit_head_tail` check the real count and
cut further where the text tokenizes densely (numbers and symbols run at ~2 characters per
token): a result is never larger than promised.  The defaults follow the agents users know
(REFERENCES.md §H): reads of 2,000 lines with long lines cut at 2,000 characters (Claude
Code), search results capped at 100 files (Continue CLI), shell output cut keeping head and
tail (Claude Code).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_BOUNDS",
    "Bounds",
    "count_tokens",
    "cut_head_tail",
    "cut_line",
    "fit_head_tail",
    "fit_lines",
]

CHARS_PER_TOKEN = 3


@dataclass(frozen=True, slots=True)
class Bounds:
    """Limits applied to every result of the built-in tools (a profile may set them)."""

    max_tokens: int = 10_000
    """The whole result, in tokens (about ``3 * max_tokens`` characters)."""
    read_lines: int = 2_000
    """Lines a read returns when the call names no limit."""
    line_chars: int = 2_000
    """Characters kept of one line (read, grep); the rest is marked as cut."""
    entries: int = 500
    """Entries of a directory listing or a glob."""
    grep_files: int = 100
    """Files a grep reports."""
    grep_lines_per_file: int = 50
    """Matching lines shown per file before "and N more"."""
    max_file_bytes: int = 20 * 1024 * 1024
    """Files larger than this are not read at all (grep for what you need in them)."""

    @property
    def max_chars(self) -> int:
        return self.max_tokens * CHARS_PER_TOKEN


DEFAULT_BOUNDS = Bounds()


def cut_line(line: str, limit: int) -> str:
    """``line`` kept to ``limit`` characters, with a marker saying how many were cut."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]}… [{len(line) - limit} more characters cut]"


def cut_head_tail(text: str, limit: int, hint: str) -> tuple[str, bool]:
    """``text`` kept to about ``limit`` characters: its head and its tail, the middle replaced
    by a line saying how much went and ``hint`` (how to get it)."""
    if len(text) <= limit:
        return text, False
    head = text[: limit * 2 // 3]
    tail = text[len(text) - limit // 3 :]
    head = head[: head.rfind("\n") + 1] or head
    nl = tail.find("\n")
    tail = tail[nl + 1 :] if 0 <= nl < len(tail) - 1 else tail
    gone = len(text) - len(head) - len(tail)
    return f"{head}[… {gone} characters cut from the middle; {hint} …]\n{tail}", True


@functools.cache
def _counter() -> Callable[[str], int]:
    from sidecar.context.tokens import Tokenizers  # the tokenizer loads on first use

    return Tokenizers.discover().get(None).count


def count_tokens(text: str) -> int:
    """Tokens of ``text`` with the default tokenizer (cl100k, offline)."""
    return _counter()(text)


def fit_lines(lines: list[str], max_tokens: int, reserve: int = 60) -> int:
    """How many leading ``lines`` fit in ``max_tokens`` (joined by newlines), keeping
    ``reserve`` tokens for the line that says what was cut; all of them when they fit."""
    if count_tokens("\n".join(lines)) <= max_tokens:
        return len(lines)
    low, high = 0, len(lines)  # low fits, high does not
    while high - low > 1:
        mid = (low + high) // 2
        if count_tokens("\n".join(lines[:mid])) <= max_tokens - reserve:
            low = mid
        else:
            high = mid
    return low


def fit_head_tail(text: str, max_tokens: int, hint: str) -> tuple[str, bool]:
    """:func:`cut_head_tail` at a size whose real token count is within ``max_tokens``."""
    out, cut = cut_head_tail(text, max_tokens * CHARS_PER_TOKEN, hint)
    limit = len(out)
    while count_tokens(out) > max_tokens and limit > 200:
        limit = int(limit * 0.85)
        out, cut = cut_head_tail(text, limit, hint)
    return out, cut
