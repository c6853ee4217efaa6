"""Sub-agents: ``agent_delegate`` and ``agent_handoff`` (TauriTavern's delegation and handoff).

When a run offers them (``run/start {delegation: true}``) and the model calls one with a
``task``, a child invocation starts inside the same run, sharing its frozen input: the same
history up to the input's head, instructions, skills and tools, with the task as its user turn.
The child streams and calls tools like the parent (its events carry ``agent: <callId>``),
but its conversation stays out of the session history.  If the host declared the ``assembly``
capability, the child's prompt is built by the host's own assembler (``assembly/request``);
otherwise the sidecar assembles it.

- ``agent_delegate``: the child's final answer comes back as the tool's result, and the
  parent continues.
- ``agent_handoff``: the child's final answer becomes the turn's answer (stored in history as
  the assistant's message, after an error result for each call of the round left unrun) and
  the run ends.

Sub-agents do not delegate further (depth 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.entries import TextPart
from sidecar.runs.failures import RunStopped
from sidecar.runs.loop import RunLoop
from sidecar.runs.loop_state import RunSettings

if TYPE_CHECKING:
    from sidecar.runs.providers.base import ToolCall

__all__ = ["CHILD_MAX_ROUNDS", "run_agent"]

CHILD_MAX_ROUNDS = 6


async def run_agent(parent: RunLoop, call: ToolCall) -> None:
    kind = "handoff" if call.name == "agent_handoff" else "delegate"
    task = str(call.arguments.get("task") or "").strip()
    parent.tool_round.requested(call)
    if not task:
        await parent.tool_round.store_result(
            call, [{"type": "text", "text": "a task is required"}], True
        )
        return
    frozen = parent.s.frozen.model_copy(update={"user_turn": [TextPart(type="text", text=task)]})
    settings = RunSettings(
        max_rounds=CHILD_MAX_ROUNDS,
        tool_timeout_s=parent.s.tool_timeout_s,
        approval_required=parent.s.approval_required,
        input_id=parent.s.input_id,
        frozen=frozen,
        effective=parent.s.effective,
        turn=[],
        compaction="off",
        scope=kind,
    )
    child = RunLoop(
        store=parent.store,
        context=parent.context,
        bridge=parent.bridge,
        journal=parent.journal,
        emit=_untagged(parent),
        provider=parent.provider,
        settings=settings,
        agent=call.call_id,
        host_assembles=parent.host_assembles,
    )
    child.emit("agent.started", {"kind": kind, "task": task})
    try:
        await child.run()
        answer = _last_answer(child.s.turn)
        failed = False
    except RunStopped as exc:
        answer, failed = f"the sub-agent stopped: {exc.failure['message']}", True
    finally:
        child.close()
    child.emit("agent.completed", {"kind": kind, "failed": failed, "answer": answer})
    if kind == "delegate" or failed:
        await parent.tool_round.store_result(call, [{"type": "text", "text": answer}], failed)
        return
    await parent.tool_round.store_result(
        call, [{"type": "text", "text": "handed off to a sub-agent"}], False
    )
    parent.handoff = answer  # the parent stores it once the round's other calls are answered


def _untagged(parent: RunLoop) -> Any:
    """The parent's emitter without its own agent tag (the child adds its own)."""
    journal_emit = parent.emit
    return lambda event_type, payload: journal_emit(event_type, payload)


def _last_answer(turn: list[dict[str, Any]]) -> str:
    for message in reversed(turn):
        if message["role"] == "assistant":
            texts = [p["text"] for p in message["content"] if p.get("type") == "text"]
            if texts:
                return "\n".join(texts)
    return "(the sub-agent gave no answer)"
