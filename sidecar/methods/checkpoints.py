"""``checkpoint/list``, ``checkpoint/diff``, ``checkpoint/restore`` and ``store/stats``: thin
handlers over :mod:`sidecar.checkpoints` (which blocks: run in worker threads)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from protocol import methods as m
from protocol.error_codes import ErrorCode
from sidecar.aio import in_thread
from sidecar.checkpoints import Checkpoints, checkpoints_of, diff, restore
from sidecar.checkpoints.capture import TooManyFiles
from sidecar.errors import InvalidRequestError
from sidecar.methods.route import route

if TYPE_CHECKING:
    from protocol.checkpoints import (
        CheckpointDiffParams,
        CheckpointListParams,
        CheckpointRestoreParams,
    )
    from protocol.methods import EmptyParams
    from sidecar.checkpoints.capture import RootCapture
    from sidecar.methods.state import SidecarState

__all__ = ["ROUTES", "turn_checkpoint_of"]


def _now(service: Checkpoints, session_id: str) -> tuple[list[RootCapture], Any]:
    """The workspace now, hashed but not stored, and a reader of its trees."""
    roots, settings, _ = service.session(session_id)
    if not roots:
        raise InvalidRequestError(
            ErrorCode.CHECKPOINT_NO_ROOTS,
            f"session {session_id} has no workspace roots",
            details={"sessionId": session_id},
        )
    try:
        now = service.capture(roots, settings, write=False)
    except TooManyFiles as exc:
        raise _too_large(session_id, exc) from None
    extra: dict[str, bytes] = {}
    for captured in now:
        extra.update(captured.trees)
    return now, service.tree_reader(extra)


def _too_large(session_id: str, exc: TooManyFiles) -> InvalidRequestError:
    return InvalidRequestError(
        ErrorCode.CHECKPOINT_TOO_LARGE,
        f"session {session_id}'s roots hold more than checkpoints.maxFiles entries",
        details={"sessionId": session_id, "at": str(exc)},
    )


def _wire(record: dict[str, Any], changed: int) -> dict[str, Any]:
    keys = ("checkpointId", "seq", "turnSeq", "createdAt", "reason", "runId", "callId", "tool")
    out = {k: record[k] for k in keys if record.get(k) is not None}
    return out | {
        "files": record.get("files", 0),
        "notCaptured": record.get("notCaptured", 0),
        "changedFiles": changed,
    }


async def checkpoint_list(state: SidecarState, p: CheckpointListParams) -> dict[str, Any]:
    service = checkpoints_of(state.store)

    def work() -> dict[str, Any]:
        records = service.records(p.session_id)
        service.session(p.session_id)  # session.not_found
        newest = list(reversed(records))[: p.limit]
        out = []
        if newest:
            now, read_now = _now(service, p.session_id)
            read = service.tree_reader()
            for record in newest:
                found = diff.changes(record, now, read, read_now)
                out.append(_wire(record, len(found)) | {"sessionId": p.session_id})
        return {"checkpoints": out, "total": len(records)}

    return await in_thread(work)


async def checkpoint_diff(state: SidecarState, p: CheckpointDiffParams) -> dict[str, Any]:
    service = checkpoints_of(state.store)

    def work() -> dict[str, Any]:
        record = service.find(p.session_id, p.checkpoint_id)
        now, read_now = _now(service, p.session_id)
        found = diff.changes(record, now, service.tree_reader(), read_now)
        files, truncated = diff.file_changes(found, state.store.blobs, p.max_bytes)
        return {"checkpointId": p.checkpoint_id, "files": files, "truncated": truncated}

    return await in_thread(work)


async def checkpoint_restore(state: SidecarState, p: CheckpointRestoreParams) -> dict[str, Any]:
    state.store.require_writable()
    service = checkpoints_of(state.store)
    record = await in_thread(service.find, p.session_id, p.checkpoint_id)
    answer: dict[str, Any] = {"status": "restored", "restored": [], "conflicts": []}
    if p.files:
        roots, _, _ = service.session(p.session_id)
        if not roots:
            raise InvalidRequestError(
                ErrorCode.CHECKPOINT_NO_ROOTS,
                f"session {p.session_id} has no workspace roots",
                details={"sessionId": p.session_id},
            )
        async with state.runs.exclusive(p.session_id, "restoring"):
            try:
                answer |= await in_thread(
                    lambda: restore.restore_files(service, p.session_id, record, force=p.force)
                )
            except TooManyFiles as exc:
                raise _too_large(p.session_id, exc) from None
        if answer["status"] == "conflicts":
            return answer
    if p.conversation:
        # before the entry it stands before: for a turn, before its user message
        at = max(int(record["seq"]) - 1, 0)
        forked = await state.store.sessions.fork(p.session_id, at_seq=at, title=None)
        answer["forkedSessionId"] = forked.session_id
    return answer


def turn_checkpoint_of(state: SidecarState, session_id: str, input_id: str) -> str | None:
    """The ``turn`` checkpoint a run of ``input_id`` took (blocking)."""
    try:
        records = checkpoints_of(state.store).records(session_id)
    except Exception:
        return None
    for record in reversed(records):
        if record.get("reason") == "turn" and record.get("inputId") == input_id:
            return str(record["checkpointId"])
    return None


async def store_stats(state: SidecarState, p: EmptyParams) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        objects = count = 0
        base = state.store.blobs.root / "objects"
        for prefix in os.listdir(base) if base.exists() else []:
            folder = base / prefix
            if len(prefix) != 2 or not folder.is_dir():
                continue
            for entry in os.scandir(folder):
                if not entry.name.startswith("."):
                    objects += 1
                    count += entry.stat(follow_symlinks=False).st_size
        return {
            "sessions": len(state.store.sessions.session_ids()),
            "blobs": objects,
            "blobBytes": count,
            "checkpoints": checkpoints_of(state.store).stats(),
        }

    return await in_thread(work)


ROUTES = (
    route(m.STORE_STATS, store_stats),
    route(m.CHECKPOINT_LIST, checkpoint_list),
    route(m.CHECKPOINT_DIFF, checkpoint_diff),
    route(m.CHECKPOINT_RESTORE, checkpoint_restore),
)
