"""Defaults shared by the CLI and the server, importable without loading the server."""

from __future__ import annotations

import logging
import os
from pathlib import Path

__all__ = [
    "DEFAULT_MAX_LOADED_SESSIONS",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "MAX_LOADED_SESSIONS_ENV",
    "STORE_ENV",
    "MEMORY_TRACE_ENV",
    "MEMORY_TRACE_FRAMES_ENV",
    "NO_LIVE_LIMITS_ENV",
    "TRACE_ENV",
    "default_store_root",
    "max_loaded_sessions",
]

logger = logging.getLogger(__name__)

#: Largest JSON-RPC body accepted by default (``--max-message-bytes``).
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: Environment variable naming a JSONL file that receives every frame, both directions.
TRACE_ENV = "CONTEXT_SIDECAR_TRACE"
#: Environment variable naming the store root; ``--store`` wins over it.
STORE_ENV = "CONTEXT_SIDECAR_STORE"
#: Environment variable bounding how many idle sessions stay loaded (each holds its history's
#: index and an open file); sessions in use are never dropped, so more may be loaded at once.
MAX_LOADED_SESSIONS_ENV = "CONTEXT_SIDECAR_MAX_LOADED_SESSIONS"
DEFAULT_MAX_LOADED_SESSIONS = 64
#: Environment variable naming a file that receives, on each ``SIGUSR1``, what grew in memory
#: (a debugging aid for soaks: ``sidecar._memory_trace``); and the frames per allocation
#: :mod:`tracemalloc` keeps for it (0, the default: no tracemalloc, a census of objects only).
MEMORY_TRACE_ENV = "CONTEXT_SIDECAR_MEMORY_TRACE"
MEMORY_TRACE_FRAMES_ENV = "CONTEXT_SIDECAR_MEMORY_TRACE_FRAMES"
#: Environment variable that, set to anything but ``0`` or empty, stops runs from asking a
#: provider's models endpoint for a model's limits (``sidecar.runs.live_lookup``).
NO_LIVE_LIMITS_ENV = "CONTEXT_SIDECAR_NO_LIVE_LIMITS"


def default_store_root() -> Path:
    """``$CONTEXT_SIDECAR_STORE``, else ``$XDG_STATE_HOME/context-sidecar``, else
    ``~/.local/state/context-sidecar``."""
    explicit = os.environ.get(STORE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state).expanduser() / "context-sidecar"


def max_loaded_sessions() -> int:
    """``$CONTEXT_SIDECAR_MAX_LOADED_SESSIONS`` (a positive integer), else 64."""
    raw = os.environ.get(MAX_LOADED_SESSIONS_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_LOADED_SESSIONS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        logger.warning(
            "%s=%r is not a positive integer; using %d",
            MAX_LOADED_SESSIONS_ENV,
            raw,
            DEFAULT_MAX_LOADED_SESSIONS,
        )
        return DEFAULT_MAX_LOADED_SESSIONS
    return value
