"""Logging set-up: stderr or a file, never stdout (stdout is the wire)."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["setup_logging"]


def setup_logging(verbosity: int, log_file: Path | None = None) -> None:
    """``verbosity`` 0 = warnings, 1 = info, 2+ = debug (pygls included)."""
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    handler: logging.Handler = (
        logging.FileHandler(log_file, encoding="utf-8")
        if log_file
        else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # pygls logs every message body at INFO/DEBUG; only show it when asked twice.
    logging.getLogger("pygls").setLevel(logging.DEBUG if verbosity >= 2 else logging.WARNING)
