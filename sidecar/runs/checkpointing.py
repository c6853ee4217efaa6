"""Where a run takes its workspace checkpoints (:mod:`sidecar.checkpoints`).

- ``turn``: when the run starts, before anything can change the workspace; it stands before
  the turn's user message (its ``seq``), so restoring the conversation from it forks before
  that message.  A resumed run keeps the turn checkpoint its first run took.
- ``edit`` / ``command``: before every mutating tool call, built-in or the host's (an
  editor's), and after it the state the call left (``after``: a later restore judges
  conflicts against it).  Mutating: a built-in whose effect is ``edit`` or ``execute``; a
  host tool named as a built-in is taken to do what the built-in does (the ACP face's
  ``write_file``, ``edit_file``, ``run_command``); any other host tool the run asks approval
  for (``approvalRequired``) is taken as mutating — ``command`` when its name says it runs
  something, else ``edit``.

Cheap when nothing changed (the stat cache); run in a worker thread.  A checkpoint that fails
is logged and the run goes on: the tool call is not held hostage to the checkpoint.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from sidecar.aio import in_thread
from sidecar.checkpoints import checkpoints_of
from sidecar.tools.catalog import EFFECTS

if TYPE_CHECKING:
    from sidecar.runs.loop_state import LoopState
    from sidecar.runs.providers.base import ToolCall

__all__ = ["after_call", "before_call", "mutating", "turn_checkpoint"]

logger = logging.getLogger(__name__)

_COMMAND_WORDS = ("command", "shell", "terminal", "exec", "bash", "run")


def mutating(loop: LoopState, name: str) -> str | None:
    """``edit`` or ``command`` when a call of ``name`` may change the workspace, else None."""
    effect = EFFECTS.get(name)
    builtin = loop.s.builtin
    if effect is not None and builtin is not None and builtin.offers(name):
        if builtin.mode.verdict(effect) == "refuse":
            return None  # refused without running (plan, read_only): nothing to undo
    if effect is not None:
        return {"edit": "edit", "execute": "command"}.get(effect)
    if name in loop.s.approval_required:
        return "command" if any(w in name.lower() for w in _COMMAND_WORDS) else "edit"
    return None


async def turn_checkpoint(loop: LoopState) -> None:
    """The run's ``turn`` checkpoint (not a sub-agent's; not again for a resumed run)."""
    if loop.agent is not None or not loop.s.turn_seqs:
        return
    turn_seq = loop.s.turn_seqs[0]
    service = checkpoints_of(loop.store)

    def take() -> None:
        if any(
            r.get("reason") == "turn" and r.get("turnSeq") == turn_seq
            for r in service.records(loop.session_id)
        ):
            return
        service.take(
            loop.session_id,
            reason="turn",
            seq=turn_seq,
            turn_seq=turn_seq,
            run_id=loop.journal.run_id,
            input_id=loop.s.input_id,
        )

    try:
        await in_thread(take)
    except Exception:
        logger.exception("the turn checkpoint of run %s failed", loop.journal.run_id)


async def before_call(loop: LoopState, call: ToolCall) -> bool:
    """The checkpoint before a mutating call; whether the call is one."""
    reason = mutating(loop, call.name)
    if reason is None:
        return False
    service = checkpoints_of(loop.store)
    turn_seq = loop.s.turn_seqs[0] if loop.s.turn_seqs else None
    try:
        await in_thread(
            lambda: service.take(
                loop.session_id,
                reason=reason,
                turn_seq=turn_seq,
                run_id=loop.journal.run_id,
                call_id=call.call_id,
                tool=call.name,
                input_id=loop.s.input_id,
            )
        )
    except Exception:
        logger.exception("the checkpoint before call %s failed", call.call_id)
    return True


async def after_call(loop: LoopState, call: ToolCall) -> None:
    """Record what a mutating call left in the workspace."""
    service = checkpoints_of(loop.store)
    try:
        await in_thread(
            lambda: service.record_after(
                loop.session_id, run_id=loop.journal.run_id, call_id=call.call_id
            )
        )
    except Exception:
        logger.exception("the state after call %s was not recorded", call.call_id)
