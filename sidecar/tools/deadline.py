"""When one tool call must stop: its time limit and its cancel flag, in one object.

A look-around call (list, glob, grep) does its file work in a worker thread, which the event
loop cannot interrupt.  So the loop hands the thread a :class:`Deadline` and the thread asks
it, once per directory entry walked and once per event ripgrep prints, whether to go on: the
answer turns to no when the call's time is up (the run's tool timeout, capped by the tool's
own limit) or when the loop :meth:`~Deadline.cancel`\\ s it (``run/cancel``, a closed client).
What the thread runs that can block without printing anything (ripgrep opening a FIFO) is
registered with :meth:`~Deadline.on_stop`: cancelling the deadline stops it at once, and the
reader of ripgrep's output wakes up on its own in time for the limit.

A stopped call raises :class:`DeadlinePassed`; the tool turns it into a
:class:`~sidecar.tools.errors.ToolError` that says what was done so far and how to narrow the
call (:meth:`DeadlinePassed.error`).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from sidecar.tools.errors import ToolError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["LOOK_LIMIT_S", "Deadline", "DeadlinePassed"]

LOOK_LIMIT_S = 60.0
"""A look-around tool's own limit (list_dir, glob, grep): a search of a minute has gone wrong
(a huge tree, a file that never ends); the run's tool timeout may make it shorter."""


class DeadlinePassed(Exception):
    """Raised in the worker thread once its call must stop (timed out or cancelled)."""

    def __init__(self, deadline: Deadline) -> None:
        self.cancelled = deadline.cancelled
        self.limit_s = deadline.limit_s
        self.why = deadline.why
        super().__init__("cancelled" if self.cancelled else f"over {self.limit_s:g} s")

    def error(self, tool: str, done: str, hint: str) -> ToolError:
        """What the model reads: ``tool`` stopped, having done ``done``; ``hint`` narrows it."""
        if self.cancelled:
            return ToolError("tool.cancelled", f"{tool} was cancelled ({done})")
        return ToolError(
            "tool.timeout",
            f"{tool} stopped at its time limit of {self.limit_s:g} s ({self.why}) before it"
            f" finished: {done}. {hint}",
        )


class Deadline:
    """One call's limit (``limit_s`` from now; ``why`` names where it comes from) and its
    cancel flag.  Safe to share between the event loop and one worker thread."""

    def __init__(self, limit_s: float, why: str = "the tool's limit") -> None:
        self.limit_s = max(0.0, limit_s)
        self.why = why
        self._end = time.monotonic() + self.limit_s
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._stoppers: list[Callable[[], None]] = []

    @classmethod
    def of_call(cls, timeout_s: float | None, own_limit_s: float) -> Deadline:
        """The deadline of a call: the run's tool timeout (when it has one) capped by the
        tool's own limit."""
        if timeout_s is not None and 0 < timeout_s < own_limit_s:
            return cls(timeout_s, "the run's tool timeout")
        return cls(own_limit_s, "the tool's own limit")

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def remaining(self) -> float:
        """Seconds left (0 once passed or cancelled)."""
        if self._cancelled.is_set():
            return 0.0
        return max(0.0, self._end - time.monotonic())

    def passed(self) -> bool:
        return self._cancelled.is_set() or time.monotonic() >= self._end

    def check(self) -> None:
        """Raise :class:`DeadlinePassed` once the call must stop (cheap: call it per entry)."""
        if self._cancelled.is_set() or time.monotonic() >= self._end:
            raise DeadlinePassed(self)

    def cancel(self) -> None:
        """Stop the call: every later :meth:`check` raises, and what was registered with
        :meth:`on_stop` is stopped now (from the calling thread)."""
        with self._lock:
            self._cancelled.set()
            stoppers, self._stoppers = self._stoppers, []
        for stop in stoppers:
            stop()

    def on_stop(self, stop: Callable[[], None]) -> Callable[[], None]:
        """Call ``stop`` if the deadline is cancelled (at once if it is already); returns
        what forgets it again (once the thing it stops has ended)."""
        with self._lock:
            if not self._cancelled.is_set():
                self._stoppers.append(stop)

                def forget() -> None:
                    with self._lock:
                        if stop in self._stoppers:
                            self._stoppers.remove(stop)

                return forget
        stop()
        return lambda: None
