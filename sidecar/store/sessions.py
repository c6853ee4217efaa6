"""Sessions: metadata in ``session.json``, history in append-only ``history.jsonl``.

Layout under the store root::

    sessions/<sessionId>/session.json        title, roots, profile, createdAt, forkedFrom
    sessions/<sessionId>/history.jsonl       one entry per line, seq = line number
    sessions/<sessionId>/tokens-<tok>.jsonl  token-count cache (see token_counts.py)
    trash/<sessionId>-<time>/                deleted sessions, kept until removed by hand

``headSeq`` and ``updatedAt`` are derived from the history (its last line), never stored
twice, so an append writes exactly one file.  Every write to a session first makes this
process its holder (:meth:`~sidecar.store.session_state.SessionStates.hold`: another process
holding it answers ``session.held``); within the process, writes to one session are
serialised by an ``anyio.Lock``; the fsync runs in a worker thread so the event loop keeps
serving reads, and readers only ever see acknowledged entries (an append publishes the new
head last).

:class:`SessionStore` holds the operations (create, list, rename, fork, delete; append, read,
token counts, history views).  Loading, leasing and the write permission are its base's,
:class:`~sidecar.store.session_state.SessionStates`: every operation holds a lease on the
state it uses for as long as it uses it (a :class:`HistoryView` holds one until it is closed
or collected).  How a new session is written is :mod:`sidecar.store.new_session`; how an
entry becomes its line, :mod:`sidecar.store.entry_lines`.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.error_codes import ErrorCode
from sidecar.aio import in_thread, run_to_completion
from sidecar.errors import ConflictError, InvalidRequestError
from sidecar.ids import new_id, now_iso
from sidecar.jsonbytes import dumps_bytes
from sidecar.store.entry_lines import check_refs, content_hash_and_json, entry_line
from sidecar.store.history import HistoryView
from sidecar.store.jsonl import fsync_dir, write_file_atomic
from sidecar.store.new_session import NewSession, new_session_write
from sidecar.store.session_state import (
    SESSION_PREFIX,
    SessionState,
    SessionStates,
    session_wire,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from protocol.entries import EntryInput
    from protocol.sessions import Session
    from sidecar.store.token_counts import CountFn

__all__ = ["ReadPage", "SessionStore"]


def _session_model(wire: dict[str, Any]) -> Session:
    """Validate a session read from the store into its wire model (loaded on first use: the
    store is opened, and sessions listed, before the wire models load)."""
    from protocol._base import parse_wire
    from protocol.sessions import Session

    return parse_wire(Session, wire)


@dataclass(frozen=True, slots=True)
class ReadPage:
    entries: list[dict[str, Any]]
    head_seq: int
    has_more: bool


class SessionStore(SessionStates):
    """All sessions of one store root: the operations (loading and leasing: the base)."""

    def _session(self, state: SessionState) -> Session:
        return _session_model(self._wire(state))

    def _wire(self, state: SessionState) -> dict[str, Any]:
        return session_wire(state, self.held_by(state.meta["sessionId"]))

    # --- sessions --------------------------------------------------------------------------

    async def create(
        self,
        *,
        title: str,
        workspace_roots: Sequence[str],
        profile_id: str | None,
        meta: dict[str, Any] | None,
        forked_from: dict[str, Any] | None = None,
        lines: Sequence[bytes] = (),
    ) -> Session:
        self.require_writable()
        return await self._create(
            title=title,
            workspace_roots=workspace_roots,
            profile_id=profile_id,
            meta=meta,
            forked_from=forked_from,
            history=lambda: b"".join(line + b"\n" for line in lines),
        )

    async def _create(
        self,
        *,
        title: str,
        workspace_roots: Sequence[str],
        profile_id: str | None,
        meta: dict[str, Any] | None,
        forked_from: dict[str, Any] | None,
        history: Callable[[], bytes],
        caches_from: Path | None = None,
    ) -> Session:
        """Write a new session: ``history()`` (run in the worker thread) gives its history
        file; ``caches_from``: a session directory whose token-count caches are copied."""
        new = new_session_write(
            self._dir,
            title=title,
            workspace_roots=workspace_roots,
            profile_id=profile_id,
            meta=meta,
            forked_from=forked_from,
            history=history,
            caches_from=caches_from,
            claim=self._claim_new,
        )
        # loaded in the worker thread too, not on the event loop
        wire = await run_to_completion(lambda: in_thread(self._write_new, new))
        return _session_model(wire)

    def create_now_wire(
        self, *, title: str, workspace_roots: Sequence[str], profile_id: str | None, meta: Any
    ) -> dict[str, Any]:
        """:meth:`create` of an empty session, written on the calling thread (start-up, before
        the event loop has anything else to do), the session as :meth:`list_page_wire` gives
        it: :mod:`sidecar.methods.light` answers a host's first ``session/create`` with it before
        the wire models have loaded.  Raises before writing anything when the store is not
        this process's to write or a root is not absolute."""
        self.require_writable()
        return self._write_new(
            new_session_write(
                self._dir,
                title=title,
                workspace_roots=workspace_roots,
                profile_id=profile_id,
                meta=meta,
                forked_from=None,
                history=lambda: b"",
                claim=self._claim_new,
            )
        )

    def _write_new(self, new: NewSession) -> dict[str, Any]:
        """Write a new session (blocking) and install it, loaded from disk when its history
        is not empty (a fork): the session as :func:`session_wire` gives it.  This process
        holds the new session (its lock was taken before ``session.json`` was written)."""
        log = new.write()
        if log is None:
            lease = self._lease(new.session_id)
        else:
            lease = self._install_empty(new.session_id, new.record, log)
        with lease as state:
            return self._wire(state)

    def get(self, session_id: str) -> Session:
        with self._lease(session_id) as state:
            return self._session(state)

    def list_page(self, *, cursor: str | None, limit: int) -> tuple[list[Session], str | None]:
        """Sessions newest first; ``cursor`` is the last id of the previous page."""
        page, next_cursor = self.list_page_wire(cursor=cursor, limit=limit)
        return [_session_model(wire) for wire in page], next_cursor

    def list_page_wire(
        self, *, cursor: str | None, limit: int
    ) -> tuple[list[dict[str, Any]], str | None]:
        """:meth:`list_page` with each session as it is on the wire, unvalidated (see
        :func:`~sidecar.store.session_state.session_wire`)."""
        ids = sorted(
            (n for n in os.listdir(self._dir) if n.startswith(SESSION_PREFIX)), reverse=True
        )
        if cursor:
            ids = [i for i in ids if i < cursor]
        page: list[dict[str, Any]] = []
        last_seen: str | None = None
        for session_id in ids:
            if len(page) == limit:
                break
            last_seen = session_id
            if not (self._dir / session_id / "session.json").exists():
                continue  # an unfinished create
            with self._lease(session_id) as state:
                page.append(self._wire(state))
        more = bool(ids) and last_seen is not None and last_seen != ids[-1]
        return page, (last_seen if more else None)

    async def rename(self, session_id: str, title: str) -> Session:
        return await self._rewrite(session_id, lambda meta: {"title": title})

    async def merge_meta(self, session_id: str, key: str, fields: dict[str, Any]) -> Session:
        """Merge ``fields`` into the object at ``key`` of the session's free-form ``meta`` (a
        front end's own settings: the ACP face keeps a session's approval mode and model
        there), under the session's write lock."""
        return await self.update_meta(session_id, key, lambda old: {**old, **fields})

    async def update_meta(
        self, session_id: str, key: str, update: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> Session:
        """Replace the object at ``key`` of the session's ``meta`` with ``update(old)`` (``{}``
        when there is none), read and written under the session's write lock: two updates at
        once both count."""

        def change(meta: dict[str, Any]) -> dict[str, Any]:
            free = dict(meta.get("meta") or {})
            old = free.get(key)
            free[key] = update(dict(old) if isinstance(old, dict) else {})
            return {"meta": free}

        return await self._rewrite(session_id, change)

    async def _rewrite(
        self, session_id: str, change: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> Session:
        """Replace the fields ``change(session.json)`` returns, under the session's write
        lock (atomically; ``updatedAt`` moves)."""
        async with self._writing(session_id):
            self.hold(session_id)
            with await self._lease_async(session_id) as state:
                meta = dict(state.meta, **change(state.meta), updatedAt=now_iso())

                async def commit() -> None:
                    await in_thread(
                        write_file_atomic, state.dir / "session.json", dumps_bytes(meta)
                    )
                    state.meta = meta

                await run_to_completion(commit)
                return self._session(state)

    async def delete(self, session_id: str) -> None:
        """Move a session to the trash.  Its state is dropped (closed once no one uses it)
        and its write lock goes with the last writer waiting for it (who then finds no
        session).  Refusing a session a run is using is the caller's (``RunManager``).  The
        session's writer lock goes to the trash with it, and is given back."""
        async with self._writing(session_id):
            self.hold(session_id)
            with await self._lease_async(session_id) as state:
                self._trash.mkdir(exist_ok=True)
                stamp = now_iso().replace(":", "").replace("-", "").replace(".", "")
                target = self._trash / f"{session_id}-{stamp}"

                def move() -> None:
                    os.rename(state.dir, target)
                    fsync_dir(self._dir)
                    fsync_dir(self._trash)

                async def commit() -> None:
                    await in_thread(move)
                    self._unhold(session_id)

                await run_to_completion(commit)

    async def fork(self, session_id: str, *, at_seq: int | None, title: str | None) -> Session:
        """A new session holding the first ``at_seq`` entries (default: all) and the
        source's token-count caches; everything is written and fsynced in a worker thread.
        The source is only read (it may be held by another process); the fork is held here."""
        self.require_writable()
        with await self._lease_async(session_id) as source:
            head = source.head
            at = head if at_seq is None else at_seq
            if at > head:
                raise InvalidRequestError(
                    ErrorCode.SEQ_OUT_OF_RANGE,
                    f"atSeq {at} is past the head of {session_id} ({head})",
                    details={"sessionId": session_id, "headSeq": head, "atSeq": at},
                )
            meta = source.meta
            lines = source.lines
            return await self._create(
                title=meta["title"] if title is None else title,
                workspace_roots=meta["workspaceRoots"],
                profile_id=meta.get("profileId"),
                meta=meta.get("meta"),
                forked_from={"sessionId": session_id, "atSeq": at},
                history=lambda: b"".join(line + b"\n" for line in lines[:at]),
                caches_from=source.dir,
            )

    # --- history ---------------------------------------------------------------------------

    async def append(
        self,
        session_id: str,
        entries: Sequence[EntryInput],
        *,
        expected_head_seq: int | None = None,
    ) -> tuple[list[dict[str, Any]], int]:
        """Append durably; return the assigned ``{seq, id, time, hash}`` and the new head."""
        async with self._writing(session_id):
            self.hold(session_id)
            with await self._lease_async(session_id) as state:
                return await self._append(state, session_id, entries, expected_head_seq)

    async def _append(
        self,
        state: SessionState,
        session_id: str,
        entries: Sequence[EntryInput],
        expected_head_seq: int | None,
    ) -> tuple[list[dict[str, Any]], int]:
        from protocol._base import dump_wire  # the entries are wire models: loaded already

        head = state.head
        if expected_head_seq is not None and expected_head_seq != head:
            raise ConflictError(
                f"head of {session_id} is {head}, not {expected_head_seq}",
                details={"sessionId": session_id, "headSeq": head},
            )
        refs: list[dict[str, Any]] = []
        records: list[dict[str, Any]] = []
        lines: list[bytes] = []
        hashes: list[str] = []
        time = now_iso()
        for offset, entry in enumerate(entries, start=1):
            seq = head + offset
            body = dump_wire(entry)
            check_refs(body, seq, session_id)
            digest, canon = content_hash_and_json(body)
            ref = {"seq": seq, "id": new_id("ent"), "time": time, "hash": digest}
            refs.append(ref)
            records.append({**ref, **body})
            lines.append(entry_line(ref, body, canon))
            hashes.append(sys.intern(digest))
        payload = b"".join(line + b"\n" for line in lines)
        log = state.log
        assert log is not None  # the writer always opens logs writable

        def write() -> None:
            log.append(payload)

        def applied() -> None:
            state.index.add(records, head + 1)
            state.lines.extend(lines)
            state.hashes.extend(hashes)
            state.last_time = time
            state.size = log.size
            state.head = head + len(lines)  # last: readers in threads go by the head

        if self.sync_place.inline:  # a fast disk: no await, so nothing can interrupt it
            self.sync_place.timed(write)
            applied()
            return refs, state.head

        async def commit() -> None:
            await in_thread(self.sync_place.timed, write)
            applied()

        await run_to_completion(commit)
        return refs, state.head

    def read(
        self,
        session_id: str,
        *,
        after_seq: int | None,
        before_seq: int | None,
        limit: int,
    ) -> ReadPage:
        with self._lease(session_id) as state:
            head = state.head
            lo = 0 if after_seq is None else min(after_seq, head)  # index of the first candidate
            hi = head if before_seq is None else min(max(before_seq - 1, 0), head)  # exclusive
            if after_seq is None and before_seq is not None:
                start = max(lo, hi - limit)
                stop, more = hi, start > lo
            else:
                start = lo
                stop = min(hi, lo + limit)
                more = stop < hi
            if start >= stop:
                return ReadPage([], head, False)
            return ReadPage([json.loads(line) for line in state.lines[start:stop]], head, more)

    def token_counts(
        self, session_id: str, seqs: Sequence[int], tokenizer: str, count: CountFn
    ) -> list[int]:
        """Cached token counts of the given entries (computed and persisted when missing)."""
        with self._lease(session_id) as state:
            hashes = [state.hashes[s - 1] for s in seqs]

            def records(indexes: list[int]) -> list[dict[str, Any]]:
                return [json.loads(state.lines[seqs[i] - 1]) for i in indexes]

            return state.tokens.counts(tokenizer, hashes, records, count)

    def history(
        self, session_id: str, tokenizer: str, count: CountFn, head: int | None = None
    ) -> HistoryView:
        """A view of the history at its current head (or at an earlier ``head``) with token
        counts for ``tokenizer`` (blocking when counts are missing: call from a worker thread).

        The view holds a lease on the session until it is closed (``with`` or ``close()``)
        or garbage collected: the session is not dropped while it is read through it."""
        lease = self._lease(session_id)
        try:
            state = lease.state
            head = state.head if head is None else min(head, state.head)
            tokens = state.index.sync_tokens(
                tokenizer, head, state.hashes, state.lines, state.tokens, count
            )
        except BaseException:
            lease.release()
            raise
        return HistoryView(head, state.index, state.lines, tokens, tokenizer, release=lease.release)
