"""CPython's settings for a process that serves all day, whichever face it speaks.

Both faces call :func:`tune` first thing: the collector's thresholds and the freezing of what
survives a collection, with its sweep (:mod:`.collector`), and how soon the event loop gets
the interpreter back from the thread computing in the CPU lane (:mod:`.switching`).  ``serve``
also calls :func:`freeze_loaded` once its server has loaded (``acp`` does not: its first
prompt would wait for that collection).
"""

from __future__ import annotations

from sidecar.interpreter import collector, switching
from sidecar.interpreter.collector import freeze_loaded

__all__ = ["freeze_loaded", "tune"]


def tune() -> None:
    """Set the collector's thresholds and the switch interval (at a face's start)."""
    collector.tune()
    switching.tune()
