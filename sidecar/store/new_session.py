"""Writing a new session to disk: its directory, its writer lock (taken by the creating process
before anything else is written, see ``claim``), its history file, the token-count caches it
inherits (a fork), then ``session.json`` last — a directory without one is an unfinished
create, never listed — each file fsynced, then the sessions directory.

An empty history file (``session/create``) is not fsynced: it holds no data, and its name is
made durable with ``session.json``'s (the fsync of the session's directory after the rename).
It is left open, so the new session is installed from what was written without reading it
back: a create under load waits for the disk three times, not four, and makes half the
system calls (each one, in a worker thread, a wait for the interpreter too).

Nothing is written until the returned function runs (in a worker thread for
``session/create`` and ``session/fork``; on the calling thread for the start-up route's
first create), so a create refused for a relative workspace root writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.error_codes import ErrorCode
from sidecar.errors import InvalidRequestError
from sidecar.ids import new_id, now_iso
from sidecar.jsonbytes import dumps_bytes
from sidecar.store.jsonl import AppendLog, fsync_dir, write_file_atomic, write_new_file

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

__all__ = ["NewSession", "new_session_write"]


@dataclass(frozen=True, slots=True)
class NewSession:
    session_id: str
    record: dict[str, Any]
    """What ``session.json`` holds."""
    write: Callable[[], AppendLog | None]
    """Writes the session (blocking); returns its history file, open for appends, when that
    file is empty, else ``None``."""


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
    claim: Callable[[str, Path], Any] | None = None,
) -> NewSession:
    """A new session and the function that writes it under ``sessions_dir`` (nothing is
    written before): ``history()`` (run by that function) gives its history file;
    ``caches_from``: a session directory whose token-count caches are copied; ``claim(id,
    directory)``: takes the session's writer lock once its directory exists."""
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

    def write() -> AppendLog | None:
        sdir.mkdir()
        if claim is not None:
            claim(session_id, sdir)
        data = history()
        log: AppendLog | None = None
        if data:
            write_new_file(sdir / "history.jsonl", data)
        else:  # nothing to sync: its name is durable with session.json's (fsync of sdir)
            log = AppendLog.create(sdir / "history.jsonl")
        try:
            if caches_from is not None:
                _copy_token_caches(caches_from, sdir)
            # session.json last: a directory without it is an unfinished create, never listed
            write_file_atomic(sdir / "session.json", body)
            fsync_dir(sessions_dir)
        except BaseException:
            if log is not None:
                log.close()
            raise
        return log

    return NewSession(session_id, record, write)


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
