"""Processes a command left behind: found by the marker in their environment, and ended.

Every command carries ``CONTEXT_SIDECAR_CALL=<runId>/<callId>``
(:data:`sidecar.tools.command_env.MARKER`), and its children inherit it.  The wrapper a command
runs under (:mod:`sidecar.tools.command_reaper`) ends them when the sidecar dies; this is the
second line, run before a resumed run runs anything: whatever still carries the old run's
marker — the wrapper was itself killed, a seccomp filter refused it ``prctl`` — is killed
(SIGKILL: nobody waits for it any more).

Linux only (``/proc/<pid>/environ``; readable for the user's own processes).  A process that
exec'd with an environment of its own (``env -i …``) no longer carries the marker and is not
found here; elsewhere (macOS) nothing is found.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from sidecar.tools.command_env import MARKER

__all__ = ["end_marked", "marked"]


def marked(prefix: str) -> list[int]:
    """Processes whose marker starts with ``prefix`` (``<runId>/`` for a run's commands)."""
    wanted = f"{MARKER}={prefix}".encode()
    me = os.getpid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    found: list[int] = []
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read()
        except OSError:  # gone, or another user's
            continue
        if any(item.startswith(wanted) for item in environ.split(b"\0")):
            found.append(int(entry))
    return found


def end_marked(prefix: str, patience_s: float = 2.0) -> int:
    """SIGKILL every process marked with ``prefix`` until none is left (one may fork while
    its siblings die) or ``patience_s`` ran out; how many were found.  Blocking: call it in a
    worker thread."""
    ended: set[int] = set()
    deadline = time.monotonic() + patience_s
    while (pids := marked(prefix)) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        ended |= set(pids)
        time.sleep(0.01)
    return len(ended)
