"""The sessions of an ACP connection: opened (``session/new``, ``/load``, ``/resume``,
``/fork``), closed and deleted — and who may write them when several processes share the store.

Many windows, one store (:mod:`sidecar.store.session_state`): each session is written by one
process at a time.  ``session/load`` of a session no live process holds takes it over (the
runs a dead holder left are settled then); one another live window holds is loaded
**read-only** and the chat says so — a prompt there answers ``session.held`` (retryable,
naming the holder) until that window closes it or goes.  ``session/close`` cancels the
session's prompt (and waits for its answer), closes its MCP servers, forgets its "always
allow" answers and gives the session back for another process to write; ``session/delete``
closes it, then moves it to the store's trash.

``session/fork`` (ACP's unstable ``fork_session``) is ``serve``'s ``session/fork`` of the whole
history: a new session, held here, with the source's history, roots, title and settings (its
``meta``: model and approval mode); the source is only read, so a session another window holds
(or one answering a prompt here) can be forked.  As ``session/load`` does with its ``cwd``, the
fork keeps the source's workspace roots: ``cwd`` and ``additionalDirectories`` only locate the
MCP servers given for the fork.  Nothing is replayed: the client has the history it forked.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from acp.schema import (
    AgentMessageChunk,
    ForkSessionResponse,
    LoadSessionResponse,
    NewSessionResponse,
    ResumeSessionResponse,
    TextContentBlock,
)

from protocol.errors import ErrorCode
from sidecar.acp.commands import available_commands
from sidecar.acp.history import read_history
from sidecar.acp.replay import history_updates
from sidecar.errors import InvalidRequestError, SidecarError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from sidecar.acp.approvals import Approvals
    from sidecar.acp.config import ModelChoice, SessionConfig
    from sidecar.acp.extensions import ServeMethods
    from sidecar.acp.mapping import SessionUpdate
    from sidecar.acp.mcp_servers import McpServers
    from sidecar.runs.manager import RunManager
    from sidecar.store import Store

__all__ = ["AcpSessions"]

logger = logging.getLogger(__name__)


class AcpSessions:
    """What opens and closes an ACP connection's sessions.  ``send`` sends an update now;
    ``tell`` queues updates behind what is being sent; ``end_turn(session_id)`` cancels the
    session's prompt and returns once it has answered (or given up waiting)."""

    def __init__(
        self,
        store: Store,
        model: ModelChoice,
        config: SessionConfig,
        mcp: McpServers,
        approvals: Approvals,
        send: Callable[[str, SessionUpdate], Awaitable[None]],
        tell: Callable[..., None],
        end_turn: Callable[[str], Awaitable[None]],
    ) -> None:
        self.store = store
        self.model = model
        self.config = config
        self.mcp = mcp
        self.approvals = approvals
        self._send = send
        self._tell = tell
        self._end_turn = end_turn
        self.runs: RunManager
        """Set with the agent's (see :mod:`sidecar.acp.serve`)."""
        self.methods: ServeMethods
        """``serve``'s methods (set with the runs)."""

    async def new(
        self, cwd: str, mcp_servers: list[Any] | None, additional_directories: list[str] | None
    ) -> NewSessionResponse:
        roots = [cwd, *(additional_directories or [])]
        for root in roots:
            if not os.path.isabs(root):
                raise InvalidRequestError(
                    ErrorCode.PARAMS_INVALID,
                    f"{root!r} is not an absolute path",
                    details={"path": root},
                )
        session = await self.store.sessions.create(
            title="",
            workspace_roots=roots,
            profile_id=self.model.profile_id,
            meta={"acp": {"cwd": cwd}},
        )
        session_id = session.session_id
        self.advertise(session_id, await self.mcp.open(session_id, mcp_servers, cwd))
        return NewSessionResponse(
            session_id=session_id,
            config_options=self.config.options(session_id),
            modes=self.config.modes(session_id),
        )

    async def load(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None
    ) -> LoadSessionResponse:
        session = self.store.sessions.get(session_id)
        elsewhere = self._take(session_id)
        entries = await anyio.to_thread.run_sync(lambda: read_history(self.store, session_id))
        root = session.workspace_roots[0] if session.workspace_roots else cwd
        for update in history_updates(entries, self.store.blobs.get, root):
            await self._send(session_id, update)
        self.advertise(session_id, await self.mcp.open(session_id, mcp_servers, cwd), elsewhere)
        return LoadSessionResponse(
            config_options=self.config.options(session_id), modes=self.config.modes(session_id)
        )

    async def resume(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None
    ) -> ResumeSessionResponse:
        """``session/load`` without the replay: the client shows the history it has."""
        self.store.sessions.get(session_id)  # session.not_found before anything opens
        elsewhere = self._take(session_id)
        self.advertise(session_id, await self.mcp.open(session_id, mcp_servers, cwd), elsewhere)
        return ResumeSessionResponse(
            config_options=self.config.options(session_id), modes=self.config.modes(session_id)
        )

    async def fork(
        self, session_id: str, cwd: str, mcp_servers: list[Any] | None
    ) -> ForkSessionResponse:
        forked = await self.methods.call("session/fork", {"sessionId": session_id})
        fork_id = str(forked["sessionId"])
        logger.info("session %s forked from %s", fork_id, session_id)
        self.advertise(fork_id, await self.mcp.open(fork_id, mcp_servers, cwd))
        return ForkSessionResponse(
            session_id=fork_id,
            config_options=self.config.options(fork_id),
            modes=self.config.modes(fork_id),
        )

    async def close(self, session_id: str) -> None:
        self.store.sessions.get(session_id)
        await self._end_turn(session_id)
        await self.mcp.close(session_id)
        self.approvals.forget(session_id)
        try:
            await self.runs.release_session(session_id)
        except SidecarError as exc:  # a run that did not end in time: still this process's
            logger.warning("session %s kept: %s", session_id, exc)

    async def delete(self, session_id: str) -> None:
        await self.close(session_id)
        await self.store.sessions.delete(session_id)

    def _take(self, session_id: str) -> str | None:
        """Become the session's writer if no live process is (settling what a dead holder
        left); else what the chat says: who holds it."""
        try:
            self.store.sessions.hold(session_id)
        except SidecarError as exc:
            holder = (exc.details or {}).get("heldBy") or {}
            since = f" since {holder['since']}" if holder.get("since") else ""
            return (
                f"This session is open in another window ({holder.get('face', 'a sidecar')}, "
                f"pid {holder.get('pid', '?')}{since}): it is read-only here until that window "
                "closes it or exits."
            )
        return None

    def advertise(self, session_id: str, notes: list[str], held: str | None = None) -> None:
        """``available_commands_update``, and in one message the MCP diagnostics and what
        makes the session read-only here."""
        updates: list[SessionUpdate] = [available_commands()]
        lines = [
            *(f"**MCP**: {note}" for note in notes),
            *([f"**Read-only**: {held}"] if held else []),
        ]
        if lines:
            text = "\n\n".join(lines)
            updates.append(
                AgentMessageChunk(
                    session_update="agent_message_chunk",
                    content=TextContentBlock(type="text", text=text),
                )
            )
        self._tell(session_id, *updates)
