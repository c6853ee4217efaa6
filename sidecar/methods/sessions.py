"""``session/*``: translate wire params into store calls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol import methods as m
from protocol.sessions import (
    Session,
    SessionAppendParams,
    SessionCreateParams,
    SessionDeleteResult,
    SessionForkParams,
    SessionListParams,
    SessionListResult,
    SessionReadParams,
    SessionRef,
    SessionReleaseResult,
    SessionRenameParams,
)
from sidecar.aio import in_cpu_lane
from sidecar.context.tokens import count_entries
from sidecar.methods.route import route

if TYPE_CHECKING:
    from sidecar.methods.state import SidecarState

__all__ = ["ROUTES"]


async def create(state: SidecarState, p: SessionCreateParams) -> Session:
    return await state.store.sessions.create(
        title=p.title, workspace_roots=p.workspace_roots, profile_id=p.profile_id, meta=p.meta
    )


async def list_(state: SidecarState, p: SessionListParams) -> SessionListResult:
    sessions, cursor = state.store.sessions.list_page(cursor=p.cursor, limit=p.limit)
    return SessionListResult(sessions=sessions, next_cursor=cursor)


async def get(state: SidecarState, p: SessionRef) -> Session:
    return state.store.sessions.get(p.session_id)


async def append(state: SidecarState, p: SessionAppendParams) -> dict[str, Any]:
    refs, head = await state.store.sessions.append(
        p.session_id, p.entries, expected_head_seq=p.expected_head_seq
    )
    return {"headSeq": head, "appended": refs}


async def read(state: SidecarState, p: SessionReadParams) -> dict[str, Any]:
    sessions = state.store.sessions
    page = sessions.read(
        p.session_id, after_seq=p.after_seq, before_seq=p.before_seq, limit=p.limit
    )
    if p.with_tokens and page.entries:
        tokenizer = state.tokenizers.get(p.tokenizer)
        tok_id = tokenizer.info.id
        seqs = [e["seq"] for e in page.entries]
        counts: list[int] = await in_cpu_lane(
            lambda: sessions.token_counts(
                p.session_id, seqs, tok_id, lambda recs: count_entries(tokenizer, recs)
            )
        )
        for entry, n in zip(page.entries, counts, strict=True):
            entry["tokens"] = {tok_id: n}
    return {"entries": page.entries, "headSeq": page.head_seq, "hasMore": page.has_more}


async def fork(state: SidecarState, p: SessionForkParams) -> Session:
    return await state.store.sessions.fork(p.session_id, at_seq=p.at_seq, title=p.title)


async def rename(state: SidecarState, p: SessionRenameParams) -> Session:
    return await state.store.sessions.rename(p.session_id, p.title)


async def delete(state: SidecarState, p: SessionRef) -> SessionDeleteResult:
    await state.runs.delete_session(p.session_id)
    return SessionDeleteResult(session_id=p.session_id, deleted=True)


async def release(state: SidecarState, p: SessionRef) -> SessionReleaseResult:
    released = await state.runs.release_session(p.session_id)
    return SessionReleaseResult(session_id=p.session_id, released=released)


ROUTES = (
    route(m.SESSION_CREATE, create),
    route(m.SESSION_LIST, list_),
    route(m.SESSION_GET, get),
    route(m.SESSION_APPEND, append),
    route(m.SESSION_READ, read),
    route(m.SESSION_FORK, fork),
    route(m.SESSION_RENAME, rename),
    route(m.SESSION_DELETE, delete),
    route(m.SESSION_RELEASE, release),
)
