"""One run: assemble, call the model, stream, execute tools through the host, repeat.

Before the first round the model's limits are asked of its provider's models endpoint, once
per process (:mod:`sidecar.runs.live_lookup`).  Each round is a model round
(:mod:`sidecar.runs.model_round`: assemble the frozen input plus the turn so far, compact
first when advised, store the prompt as a snapshot, stream the answer, store the assistant
message) and then, if the model asked for tools, a tool round (:mod:`sidecar.runs.tool_round`:
each call through the host, the sidecar's built-in tools or a sub-agent, each result
stored).  A tool that fails or times out becomes an error result the
model sees.  The loop ends when the model stops asking for tools, at the round limit
(``agent.max_tool_rounds_exceeded``), when the same call is repeated three times
(``agent.tool_loop_detected``), on a provider error, or on cancellation — always with exactly
one ``run.completed``.  Every failure is a :class:`~sidecar.runs.failures.RunStopped` (both
retry flags set), and a run that stops partway through a round first answers the calls it did
not run, so history never holds a call without its result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from sidecar.runs.checkpointing import turn_checkpoint
from sidecar.runs.failures import RunStopped
from sidecar.runs.live_lookup import learn_limits
from sidecar.runs.loop_state import LoopState
from sidecar.runs.model_round import ModelRound
from sidecar.runs.tool_round import ToolRound

if TYPE_CHECKING:
    from sidecar.context.service import ContextService
    from sidecar.runs.journal import RunJournal
    from sidecar.runs.loop_state import ClientBridge, RunSettings
    from sidecar.runs.providers.base import Provider, ToolCall
    from sidecar.store import Store

__all__ = ["Delegate", "RunLoop"]


Delegate = Callable[["RunLoop", "ToolCall"], Awaitable[None]]
"""Runs a sub-agent for a parent loop's delegation call."""


class RunLoop(LoopState):
    """A run's rounds, model then tools, until the model stops asking for tools."""

    def __init__(
        self,
        *,
        store: Store,
        context: ContextService,
        bridge: ClientBridge,
        journal: RunJournal,
        emit: Any,
        provider: Provider,
        settings: RunSettings,
        agent: str | None = None,
        host_assembles: bool = False,
        delegate: Delegate | None = None,
    ) -> None:
        super().__init__(
            store=store,
            context=context,
            bridge=bridge,
            journal=journal,
            emit=emit,
            provider=provider,
            settings=settings,
            agent=agent,
            host_assembles=host_assembles,
        )
        self.model_round = ModelRound(self)
        self.tool_round = ToolRound(self, None if delegate is None else partial(delegate, self))

    async def run(self) -> None:
        await turn_checkpoint(self)  # the workspace as the turn found it
        # before the first assembly: the model's limits from its provider, once per process
        await learn_limits(self.provider, self.s.effective.profile)
        rounds = 0
        while self.handoff is None:
            if rounds == self.s.max_rounds:
                raise RunStopped(
                    ErrorCode.MAX_ROUNDS,
                    f"the model still asked for tools after {rounds} rounds",
                )
            rounds += 1
            calls = await self.model_round.run()
            if not calls:
                return
            await self.status("dispatchingTool")
            await self.dispatch(calls)
        # handed off, in a round of this loop or by a call dispatched before it (run/resume)
        await self.store_message("assistant", [{"type": "text", "text": self.handoff}])

    def close(self) -> None:
        """Let go of the rounds, which point back at this loop (and the tool round's delegate
        at it too): a finished run, with every prompt and request shape its rounds hold, is
        then freed by reference counting when it ends.  Left as a cycle, it waited for a full
        collection, and the garbage of every run of the last minute made those pauses grow
        with the load (``make soak``)."""
        del self.model_round, self.tool_round

    async def dispatch(self, calls: list[ToolCall]) -> None:
        """Run one round's tool calls (see :meth:`ToolRound.dispatch`); also a resumed run's
        calls left without a result."""
        await self.tool_round.dispatch(calls)
