"""What the context service remembers of a session between its requests, for a bounded number
of sessions.

A :class:`SessionMemory` holds what a session's earlier requests in this process left behind:
the instruction hashes of its previous live assembly (the per-turn diff), the shape of its
previous request as assembled and as sent (the next request's cache breakpoints and
prediction are planned against them), the cache entries its earlier requests left
(:class:`~sidecar.context.cache_accounting.CacheMemory`, up to 8,192 prefixes), its last
lowered prompt's messages as validated (which keeps them alive as long as the memory), and
what its calls would have cost under keep-everything-then-compact
(:mod:`sidecar.context.keep_everything_live`).  All
of it is derived: a session whose memory is gone plans its next request as after a restart —
against its newest snapshot, with every instruction new to the diff.

:class:`SessionMemories` is the one owner of those memories: it keeps the ``capacity`` most
recently used ones (by default as many as the store keeps sessions loaded,
``$CONTEXT_SIDECAR_MAX_LOADED_SESSIONS``) and drops the least recently used beyond that, under
one lock (assemblies run in worker threads, registrations on the event loop).  A memory handed
out stays usable by its holder after it is dropped: dropping closes nothing, it stops
handing that object out and lets go of the prompts it holds, freed in the background
(:meth:`SessionMemory.release`) — its holder then finds it as after a restart, and what it
still writes into it is lost, as if it had been dropped a moment later.  Without the bound a
sidecar kept one memory — two request shapes holding the session's transcript, and up to
8,192 prefix keys — for every session it ever assembled: ``make soak`` grew without levelling
off.

Host sources (``context/registerSource``) are not kept here: they are the host's, not derived,
and are kept by :class:`~sidecar.context.service.ContextService` until unregistered or the
session is deleted.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sidecar.context.cache_accounting import CacheMemory, RequestShape
from sidecar.interpreter.reaper import dismantle

if TYPE_CHECKING:
    # A field's annotation, never evaluated (postponed annotations); a real import would load
    # every lowering with the context service, before its first lowering.
    from sidecar.context.keep_everything_live import KeepEverythingMeter  # noqa: TC004
    from sidecar.context.lower.prompt import LoweringMemo  # noqa: TC004
    from sidecar.context.sent import SentBlocks  # noqa: TC004

__all__ = ["SessionMemories", "SessionMemory"]


@dataclass(slots=True)
class SessionMemory:
    instruction_hashes: dict[str, str] = field(default_factory=dict)
    previous_request: RequestShape | None = None
    """The previous request's prompt (where its breakpoints went: placement)."""
    previous_sent: RequestShape | None = None
    """The previous request's body as sent (:mod:`sidecar.context.sent`): the prediction's
    reference."""
    cache_memory: CacheMemory = field(default_factory=CacheMemory)
    """What the session's earlier requests (sent by this process) left in the cache."""
    lowering: LoweringMemo = field(default_factory=dict)
    """The messages of its last lowered prompt, validated (:mod:`sidecar.context.lower.prompt`):
    the next lowering validates only the new ones."""
    sent_blocks: SentBlocks = field(default_factory=dict)
    """Its last sent body's blocks of strings with their bytes and tokens
    (:mod:`sidecar.context.sent`): the next prediction encodes only the new ones."""
    keep_everything: KeepEverythingMeter | None = None
    """What its calls would have cost under keep-everything-then-compact
    (:mod:`sidecar.context.keep_everything_live`)."""
    counted: tuple[str, int] | None = None
    """(model, tokens we counted) of its previous ``context/assemble``: what the provider's
    count a host reports with the next one (``previousUsage``) is compared with."""

    def release(self) -> None:
        """Let go of the prompts it holds (a dropped memory): the lowering memo and the units
        of the two request shapes are freed by the reaper thread a piece at a time
        (:func:`~sidecar.interpreter.reaper.dismantle`), not in one call by the thread that
        dropped it — the lane, for an assembly: a 2,000-message prompt held the interpreter
        for 3 ms.  A holder still using this memory finds it as after a restart (no previous
        request; a lowering memo emptied under it only misses)."""
        parts: list[Any] = [self.lowering, self.sent_blocks]
        for shape in (self.previous_request, self.previous_sent):
            if shape is not None:
                parts.append(list(shape.units))
        self.lowering = {}
        self.sent_blocks = {}
        self.previous_request = self.previous_sent = None
        self.keep_everything = None  # not dismantled: a model round may still price with it
        dismantle(parts)


class SessionMemories:
    """The memories of the ``capacity`` most recently used sessions (see the module docstring)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity}")
        self.capacity = capacity
        self._lock = threading.Lock()
        self._memories: OrderedDict[str, SessionMemory] = OrderedDict()

    def get(self, session_id: str) -> SessionMemory:
        """The session's memory (a new, empty one if it has none), now the most recently
        used; the least recently used beyond ``capacity`` are dropped."""
        dropped: list[SessionMemory] = []
        with self._lock:
            memory = self._memories.get(session_id)
            if memory is None:
                memory = self._memories[session_id] = SessionMemory()
                while len(self._memories) > self.capacity:
                    dropped.append(self._memories.popitem(last=False)[1])
            else:
                self._memories.move_to_end(session_id)
        for old in dropped:
            old.release()
        return memory

    def forget(self, session_id: str) -> None:
        """Drop the session's memory (it was deleted)."""
        with self._lock:
            dropped = self._memories.pop(session_id, None)
        if dropped is not None:
            dropped.release()

    def session_ids(self) -> list[str]:
        """Sessions with a memory, least recently used first (diagnostics and tests)."""
        with self._lock:
            return list(self._memories)
