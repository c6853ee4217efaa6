"""Defaults shared by the CLI and the server, importable without loading the server."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "STORE_ENV", "TRACE_ENV", "default_store_root"]

#: Largest JSON-RPC body accepted by default (``--max-message-bytes``).
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: Environment variable naming a JSONL file that receives every frame, both directions.
TRACE_ENV = "CONTEXT_SIDECAR_TRACE"
#: Environment variable naming the store root; ``--store`` wins over it.
STORE_ENV = "CONTEXT_SIDECAR_STORE"


def default_store_root() -> Path:
    """``$CONTEXT_SIDECAR_STORE``, else ``$XDG_STATE_HOME/context-sidecar``, else
    ``~/.local/state/context-sidecar``."""
    explicit = os.environ.get(STORE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state).expanduser() / "context-sidecar"
