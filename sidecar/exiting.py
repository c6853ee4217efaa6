"""How a serving process (``serve``, ``acp``) ends: at once, whatever its threads are doing,
with nothing it started left running.

Why it may end without waiting for anyone: the store's state is safe at every instant.  A
write is acknowledged only after its ``fsync`` (:mod:`sidecar.store.jsonl`), a run's journal
is written before any client sees its events and survives a ``kill -9`` by design
(:mod:`sidecar.runs.journal`), and the store's lock is an ``flock`` the kernel releases.
What a thread still does at exit is work nobody waits for any more: a cancelled grep whose
ripgrep blocks in a FIFO's ``open``, a DNS lookup of a provider request in asyncio's default
executor (``asyncio.run`` joins those threads without a timeout), a call abandoned by its
deadline.  So:

- :func:`exit_now` is the serving process's last step: the tools' child processes are killed
  (:mod:`sidecar.children`), the logs flushed, and the process ends with ``os._exit`` (no
  join of leftover threads, no interpreter teardown: that took 0.4-1.5 s on a loaded 2-core
  machine after the client's ``exit``, and hosts wait for the process to end);
- :func:`arm_backstop` is called by a face once it knows it is ending (its client went, its
  main coroutine returned): should the process still be there ``grace_s`` later, held by a
  thread, a daemon thread does :func:`exit_now` itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from typing import NoReturn

from sidecar import children

__all__ = ["arm_backstop", "exit_now"]

logger = logging.getLogger(__name__)


def exit_now(code: int) -> NoReturn:
    """Kill the tools' children, flush the logs and end the process with ``code``."""
    killed = children.kill_all()
    if killed:
        logger.info("killed %d tool process(es) still running", killed)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def arm_backstop(code: int, grace_s: float, why: str) -> None:
    """End the process with ``code`` in ``grace_s`` seconds unless it has ended by then."""

    def backstop() -> None:
        logger.warning(
            "still running %.1f s after %s (a thread that does not end); exiting now",
            grace_s,
            why,
        )
        exit_now(code)

    timer = threading.Timer(grace_s, backstop)
    timer.name = "exit-backstop"
    timer.daemon = True
    timer.start()
