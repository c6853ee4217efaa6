"""The codes of the protocol's errors: the JSON-RPC numbers and the dotted ``data.code``
strings (see :mod:`protocol.errors` for the shapes that carry them).

Plain constants, no pydantic: the store and the requests served before the wire models load
(:mod:`sidecar.methods.light`) raise and answer with them.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DOMAIN_ERROR",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "SERVER_NOT_INITIALIZED",
    "ErrorCode",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
SERVER_NOT_INITIALIZED: Final = -32002
REQUEST_CANCELLED: Final = -32800
#: The one JSON-RPC code every domain error uses; ``data.code`` says which.
DOMAIN_ERROR: Final = -32000


class ErrorCode:
    """Every dotted ``data.code`` the sidecar sends, in one place."""

    # protocol faults
    PARSE_ERROR: Final = "request.parse_error"
    INVALID_REQUEST: Final = "request.invalid"
    REQUEST_TOO_LARGE: Final = "request.too_large"
    REQUEST_TOO_DEEP: Final = "request.too_deep"
    METHOD_NOT_FOUND: Final = "method.not_found"
    PARAMS_INVALID: Final = "params.invalid"
    NOT_INITIALIZED: Final = "server.not_initialized"
    SHUTTING_DOWN: Final = "server.shutting_down"
    CANCELLED: Final = "request.cancelled"
    INTERNAL: Final = "server.internal"
    OVERLOADED: Final = "server.overloaded"
    # sessions and store
    SESSION_NOT_FOUND: Final = "session.not_found"
    SESSION_BUSY: Final = "session.busy"
    SESSION_HELD: Final = "session.held"
    SEQ_OUT_OF_RANGE: Final = "session.seq_out_of_range"
    STORE_CONFLICT: Final = "store.conflict"
    STORE_LOCKED: Final = "store.locked"
    STORE_CORRUPT: Final = "store.corrupt"
    STORE_IO: Final = "store.io_error"
    BLOB_NOT_FOUND: Final = "blob.not_found"
    # checkpoints of the workspace
    CHECKPOINT_NOT_FOUND: Final = "checkpoint.not_found"
    CHECKPOINT_NO_ROOTS: Final = "checkpoint.no_roots"
    CHECKPOINT_TOO_LARGE: Final = "checkpoint.too_large"
    # tokens and context
    TOKENIZER_UNKNOWN: Final = "tokens.unknown_tokenizer"
    BUDGET_EXCEEDED: Final = "context.budget_exceeded"
    PATH_OUTSIDE_WORKSPACE: Final = "context.path_outside_workspace"
    SKILL_NOT_FOUND: Final = "skills.not_found"
    TOOL_INVALID: Final = "tools.invalid_definition"
    # inputs, snapshots, profiles
    INPUT_NOT_FOUND: Final = "input.not_found"
    SNAPSHOT_NOT_FOUND: Final = "snapshot.not_found"
    PROFILE_NOT_FOUND: Final = "profile.not_found"
    PRESET_NOT_FOUND: Final = "preset.not_found"
    REBUILD_UNAVAILABLE: Final = "agent.macro_context_rebuild_unavailable"
    # runs
    RUN_NOT_FOUND: Final = "run.not_found"
    RUN_NOT_RESUMABLE: Final = "run.not_resumable"
    RUN_INTERRUPTED: Final = "agent.interrupted"
    RUN_CANCELLED: Final = "agent.cancelled"
    MAX_ROUNDS: Final = "agent.max_tool_rounds_exceeded"
    TOOL_LOOP: Final = "agent.tool_loop_detected"
    TOOL_FAILED: Final = "tool.execution_failed"
    MODEL_FAILED: Final = "model.request_failed"
    COMPACTION_FAILED: Final = "agent.compaction_failed"
    ASSEMBLY_FAILED: Final = "agent.host_assembly_failed"
