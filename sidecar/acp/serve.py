"""``context-sidecar acp``: the process.

Before anything else the protocol moves to a private duplicate of fd 1 and fd 1 is pointed at
stderr (as for ``serve``), so a ``print`` anywhere lands in the log, never in the ACP stream.
The store is the same as ``serve``'s, shared with any number of other processes: a session
is written by one process at a time (``session/prompt`` on a session another process holds
answers ``session.held``; see :mod:`sidecar.store.session_state`).
The process ends when stdin closes; runs still going are cancelled (their journals say so)
and the sessions' MCP servers are closed.  Signals, as a client in a terminal shares its
process group with the agent: SIGINT (Ctrl-C) cancels the prompts going on (each answers
``cancelled``) and the agent keeps serving; SIGTERM cancels them, gives them
:data:`DRAIN_SECONDS` to answer, closes and exits 0 — never a traceback.  A thread still
busy then (a tool call nobody waits for) does not hold the process: once the connection is
closed it ends within :data:`EXIT_GRACE_S` whatever is left (:mod:`sidecar.exiting`), and
whatever happens at most :data:`LAST_EXIT_S` after stdin closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from protocol._base import parse_wire
from protocol.snapshots import ProfileInput
from sidecar.acp.agent import SidecarAgent
from sidecar.acp.config import ModelChoice
from sidecar.defaults import DEFAULT_MAX_MESSAGE_BYTES
from sidecar.exiting import arm_backstop

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from acp.interfaces import Agent

__all__ = ["AcpOptions", "ModelChoiceError", "model_choice", "serve_acp"]

logger = logging.getLogger(__name__)

#: After stdin closes: how long requests in flight have to answer (runs are cancelled).
DRAIN_SECONDS = 5.0
#: Once the connection is closed and the tasks are done: how long the process may take to end.
EXIT_GRACE_S = 0.5
#: After stdin closed, the process ends by then whatever it is doing (the drain, the MCP
#: servers' close, a thread): nothing can be answered any more.
LAST_EXIT_S = DRAIN_SECONDS + 5.0


@dataclass(frozen=True, slots=True)
class AcpOptions:
    store: Path
    profile: str | None = None
    """A stored profile's id, or a JSON file holding a profile."""
    script: Path | None = None
    """A JSON script for the ``scripted`` provider (tests and demos)."""
    max_line_bytes: int = DEFAULT_MAX_MESSAGE_BYTES


class ModelChoiceError(Exception):
    """``--profile`` or ``--script`` names something unusable (said on stderr at start)."""


def model_choice(options: AcpOptions) -> ModelChoice:
    """``--profile ID|FILE`` and ``--script FILE`` as the model every prompt runs with: a
    profile file is read now (a bad one stops the process with a clear message); a profile
    id is looked up when a prompt runs (``profile.not_found`` then)."""
    profile_id, profile, script = None, None, None
    if options.profile is not None:
        path = Path(options.profile).expanduser()
        if path.is_file():
            profile = parse_wire(ProfileInput, _json(path, "profile"))
        elif _names_a_file(options.profile):
            raise ModelChoiceError(
                f"profile file {path} does not exist (--profile takes a profile JSON file or"
                " a stored profile's id)"
            )
        else:
            profile_id = options.profile
    if options.script is not None:
        data = _json(options.script, "script")
        if not isinstance(data, dict):
            raise ModelChoiceError(f"script {options.script}: not a JSON object")
        script = data
    return ModelChoice(profile_id=profile_id, profile=profile, script=script)


def _route_session_delete(conn: Any, agent: SidecarAgent) -> None:
    """``session/delete`` is in ACP's schema (and advertised in ``sessionCapabilities``) but
    the SDK's agent router has no route for it (0.12: ``session/close`` and ``/resume`` are
    routed as unstable, which ``use_unstable_protocol`` turns on): add it to the router the
    connection dispatches with (``tests/e2e/test_acp_session_life.py`` goes red if an SDK
    release moves it)."""
    from acp.schema import DeleteSessionRequest
    from acp.utils import normalize_result

    router = conn._conn._handler
    router.route_request(
        "session/delete",
        DeleteSessionRequest,
        agent,
        "delete_session",
        adapt_result=normalize_result,
    )


