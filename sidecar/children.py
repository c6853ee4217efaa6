"""The child processes a tool started that must not outlive the sidecar.

A tool registers its process while it runs (:func:`started` / :func:`ended`); the command line
calls :func:`kill_all` just before the process exits.  That matters when a worker thread is
still busy with a call nobody waits for any more (a cancelled grep whose ripgrep blocks in the
``open`` of a FIFO): the process exits without waiting for that thread, and its child is
killed here instead of being left running, orphaned, after its client has gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

__all__ = ["ended", "kill_all", "started"]

_lock = threading.Lock()
_live: dict[int, tuple[subprocess.Popen[bytes], bool]] = {}


def started(process: subprocess.Popen[bytes], *, own_group: bool = False) -> None:
    """``process`` runs on behalf of a tool; ``own_group``: it leads its own process group
    (``start_new_session``), which is killed whole."""
    with _lock:
        _live[process.pid] = (process, own_group)


def ended(process: subprocess.Popen[bytes]) -> None:
    """``process`` has been waited for."""
    with _lock:
        _live.pop(process.pid, None)


def kill_all() -> int:
    """SIGKILL every registered process still running (its group, when it leads one); how
    many were.  Safe from any thread, also while their tools are still reading them."""
    with _lock:
        live = list(_live.values())
        _live.clear()
    killed = 0
    for process, own_group in live:
        # poll() first: a process already waited for may have handed its pid to another
        if process.poll() is not None:
            continue
        with contextlib.suppress(OSError):
            if own_group:
                os.killpg(process.pid, signal.SIGKILL)
            else:
                process.kill()
            killed += 1
    return killed
