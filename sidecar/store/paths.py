"""Where the store lives by default."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["STORE_ENV", "default_store_root"]

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
