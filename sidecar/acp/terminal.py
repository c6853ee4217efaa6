"""``run_command`` in the editor's terminal: ``terminal/create`` (``sh -c``; ``cmd /c`` on
Windows) → a ``terminal`` content in the tool call → ``terminal/wait_for_exit`` →
``terminal/output`` → ``terminal/release``, always; a call cancelled or timed out first stops
the command with ``terminal/kill``.

A terminal the editor created is ours to kill and release: a cancel that arrives while
``terminal/create`` is answered waits for the answer, then acts on the terminal.  The output is
what the terminal kept (:data:`MAX_TEXT_BYTES`), then bounded in tokens as every tool result
is, head and tail kept.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import anyio.to_thread
from acp.schema import TerminalToolCallContent

from sidecar.acp.tool_results import Refused, result
from sidecar.tools.bounds import DEFAULT_BOUNDS, fit_head_tail

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from acp.core import AgentSideConnection

__all__ = ["CREATE_TIMEOUT_S", "MAX_TEXT_BYTES", "RELEASE_TIMEOUT_S", "run_in_terminal"]

logger = logging.getLogger(__name__)

#: What the editor's terminal keeps of a command's output (then bounded in tokens as every
#: tool result is, head and tail kept).
MAX_TEXT_BYTES = 256 * 1024
#: How long ``terminal/create`` may take (waited for even by a cancelled call: the terminal
#: it creates must be killed and released).
CREATE_TIMEOUT_S = 30.0
#: How long ``terminal/release`` may take once a command is over (or abandoned).
RELEASE_TIMEOUT_S = 5.0


async def run_in_terminal(
    client: AgentSideConnection,
    session_id: str,
    command: str,
    cwd: str,
    show: Callable[[TerminalToolCallContent], Awaitable[None]],
) -> dict[str, Any]:
    """Run ``command`` in ``cwd`` in a terminal of the editor's; ``show`` puts the terminal in
    the tool call once it exists.  The tool result (wire JSON) ends with the exit code."""
    shell = ["cmd", "/c"] if os.name == "nt" else ["sh", "-c"]
    created = None
    with anyio.CancelScope(shield=True) as scope:
        scope.deadline = anyio.current_time() + CREATE_TIMEOUT_S
        created = await client.create_terminal(
            session_id=session_id,
            command=shell[0],
            args=[shell[1], command],
            cwd=cwd,
            output_byte_limit=MAX_TEXT_BYTES,
        )
    if created is None:
        raise Refused(f"the editor did not create a terminal within {CREATE_TIMEOUT_S:.0f} s")
    terminal_id = created.terminal_id
    try:
        await anyio.lowlevel.checkpoint()  # where a cancel from during the create lands
        await show(TerminalToolCallContent(type="terminal", terminal_id=terminal_id))
        status = await client.wait_for_terminal_exit(session_id=session_id, terminal_id=terminal_id)
        output = await client.terminal_output(session_id=session_id, terminal_id=terminal_id)
    except BaseException:  # cancelled or timed out: the command stops with the call
        with anyio.CancelScope(shield=True), anyio.move_on_after(RELEASE_TIMEOUT_S):
            try:
                await client.kill_terminal(session_id=session_id, terminal_id=terminal_id)
            except Exception:
                logger.warning("terminal/kill %s failed", terminal_id, exc_info=True)
        raise
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(RELEASE_TIMEOUT_S):
            try:
                await client.release_terminal(session_id=session_id, terminal_id=terminal_id)
            except Exception:
                logger.warning("terminal/release %s failed", terminal_id, exc_info=True)
    if status.exit_code is not None:
        ending = f"[exit code {status.exit_code}]"
    else:
        ending = f"[killed by signal {status.signal or '?'}]"
    text = output.output
    if output.truncated:
        text = "[output cut: only its end is kept]\n" + text
    raw = text
    text, _ = await anyio.to_thread.run_sync(
        lambda: fit_head_tail(
            raw, DEFAULT_BOUNDS.max_tokens, "redirect the output to a file and grep it"
        )
    )
    return result(f"{text}\n{ending}" if text else ending, error=status.exit_code != 0)
