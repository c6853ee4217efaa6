"""Writing a new session to disk: its directory, its history file, the token-count caches it
inherits (a fork), then ``session.json`` last — a directory without one is an unfinished
create, never listed — each file fsynced, then the sessions directory.

Nothing is written until the returned function runs (in a worker thread for
``session/create`` and ``session/fork``; on the calling thread for the start-up route's
first create), so a create refused for a relative workspace root writes nothing.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from protocol.error_codes import ErrorCode
from sidecar.errors import InvalidRequestError
from sidecar.ids import new_id, now_iso
from sidecar.jsonbytes import dumps_bytes
from sidecar.store.jsonl import fsync_dir, write_file_atomic, write_new_file

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

__all__ = ["new_session_write"]


def new_session_write(
    sessions_dir: Path,
    *,
    title: str,
    workspace_roots: Sequence[str],
    profile_id: str | None,
    meta: dict[str, Any] | None,
    forked_from: dict[str, Any] | None,
    history: Callable[[], bytes],
    caches_from: Path | None = None,
) -> tuple[str, Callable[[], None]]:
    """A new session's id and the function that writes it under ``sessions_dir`` (nothing
    is written before): ``history()`` (run by that function) gives its history file;
    ``caches_from``: a session directory whose token-count caches are copied."""
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
    sdir = sessions_dir / session_id

    def write() -> None:
        sdir.mkdir()
        write_new_file(sdir / "history.jsonl", history())
        if caches_from is not None:
            _copy_token_caches(caches_from, sdir)
        # session.json last: a directory without it is an unfinished create, never listed
        write_file_atomic(sdir / "session.json", body)
        fsync_dir(sessions_dir)

    return session_id, write


def _copy_token_caches(source: Path, target: Path) -> None:
    """Copy a session's token-count caches (complete lines only: the source may be being
    appended to), each fsynced; the caller fsyncs the directory."""
    for cache in sorted(source.glob("tokens-*.jsonl")):
        try:
            data = cache.read_bytes()
        except FileNotFoundError:
            continue
        write_new_file(target / cache.name, data[: data.rfind(b"\n") + 1])


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
