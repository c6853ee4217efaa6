"""Sessions: metadata in ``session.json``, history in append-only ``history.jsonl``.

Layout under the store root::

    sessions/<sessionId>/session.json        title, roots, profile, createdAt, forkedFrom
    sessions/<sessionId>/history.jsonl       one entry per line, seq = line number
    sessions/<sessionId>/tokens-<tok>.jsonl  token-count cache (see token_counts.py)
    trash/<sessionId>-<time>/                deleted sessions, kept until removed by hand

``headSeq`` and ``updatedAt`` are derived from the history (its last line), never stored
twice, so an append writes exactly one file.  Writes to one session are serialised by an
``anyio.Lock``; the fsync runs in a worker thread so the event loop keeps serving reads, and
readers only ever see acknowledged entries (an append publishes the new head last).

Loaded states are owned by :class:`~sidecar.store.loaded.LoadedSessions`: every method holds
a lease on the state it uses for as long as it uses it (a :class:`HistoryView` holds one
until it is closed or collected), so no eviction, reload or delete closes a state under its
user, and two copies of one session are never loaded.  At most
``$CONTEXT_SIDECAR_MAX_LOADED_SESSIONS`` (default 64) idle sessions stay loaded.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xxhash

from protocol.error_codes import ErrorCode
from sidecar.aio import in_thread, run_to_completion
from sidecar.defaults import max_loaded_sessions
from sidecar.errors import (
    BusyError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    StoreCorruptError,
)
from sidecar.ids import new_id, now_iso
from sidecar.jsonbytes import dumps_bytes
from sidecar.store.history import HistoryIndex, HistoryView
from sidecar.store.jsonl import AppendLog, fsync_dir, write_file_atomic, write_new_file
from sidecar.store.lines import FileLines
from sidecar.store.loaded import Lease, LoadedSessions
from sidecar.store.token_counts import CountFn, TokenCountCache

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from contextlib import AbstractAsyncContextManager

    from protocol.entries import EntryInput
    from protocol.sessions import Session
    from sidecar.store.lock import StoreLock

__all__ = ["ReadPage", "SessionStore", "content_hash"]

_SESSION_PREFIX = "ses_"
_ID_LEN = len(_SESSION_PREFIX) + 26


def content_hash(body: dict[str, Any]) -> str:
    """xxh3-128 of an entry's compact JSON, keys in their own order, ``meta`` excluded (it
    never reaches a model)."""
    return _hashed(body)[0]


def _hashed(body: dict[str, Any]) -> tuple[str, bytes]:
    """The content hash and the JSON it is taken of: the body as stored, keys in the order
    they came.  Not sorted: the order of a tool call's arguments is what the model produced
    and what goes back to the provider, byte for byte, on every later turn (a prompt cache
    matches bytes); equal hashes mean equal bytes sent."""
    canon = dumps_bytes({k: v for k, v in body.items() if k != "meta"})
    return xxhash.xxh3_128_hexdigest(canon), canon


def _session_model(wire: dict[str, Any]) -> Session:
    """Validate a session read from the store into its wire model (loaded on first use: the
    store is opened, and sessions listed, before the wire models load)."""
    from protocol._base import parse_wire
    from protocol.sessions import Session

    return parse_wire(Session, wire)


_REF_KEYS = frozenset({"seq", "id", "time", "hash"})


def _entry_line(ref: dict[str, Any], body: dict[str, Any], canon: bytes) -> bytes:
    """The stored line of ``{**ref, **body}``, reusing the body's JSON (one encoding per
    entry instead of two on the append path)."""
    if body.keys() & _REF_KEYS:  # a body key shadows a reference key: keep dict semantics
        return dumps_bytes({**ref, **body})
    line = dumps_bytes(ref)[:-1] + b"," + canon[1:]
    if "meta" in body:
        line = line[:-1] + b',"meta":' + dumps_bytes(body["meta"]) + b"}"
    return line


@dataclass(slots=True)
class _State:
    """One loaded session (owned by ``LoadedSessions``; used under a lease)."""

    meta: dict[str, Any]
    dir: Path
    log: AppendLog | None
    lines: FileLines
    hashes: list[str]
    last_time: str | None
    size: int
    tokens: TokenCountCache
    head: int
    """Published last by an append, once the lines, hashes and index hold the new entries:
    a reader in another thread never sees a head whose entries are not readable yet."""
    index: HistoryIndex = field(default_factory=HistoryIndex)

    def close(self) -> None:
        self.lines.close()  # before the log: it may borrow the log's descriptor
        if self.log is not None:
            self.log.close()


@dataclass(frozen=True, slots=True)
class ReadPage:
    entries: list[dict[str, Any]]
    head_seq: int
    has_more: bool


class SessionStore:
    """All sessions of one store root."""

    def __init__(self, root: Path, lock: StoreLock, *, max_loaded: int | None = None) -> None:
        """``max_loaded``: idle sessions kept loaded (default
        ``$CONTEXT_SIDECAR_MAX_LOADED_SESSIONS``, else 64); an idle one beyond it is dropped
        and its history file closed, and loads again when next used."""
        self.root = root
        self._dir = root / "sessions"
        self._trash = root / "trash"
        self._lock = lock
        self._loaded: LoadedSessions[_State] = LoadedSessions(
            lambda session_id: self._load(session_id),
            max_loaded=max_loaded_sessions() if max_loaded is None else max_loaded,
            fresh=self._fresh,
        )
        self._dir.mkdir(parents=True, exist_ok=True)

    @property
    def max_loaded(self) -> int:
        """How many idle sessions stay loaded."""
        return self._loaded.max_loaded

    # --- write permission ----------------------------------------------------------------

    @property
    def writable(self) -> bool:
        return self._lock.held

    def require_writer(self) -> None:
        """Raise ``store.locked`` unless this process holds, or can now take, the store's
        write lock (taking it reloads the sessions it had loaded read-only)."""
        if self._lock.held:
            return
        if self._lock.try_acquire():
            self._loaded.clear()  # loaded read-only: reload as the writer
            return
        raise BusyError(
            ErrorCode.STORE_LOCKED,
            "another sidecar is writing this store; reads work, writes are refused until it exits",
            details={"holderPid": self._lock.holder_pid(), "store": str(self.root)},
            retry_after_ms=1000,
        )

    # --- loading ---------------------------------------------------------------------------

    def _session_dir(self, session_id: str) -> Path:
        if (
            not session_id.startswith(_SESSION_PREFIX)
            or len(session_id) != _ID_LEN
            or not session_id[len(_SESSION_PREFIX) :].isalnum()
        ):
            raise self._not_found(session_id)
        return self._dir / session_id

    @staticmethod
    def _not_found(session_id: str) -> NotFoundError:
        return NotFoundError(
            ErrorCode.SESSION_NOT_FOUND,
            f"no session {session_id!r}",
            details={"sessionId": session_id},
        )

    def _fresh(self, state: _State) -> bool:
        """Whether a loaded state still matches its file: always for the writer (every
        append goes through it); a reader reloads what another process appended."""
        return self._lock.held or _size(state.dir / "history.jsonl") == state.size

    def _lease(self, session_id: str) -> Lease[_State]:
        """A lease on the session's state, loaded if needed (blocking)."""
        self._session_dir(session_id)  # validates the id
        return self._loaded.acquire(session_id)

    async def _lease_async(self, session_id: str) -> Lease[_State]:
        """:meth:`_lease` for the event loop: a cold session loads in a worker thread."""
        self._session_dir(session_id)
        lease = self._loaded.acquire_loaded(session_id)
        if lease is None:
            # not abandoned on cancel: the lease comes back to this task, which releases it
            lease = await in_thread(self._loaded.acquire, session_id)
        return lease

    def _writing(self, session_id: str) -> AbstractAsyncContextManager[None]:
        """The session's write lock (one writer at a time)."""
        self._session_dir(session_id)
        return self._loaded.writing(session_id)

    def _load(self, session_id: str) -> _State:
        sdir = self._session_dir(session_id)
        try:
            meta = json.loads((sdir / "session.json").read_bytes())
        except FileNotFoundError:
            raise self._not_found(session_id) from None
        hashes: list[str] = []
        index = HistoryIndex()
        last_time: list[str | None] = [None]

        def visit(i: int, record: dict[str, Any]) -> None:
            if record.get("seq") != i + 1:
                raise StoreCorruptError(
                    f"session {session_id}: entry {i + 1} has seq {record.get('seq')!r}",
                    details={"sessionId": session_id, "line": i + 1},
                )
            hashes.append(sys.intern(str(record.get("hash", ""))))
            last_time[0] = record.get("time")
            index.add((record,), i + 1)

        path = sdir / "history.jsonl"
        log, loaded = AppendLog.open(path, writable=self._lock.held, visit=visit, keep_lines=False)
        try:
            lines = FileLines(path, loaded.starts, loaded.end, fd=log.fd if log else None)
        except BaseException:
            if log is not None:
                log.close()
            raise
        return _State(
            meta=meta,
            dir=sdir,
            log=log,
            lines=lines,
            hashes=hashes,
            last_time=last_time[0],
            size=loaded.end,
            tokens=TokenCountCache(sdir, lambda: self._lock.held),
            head=len(loaded.starts),
            index=index,
        )

    def _session_wire(self, state: _State) -> dict[str, Any]:
        """The session as :class:`protocol.sessions.Session` on the wire (``None`` fields
        left out), straight from its state: :mod:`sidecar.methods.light` sends it before the
        wire models have loaded, :meth:`_session` validates it into the model."""
        meta = state.meta
        updated = meta["updatedAt"]
        if state.last_time and state.last_time > updated:
            updated = state.last_time
        wire: dict[str, Any] = {
            "sessionId": meta["sessionId"],
            "title": meta["title"],
            "workspaceRoots": list(meta["workspaceRoots"]),
        }
        if meta.get("profileId") is not None:
            wire["profileId"] = meta["profileId"]
        wire["createdAt"] = meta["createdAt"]
        wire["updatedAt"] = updated
        wire["headSeq"] = state.head
        forked = meta.get("forkedFrom")
        if forked:
            wire["forkedFrom"] = {"sessionId": forked["sessionId"], "atSeq": forked["atSeq"]}
        if meta.get("meta") is not None:
            wire["meta"] = meta["meta"]
        return wire

    def _session(self, state: _State) -> Session:
        return _session_model(self._session_wire(state))

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
        self.require_writer()
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
        session_id, write = self._creation(
            title=title,
            workspace_roots=workspace_roots,
            profile_id=profile_id,
            meta=meta,
            forked_from=forked_from,
            history=history,
            caches_from=caches_from,
        )
        await run_to_completion(lambda: in_thread(write))
        return self.get(session_id)

    def create_now_wire(
        self, *, title: str, workspace_roots: Sequence[str], profile_id: str | None, meta: Any
    ) -> dict[str, Any]:
        """:meth:`create` of an empty session, written on the calling thread (start-up, before
        the event loop has anything else to do), the session as :meth:`list_page_wire` gives
        it: :mod:`sidecar.methods.light` answers a host's first ``session/create`` with it before
        the wire models have loaded.  Raises before writing anything when the store is not
        this process's to write or a root is not absolute."""
        self.require_writer()
        session_id, write = self._creation(
            title=title,
            workspace_roots=workspace_roots,
            profile_id=profile_id,
            meta=meta,
            forked_from=None,
            history=lambda: b"",
        )
        write()
        with self._lease(session_id) as state:
            return self._session_wire(state)

    def _creation(
        self,
        *,
        title: str,
        workspace_roots: Sequence[str],
        profile_id: str | None,
        meta: dict[str, Any] | None,
        forked_from: dict[str, Any] | None,
        history: Callable[[], bytes],
        caches_from: Path | None = None,
    ) -> tuple[str, Callable[[], None]]:
        """A new session's id and the function that writes it (nothing is written before)."""
        roots = _absolute_roots(workspace_roots)
        session_id = new_id("ses")
        now = now_iso()
        record: dict[str, Any] = {
            "sessionId": session_id,
            "title": title,
            "workspaceRoots": roots,
            "profileId": profile_id,
            "createdAt": now,
            "updatedAt": now,
            "forkedFrom": forked_from,
            "meta": meta,
        }
        body = dumps_bytes(record)
        sdir = self._dir / session_id

        def write() -> None:
            sdir.mkdir()
            write_new_file(sdir / "history.jsonl", history())
            if caches_from is not None:
                _copy_token_caches(caches_from, sdir)
            # session.json last: a directory without it is an unfinished create, never listed
            write_file_atomic(sdir / "session.json", body)
            fsync_dir(self._dir)

        return session_id, write

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
        :meth:`_session_wire`)."""
        ids = sorted(
            (n for n in os.listdir(self._dir) if n.startswith(_SESSION_PREFIX)), reverse=True
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
                page.append(self._session_wire(state))
        more = bool(ids) and last_seen is not None and last_seen != ids[-1]
        return page, (last_seen if more else None)

    async def rename(self, session_id: str, title: str) -> Session:
        return await self._rewrite(session_id, lambda meta: {"title": title})

    async def merge_meta(self, session_id: str, key: str, fields: dict[str, Any]) -> Session:
        """Merge ``fields`` into the object at ``key`` of the session's free-form ``meta`` (a
        front end's own settings: the ACP face keeps a session's approval mode and model
        there), under the session's write lock."""

        def change(meta: dict[str, Any]) -> dict[str, Any]:
            free = dict(meta.get("meta") or {})
            old = free.get(key)
            free[key] = {**(old if isinstance(old, dict) else {}), **fields}
            return {"meta": free}

        return await self._rewrite(session_id, change)

    async def _rewrite(
        self, session_id: str, change: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> Session:
        """Replace the fields ``change(session.json)`` returns, under the session's write
        lock (atomically; ``updatedAt`` moves)."""
        self.require_writer()
        async with self._writing(session_id):
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
        session).  Refusing a session a run is using is the caller's (``RunManager``)."""
        self.require_writer()
        async with self._writing(session_id):
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
                    self._loaded.forget(session_id)

                await run_to_completion(commit)

    async def fork(self, session_id: str, *, at_seq: int | None, title: str | None) -> Session:
        """A new session holding the first ``at_seq`` entries (default: all) and the
        source's token-count caches; everything is written and fsynced in a worker thread."""
        self.require_writer()
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
        self.require_writer()
        async with self._writing(session_id):
            with await self._lease_async(session_id) as state:
                return await self._append(state, session_id, entries, expected_head_seq)

    async def _append(
        self,
        state: _State,
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
            _check_refs(body, seq, session_id)
            digest, canon = _hashed(body)
            ref = {"seq": seq, "id": new_id("ent"), "time": time, "hash": digest}
            refs.append(ref)
            records.append({**ref, **body})
            lines.append(_entry_line(ref, body, canon))
            hashes.append(sys.intern(digest))
        payload = b"".join(line + b"\n" for line in lines)
        log = state.log
        assert log is not None  # the writer always opens logs writable

        async def commit() -> None:
            await in_thread(log.append, payload)
            state.index.add(records, head + 1)
            state.lines.extend(lines)
            state.hashes.extend(hashes)
            state.last_time = time
            state.size = log.size
            state.head = head + len(lines)  # last: readers in threads go by the head

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

    def session_dir(self, session_id: str) -> Path:
        """The directory of an existing session (``session.not_found`` otherwise)."""
        directory = self._session_dir(session_id)
        if not (directory / "session.json").exists():
            raise self._not_found(session_id)
        return directory

    def session_ids(self) -> list[str]:
        return sorted(n for n in os.listdir(self._dir) if n.startswith(_SESSION_PREFIX))

    def close(self) -> None:
        """Drop every loaded state (each is closed now, or by its last lease)."""
        self._loaded.clear()


def _copy_token_caches(source: Path, target: Path) -> None:
    """Copy a session's token-count caches (complete lines only: the source may be being
    appended to), each fsynced; the caller fsyncs the directory."""
    for cache in sorted(source.glob("tokens-*.jsonl")):
        try:
            data = cache.read_bytes()
        except FileNotFoundError:
            continue
        write_new_file(target / cache.name, data[: data.rfind(b"\n") + 1])


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _absolute_roots(roots: Sequence[str]) -> list[str]:
    out: list[str] = []
    for root in roots:
        if not os.path.isabs(root):
            raise InvalidRequestError(
                ErrorCode.PARAMS_INVALID,
                f"workspace root must be an absolute path: {root!r}",
                details={"workspaceRoot": root},
            )
        out.append(os.path.normpath(root))
    return out


def _check_refs(body: dict[str, Any], seq: int, session_id: str) -> None:
    """An entry may only refer to entries before itself."""
    refs: list[int] = []
    if body["kind"] == "compaction":
        refs.append(body["throughSeq"])
    target = body.get("target")
    if isinstance(target, dict) and target.get("kind") == "range":
        refs.append(target["throughSeq"])
    for ref in refs:
        if ref >= seq:
            raise InvalidRequestError(
                ErrorCode.SEQ_OUT_OF_RANGE,
                f"entry {seq} refers to seq {ref}, which is not before it",
                details={"sessionId": session_id, "seq": seq, "refersTo": ref},
            )
