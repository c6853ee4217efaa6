"""The loop's tool round: run one round's tool calls in order and store each result.

Each call is announced (``tool.callRequested``), then run where it lives: a sub-agent call
(``agent_delegate`` / ``agent_handoff``, :data:`AGENT_TOOLS`) by the delegate the loop was
given, a built-in workspace tool in the sidecar (:mod:`sidecar.runs.builtin`), any other
through the host (``approval/request`` when the run requires it, then ``tool/execute``).  A
call that may change the workspace has a checkpoint before it and its after-state recorded
(:mod:`sidecar.runs.checkpointing`).
Its result is stored as the turn's next user message (``tool.resultStored``).  A tool that
fails, times out or answers something that is not a result becomes an error result the model
sees; so does, in a resumed run, a built-in command that had started before the sidecar
stopped (:data:`INTERRUPTED`: it is not run a second time unasked).  The same call repeated
:data:`LOOP_REPEATS` times stops the run (``agent.tool_loop_detected``); a round that stops
or hands off partway answers the calls it did not run, so history never holds a call without
its result.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from protocol._base import dump_wire, parse_wire
from protocol.errors import ErrorCode
from protocol.runs import ToolExecuteResult
from sidecar.runs.checkpointing import after_call, before_call
from sidecar.runs.failures import RunStopped

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from sidecar.runs.builtin import BuiltinRunner
    from sidecar.runs.loop_state import LoopState
    from sidecar.runs.providers.base import ToolCall

__all__ = ["AGENT_TOOLS", "AGENT_TOOL_NAMES", "INTERRUPTED", "LOOP_REPEATS", "ToolRound"]

LOOP_REPEATS = 3
INTERRUPTED = (
    "interrupted: the sidecar stopped while this command ran; it was ended and is not run "
    "again — run it again if it is still needed"
)
"""The result of a resumed run's command that had started before the sidecar stopped."""
#: Built-in tools for sub-agents (underscored: providers reject dots in tool names).
AGENT_TOOLS: list[dict[str, Any]] = [
    {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {"task": {"type": "string"}},
            "required": ["task"],
        },
    }
    for name, description in (
        (
            "agent_delegate",
            "Give a self-contained task to a sub-agent; its answer comes back "
            "as this tool's result.",
        ),
        (
            "agent_handoff",
            "Hand the rest of this turn to a sub-agent; its answer is the turn's answer.",
        ),
    )
]
AGENT_TOOL_NAMES = frozenset(t["name"] for t in AGENT_TOOLS)


