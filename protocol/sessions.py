"""Params and results of the ``session/*`` methods."""

from __future__ import annotations

from pydantic import Field

from protocol._base import (
    JsonObject,
    NonEmptyPath,
    NonEmptyStr,
    SeqNumber,
    TextKeyedJsonObject,
    Timestamp,
    WireModel,
)
from protocol.entries import Entry, EntryInput, EntryRef
from protocol.limits import (
    DEFAULT_LIST_LIMIT,
    MAX_APPEND_ENTRIES,
    MAX_LIST_LIMIT,
    MAX_READ_LIMIT,
)

__all__ = [
    "ForkOrigin",
    "Session",
    "SessionAppendParams",
    "SessionAppendResult",
    "SessionCreateParams",
    "SessionDeleteResult",
    "SessionHolder",
    "SessionForkParams",
    "SessionListParams",
    "SessionListResult",
    "SessionReadParams",
    "SessionReadResult",
    "SessionRef",
    "SessionReleaseResult",
    "SessionRenameParams",
]


class ForkOrigin(WireModel):
    session_id: NonEmptyStr
    at_seq: SeqNumber


class SessionHolder(WireModel):
    """The process writing a session: sessions are written by one process at a time."""

    pid: int
    face: str
    """``serve``, ``acp``, or the tool that opened the store."""
    since: str
    """When that process took the session (ISO 8601)."""


class Session(WireModel):
    session_id: NonEmptyStr
    """``ses_`` + 26 characters, time-ordered (newer sessions sort later)."""
    title: str
    workspace_roots: list[str]
    """Absolute paths the session may read from; the first is the primary root."""
    profile_id: str | None = None
    created_at: Timestamp
    updated_at: Timestamp
    """Time of the last append or rename."""
    head_seq: SeqNumber
    """Seq of the newest entry; 0 for an empty session."""
    forked_from: ForkOrigin | None = None
    meta: JsonObject | None = None
    held_by: SessionHolder | None = None
    """The process that holds the session for writing (this one, or another sidecar on the
    same store), absent when none does: another process's writes answer ``session.held``
    until it releases the session (``session/release``) or ends."""


class SessionCreateParams(WireModel):
    title: str = Field(default="", max_length=500)
    workspace_roots: list[NonEmptyPath] = Field(default_factory=list)
    """Absolute paths; relative paths are rejected."""
    profile_id: str | None = None
    meta: TextKeyedJsonObject | None = None


class SessionRef(WireModel):
    """Params of methods that act on one whole session (``session/get``, ``session/delete``)."""

    session_id: NonEmptyStr


class SessionListParams(WireModel):
    cursor: str | None = None
    """``nextCursor`` of the previous page; omit for the first page."""
    limit: int = Field(default=DEFAULT_LIST_LIMIT, ge=1, le=MAX_LIST_LIMIT)


class SessionListResult(WireModel):
    sessions: list[Session]
    """Newest first (by creation); stable under concurrent creation."""
    next_cursor: str | None = None
    """Present when more sessions follow."""


class SessionAppendParams(WireModel):
    session_id: NonEmptyStr
    entries: list[EntryInput] = Field(min_length=1, max_length=MAX_APPEND_ENTRIES)
    expected_head_seq: SeqNumber | None = None
    """Optimistic concurrency: when given and the head differs, nothing is written and the
    answer is ``store.conflict`` with the actual head in ``data.details.headSeq``."""


class SessionAppendResult(WireModel):
    head_seq: SeqNumber
    appended: list[EntryRef]
    """One per appended entry, in order; durable (fsynced) before this answer is sent."""


class SessionReadParams(WireModel):
    """Read a page of history in ascending seq order.

    With ``afterSeq`` (or neither bound) the page starts right after ``afterSeq`` (default 0)
    and goes forward.  With only ``beforeSeq`` the page is the ``limit`` entries immediately
    before it (scrolling back from the newest: ``beforeSeq = headSeq + 1``).  With both, the
    page starts after ``afterSeq`` and stops before ``beforeSeq``.
    """

    session_id: NonEmptyStr
    after_seq: SeqNumber | None = None
    before_seq: SeqNumber | None = None
    limit: int = Field(default=200, ge=1, le=MAX_READ_LIMIT)
    with_tokens: bool = False
    """Include cached token counts (computed once per entry and tokenizer, then persisted)."""
    tokenizer: str | None = None
    """Tokenizer id for ``withTokens``; default: the server's default tokenizer."""


class SessionReadResult(WireModel):
    entries: list[Entry]
    head_seq: SeqNumber
    has_more: bool
    """True when more entries exist in the direction read (forward, or backward for a
    ``beforeSeq``-only read) within the requested bounds."""


class SessionForkParams(WireModel):
    session_id: NonEmptyStr
    at_seq: SeqNumber | None = None
    """Last entry copied into the fork; default: the source's head."""
    title: str | None = Field(default=None, max_length=500)


class SessionRenameParams(WireModel):
    session_id: NonEmptyStr
    title: str = Field(max_length=500)


class SessionReleaseResult(WireModel):
    session_id: NonEmptyStr
    released: bool
    """True when this process held the session and has given it back; false when it did not
    hold it."""


class SessionDeleteResult(WireModel):
    session_id: NonEmptyStr
    deleted: bool
    """Always true; the session's files are moved to the store's ``trash/``, not erased."""
