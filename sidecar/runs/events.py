"""A run's events on their way to the connection: journal first, then live or replayed.

- :meth:`RunEvents.emit` appends an event to the run's journal and only then sends it, to
  this connection, if it is subscribed to the run; the journal's line is written before the
  notification leaves (the bridge's ``journaled``), the lines of a burst in one ``write``.
- :meth:`RunEvents.subscribe` ``{afterSeq}`` sends the journal's events after ``afterSeq`` and
  registers the subscription in one step with no ``await`` in between, so every later event is
  sent live: no gap and no duplicate.
- Backpressure: when the client leaves more than :data:`MAX_BACKLOG_BYTES` unread, a run's
  live events stop being queued (so memory stays bounded) and one ``run/lagged`` notification
  (``server.overloaded``, ``retryAfterMs``, ``lastSentSeq``) says where to catch up with
  ``run/subscribe``; the journal keeps every event.  A replay keeps the same bound: past it, it
  stops with the same ``run/lagged``, so a journal of any size reaches a client in pieces of
  at most the bound.  Deltas are not coalesced: replay is exact instead.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from protocol.errors import ErrorCode
from sidecar.runs.journal import TERMINAL
from sidecar.runs.loop_state import ClientBridge

if TYPE_CHECKING:
    from collections.abc import Callable

    from sidecar.runs.journal import RunJournal, RunStore

__all__ = ["LAGGED_RETRY_MS", "MAX_BACKLOG_BYTES", "RunBridge", "RunEvents"]

logger = logging.getLogger(__name__)

#: Bytes the client may leave unread before a run's live events stop being queued for it.
MAX_BACKLOG_BYTES = 4 * 1024 * 1024
LAGGED_RETRY_MS = 250


class RunBridge(ClientBridge, Protocol):
    def send_event(
        self, line: bytes, journaled: Callable[[], None], event: dict[str, Any] | None = None
    ) -> None:
        """A ``run/event`` notification: ``line`` is the event's JSON as journaled, ``event``
        the same decoded when the caller has it.  ``journaled`` writes the journal's pending
        lines: it must be called before the notification leaves the process (once for a
        burst of them is enough)."""
        ...

    def after_answer(self, fn: Callable[[], object]) -> None:
        """Call ``fn`` once the answer to the request being handled is written (at once
        outside a request), so that what ``fn`` sends follows that answer."""
        ...


class RunEvents:
    """The runs this connection is subscribed to, and what is sent to it of each."""

    def __init__(self, runs: RunStore, bridge: RunBridge) -> None:
        self.runs = runs
        self.bridge = bridge
        self._subscribed: set[str] = set()

    def emit(self, journal: RunJournal, event_type: str, payload: dict[str, Any]) -> None:
        event, line = journal.append(event_type, payload)
        if journal.run_id not in self._subscribed:
            return
        if self._overloaded(journal, event["seq"] - 1):
            logger.warning(
                "client too slow for run %s: live events paused at seq %d",
                journal.run_id,
                event["seq"] - 1,
            )
            return
        self.bridge.send_event(line, journal.flush, event)

    def _overloaded(self, journal: RunJournal, last_sent: int) -> bool:
        """Whether the client left more than the bound unread.  If so, this run's events stop
        being queued for it (the journal has them all) and it is told, once, where to catch
        up from: ``run/lagged {lastSentSeq}``, then ``run/subscribe`` from there."""
        if self.bridge.backlog() <= MAX_BACKLOG_BYTES:
            return False
        self._subscribed.discard(journal.run_id)
        self.bridge.notify(
            "run/lagged",
            {
                "runId": journal.run_id,
                "sessionId": journal.record["sessionId"],
                "lastSentSeq": last_sent,
                "code": ErrorCode.OVERLOADED,
                "retryAfterMs": LAGGED_RETRY_MS,
            },
        )
        return True

    def subscribe(self, run_id: str, after_seq: int) -> dict[str, Any]:
        journal = self.runs.get(run_id)
        replayed, paused = 0, False
        # replay, then live: no await in between.  The replay keeps the backlog bound as live
        # events do: past it, it pauses with run/lagged and the client subscribes again.
        for seq, line in journal.lines_after(after_seq):
            if self._overloaded(journal, seq - 1):
                paused = True
                break
            self.bridge.send_event(line, journal.flush)
            replayed += 1
        live = not paused and journal.record["status"] not in TERMINAL
        if live:
            self._subscribed.add(run_id)
        return {
            "runId": run_id,
            "replayed": replayed,
            "headSeq": journal.head,
            "status": journal.record["status"],
            "live": live,
        }

    def unsubscribe(self, run_id: str) -> None:
        self.runs.get(run_id)
        self._subscribed.discard(run_id)

    def ended(self, run_id: str) -> None:
        """The run's terminal event is sent: nothing more of it goes live."""
        self._subscribed.discard(run_id)