class ToolRound:
    """The tool calls of one loop, round after round (it counts repeats across rounds)."""

    def __init__(
        self, loop: LoopState, delegate: Callable[[ToolCall], Awaitable[None]] | None
    ) -> None:
        self.loop = loop
        self.delegate = delegate
        """Runs a sub-agent for a delegation call (``sidecar.runs.agents.run_agent``, given by
        whoever builds the loop: the loop does not import the module that builds loops)."""
        self._calls: dict[str, int] = {}

    async def dispatch(self, calls: list[ToolCall]) -> None:
        """Run one round's tool calls in order.  When the run stops (a loop) or hands off
        partway, each call not run still gets an error result, before the run ends or the
        handed-off answer is stored: history never holds a call without its result, and a
        later prompt needs no "interrupted" notes."""
        for index, call in enumerate(calls):
            try:
                await self._tool(call)
            except RunStopped as exc:
                loop = exc.failure["code"] == ErrorCode.TOOL_LOOP
                await self._not_run(
                    calls[index + 1 :], "loop detected" if loop else exc.failure["message"]
                )
                raise
            if self.loop.handoff is not None:
                await self._not_run(calls[index + 1 :], "the turn was handed off")
                return

    async def _not_run(self, calls: list[ToolCall], reason: str) -> None:
        for call in calls:
            self.requested(call)
            await self.store_result(call, [{"type": "text", "text": f"not run: {reason}"}], True)

    async def _tool(self, call: ToolCall) -> None:
        s = self.loop.s
        if call.name in AGENT_TOOL_NAMES and self.loop.agent is None and s.delegation:
            await self._run(call)
            return
        key = f"{call.name}:{json.dumps(call.arguments, sort_keys=True)}"
        repeated = self._calls.get(key, 0) + 1 >= LOOP_REPEATS
        mutating = not repeated and call.call_id not in s.interrupted
        if mutating and await before_call(self.loop, call):
            await self._run(call)
            await after_call(self.loop, call)  # what the call left (a restore's conflicts)
            return
        await self._run(call)

    async def _run(self, call: ToolCall) -> None:
        s = self.loop.s
        if call.name in AGENT_TOOL_NAMES and self.loop.agent is None and s.delegation:
            if self.delegate is None:
                raise RuntimeError("a delegation call reached a loop built without a delegate")
            await self.delegate(call)
            return
        key = f"{call.name}:{json.dumps(call.arguments, sort_keys=True)}"
        self._calls[key] = self._calls.get(key, 0) + 1
        builtin = s.builtin if s.builtin and s.builtin.offers(call.name) else None
        self.requested(call, builtin)
        if self._calls[key] >= LOOP_REPEATS:
            await self.store_result(
                call, [{"type": "text", "text": "not run: loop detected (repeated call)"}], True
            )
            raise RunStopped(
                ErrorCode.TOOL_LOOP,
                f"{call.name} was called {LOOP_REPEATS} times with the same arguments; "
                "stopped as a loop",
            )
        if builtin is not None and call.call_id in s.interrupted:
            content = [{"type": "text", "text": INTERRUPTED}]
            await self.store_result(call, content, True, {"content": content})  # no host saw it
            return
        if builtin is not None:
            outcome = await builtin.call(
                self.loop.journal.run_id,
                call.call_id,
                call.name,
                call.arguments,
                ask=self.loop.ask,
                emit=self.loop.emit,
                timeout_s=s.tool_timeout_s,
                before_run=self.loop.journal.flush,
            )
            await self.store_result(call, outcome.content, outcome.is_error, outcome.event)
            return
        params = {
            "runId": self.loop.journal.run_id,
            "callId": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
        }
        if call.name in s.approval_required:
            answer = await self.loop.ask("approval/request", params, s.tool_timeout_s)
            if not (isinstance(answer, dict) and answer.get("approved") is True):
                reason = answer.get("reason") if isinstance(answer, dict) else None
                await self.store_result(
                    call, [{"type": "text", "text": f"not approved: {reason or 'denied'}"}], True
                )
                return
        raw = await self.loop.ask("tool/execute", params, s.tool_timeout_s)
        if isinstance(raw, dict) and "error" in raw and "content" not in raw:
            content, is_error = [{"type": "text", "text": str(raw["error"])}], True
        else:
            try:
                result = parse_wire(ToolExecuteResult, raw)
                content = [dump_wire(p) for p in result.content]
                is_error = result.is_error
            except Exception as exc:  # the host answered something that is not a result
                content = [{"type": "text", "text": f"invalid tool result from the host: {exc}"}]
                is_error = True
        await self.store_result(call, content, is_error)

    def requested(self, call: ToolCall, builtin: BuiltinRunner | None = None) -> None:
        """Announce a call (``tool.callRequested``), with a built-in tool's description."""
        payload = {"callId": call.call_id, "name": call.name, "arguments": call.arguments}
        if builtin is not None:
            payload |= builtin.describe(call.name, call.arguments)
        self.loop.emit("tool.callRequested", payload)

    async def store_result(
        self,
        call: ToolCall,
        content: list[dict[str, Any]],
        is_error: bool,
        shown: dict[str, Any] | None = None,
    ) -> None:
        """Store a call's result as the turn's next message (``tool.resultStored``)."""
        part = {
            "type": "toolResult",
            "callId": call.call_id,
            "content": content,
            "isError": is_error,
        }
        seq = await self.loop.store_message("user", [part])
        stored = {"callId": call.call_id, "isError": is_error, "seq": seq}
        self.loop.emit("tool.resultStored", stored | shown if shown else stored)
