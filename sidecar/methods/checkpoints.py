"""``checkpoint/list``, ``checkpoint/diff``, ``checkpoint/restore`` and ``store/stats``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol import methods as m
from protocol.checkpoints import (
    CheckpointDiffParams,
    CheckpointDiffResult,
    CheckpointListParams,
    CheckpointListResult,
    CheckpointRestoreParams,
    CheckpointRestoreResult,
    CheckpointStats,
    StoreStatsResult,
)
from protocol.error_codes import ErrorCode
from sidecar.errors import NotFoundError
from sidecar.methods.route import route

if TYPE_CHECKING:
    from protocol.methods import EmptyParams
    from sidecar.methods.state import SidecarState

__all__ = ["ROUTES"]


def _not_found(session_id: str, checkpoint_id: str) -> NotFoundError:
    return NotFoundError(
        ErrorCode.CHECKPOINT_NOT_FOUND,
        f"no checkpoint {checkpoint_id} in session {session_id}",
        details={"sessionId": session_id, "checkpointId": checkpoint_id},
    )


async def checkpoint_list(state: SidecarState, p: CheckpointListParams) -> CheckpointListResult:
    state.store.sessions.get(p.session_id)
    return CheckpointListResult(checkpoints=[], total=0)


async def checkpoint_diff(state: SidecarState, p: CheckpointDiffParams) -> CheckpointDiffResult:
    state.store.sessions.get(p.session_id)
    raise _not_found(p.session_id, p.checkpoint_id)


async def checkpoint_restore(
    state: SidecarState, p: CheckpointRestoreParams
) -> CheckpointRestoreResult:
    state.store.sessions.get(p.session_id)
    raise _not_found(p.session_id, p.checkpoint_id)


async def store_stats(state: SidecarState, p: EmptyParams) -> StoreStatsResult:
    return StoreStatsResult(
        sessions=0, blobs=0, blob_bytes=0, checkpoints=CheckpointStats(count=0, objects=0, bytes=0)
    )


ROUTES = (
    route(m.STORE_STATS, store_stats),
    route(m.CHECKPOINT_LIST, checkpoint_list),
    route(m.CHECKPOINT_DIFF, checkpoint_diff),
    route(m.CHECKPOINT_RESTORE, checkpoint_restore),
)