def _on_signals(agent: SidecarAgent, listening: anyio.CancelScope) -> Callable[[], bool]:
    """SIGINT cancels the prompts and serving goes on; SIGTERM cancels them and stops
    listening (the caller drains and closes).  Returns whether SIGTERM came."""
    loop = asyncio.get_running_loop()
    came: list[int] = []

    def interrupted() -> None:
        logger.info("SIGINT: %d prompt(s) cancelled; still serving", agent.cancel_all())

    def terminate() -> None:
        came.append(signal.SIGTERM)
        agent.cancel_all()
        listening.cancel()

    for sig, handler in ((signal.SIGINT, interrupted), (signal.SIGTERM, terminate)):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # no signals (Windows)
            loop.add_signal_handler(sig, handler)
    return lambda: bool(came)


def _names_a_file(value: str) -> bool:
    """Whether ``--profile``'s value is a path (a stored profile's id is a bare word such as
    ``prf_01…``: it has no separator, no leading ``~`` or ``.``, no ``.json``)."""
    return (
        os.sep in value
        or (os.altsep is not None and os.altsep in value)
        or value.startswith(("~", "."))
        or value.lower().endswith(".json")
    )


def _json(path: Path, what: str) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelChoiceError(f"{what} {path}: {exc}") from None


def _take_stdout() -> int:
    """Return a private fd for the protocol and make fd 1 an alias of stderr."""
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


def serve_acp(options: AcpOptions) -> int:
    """Speak ACP on stdin/stdout until stdin closes; the process exit code."""
    out_fd = _take_stdout()
    from sidecar import interpreter

    interpreter.tune()
    try:
        choice = model_choice(options)
    except (ModelChoiceError, ValueError) as exc:
        sys.stderr.write(f"context-sidecar acp: {exc}\n")
        return 2
    return anyio.run(_serve, options, choice, out_fd, backend="asyncio")


async def _serve(options: AcpOptions, choice: ModelChoice, out_fd: int) -> int:
    from acp.core import AgentSideConnection

    from protocol.server import Limits
    from sidecar.acp.bridge import AcpRunBridge, ToolHosts
    from sidecar.acp.commands import SlashCommands
    from sidecar.acp.extensions import ServeMethods
    from sidecar.acp.framing import NdjsonStdio
    from sidecar.context.tokens import Tokenizers
    from sidecar.methods.capabilities import limits_block
    from sidecar.methods.state import SidecarState
    from sidecar.runs.manager import RunManager
    from sidecar.store import Store

    root = options.store.expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    store = Store(root, face="acp")
    transport = NdjsonStdio(0, out_fd, max_line_bytes=options.max_line_bytes)
    await transport.open()
    agent = SidecarAgent(store, choice)
    try:
        async with anyio.create_task_group() as tg:
            # serve's state over the same store: one context service, one run manager, and
            # serve's routes for the extension methods and the commands
            state = SidecarState(
                store=store,
                tokenizers=Tokenizers.discover(),
                limits=parse_wire(Limits, limits_block(options.max_line_bytes)),
            )

            def spawn(fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
                tg.start_soon(fn)

            agent.runs = agent.sessions.runs = state.runs = RunManager(
                store,
                state.context,
                AcpRunBridge(agent.deliver, ToolHosts(agent.tools, agent.plan, agent.mcp)),
                spawn,
            )
            agent.spawn = spawn
            tg.start_soon(agent.forward_run_events)
            agent.serve_methods = agent.sessions.methods = ServeMethods(state)
            agent.commands = SlashCommands(agent.serve_methods, agent.config.model_of, agent.runs)
            agent.commands.tools_of = agent.run_settings.tool_definitions
            conn = AgentSideConnection(
                cast("Agent", agent), transport, listening=False, use_unstable_protocol=True
            )
            _route_session_delete(conn, agent)
            listening = anyio.CancelScope()
            terminated = _on_signals(agent, listening)
            try:
                with listening:
                    await conn.listen()
                why = "terminated (SIGTERM)" if terminated() else "stdin closed"
                logger.info("%s; exiting", why)
                arm_backstop(0, LAST_EXIT_S, why)
                await agent.drain(DRAIN_SECONDS)
            except (ConnectionError, OSError) as exc:
                logger.warning("the client went away: %s", exc)
                arm_backstop(0, LAST_EXIT_S, "the client went away")
            finally:
                try:
                    await conn.close()  # cancels what is still in flight
                except Exception:
                    logger.exception("closing the ACP connection")
                with anyio.CancelScope(shield=True):
                    await agent.mcp.close_all()  # the MCP servers' processes end with ours
            tg.cancel_scope.cancel()
    finally:
        store.close()
        arm_backstop(0, EXIT_GRACE_S, "the connection closed")
    return 0
