"""The ACP agent: ACP's methods translated into the core's sessions and runs.

- ``initialize``: protocol version 1 (the only one; a client asking for another gets 1, as
  the spec says, and decides), ``loadSession``, images and embedded context in prompts, no
  MCP over HTTP/SSE, ``session/list``, ``/close``, ``/resume``, ``/delete``, ``agentInfo``,
  ``session/fork``, no ``authMethods`` (credentials come from the profile's
  ``connectionRef``, never from the editor).
- ``session/new {cwd}``: a session in the store rooted at ``cwd`` (plus
  ``additionalDirectories``), so instruction files and skills are found as for any session.
  Its stdio ``mcpServers`` are connected (:mod:`sidecar.acp.mcp_servers`) before the answer;
  one that fails, or an http/sse one, is a message in the chat, not a failed session.
- ``session/load``: the stored history replayed as ``session/update``\\ s, the MCP servers
  given connected (replacing the session's), then the answer.
- ``session/prompt``: a run (``RunManager.start``, as ``run/start`` does for ``serve``) whose
  events become updates (:mod:`sidecar.acp.mapping`); answered once the run has ended and
  its journal is on disk, with the run's stop reason.
- ``session/cancel``: the session's run is cancelled; its prompt answers ``cancelled``.
- ``session/close``: the prompt cancelled and answered, the MCP servers closed, the session's
  "always allow" answers forgotten (history stays); ``session/resume``: ``session/load``
  without the replay; ``session/delete``: closed, then moved to the store's trash.
- Tools: every run offers the editor tools (:mod:`sidecar.acp.tools`) and the session's MCP
  servers' tools; the editor tools' updates are sent in the order of the run's events
  (``InTurn`` items in the prompt's queue).
- slash commands (:mod:`sidecar.acp.commands`): advertised after ``session/new`` and
  ``session/load``, a prompt starting with one is answered without a run; ``usage_update``
  after each model call (:mod:`sidecar.acp.usage`); ``_context-sidecar/<method>`` extension
  requests go to the method table under both faces (:mod:`sidecar.acp.extensions`).

One prompt at a time per session (a second gets ``session.busy``).  Errors: a core error
becomes a JSON-RPC error with the same ``data`` as ``serve`` sends (``data.code`` dotted);
anything unexpected is logged with an ``errorId`` and answered ``-32603`` with that id only.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    CloseSessionResponse,
    DeleteSessionResponse,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from protocol.errors import ErrorCode
from sidecar import __version__
from sidecar.acp.approvals import Approvals
from sidecar.acp.commands import parse_command
from sidecar.acp.config import APPROVAL, ModelChoice, SessionConfig
from sidecar.acp.errors import InFlight, acp_code, answers
from sidecar.acp.extensions import EXTENSION_PREFIX
from sidecar.acp.history import after_run, entry_at
from sidecar.acp.mapping import PromptBlock, RunUpdates, SessionUpdate, prompt_parts
from sidecar.acp.mcp_servers import McpServers
from sidecar.acp.plan import PlanTool
from sidecar.acp.run_settings import RunSettings
from sidecar.acp.sessions import AcpSessions
from sidecar.acp.tools import EditorTools, InTurn
from sidecar.acp.usage import UsageMeter
from sidecar.errors import BusyError, InvalidRequestError

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from acp.core import AgentSideConnection

    from sidecar.acp.commands import SlashCommands
    from sidecar.acp.extensions import ServeMethods
    from sidecar.runs.manager import RunManager
    from sidecar.store import Store

__all__ = ["SidecarAgent"]

logger = logging.getLogger(__name__)

#: How long ``session/close`` waits for the session's cancelled prompt to answer.
DRAIN_S = 5.0


@dataclass(slots=True)
class _Prompt:
    events: asyncio.Queue[dict[str, Any] | InTurn] = field(default_factory=asyncio.Queue)
    run_id: str | None = None
    cancel_requested: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)


class SidecarAgent:
    """ACP's agent methods over one store (the SDK's ``Agent`` protocol, by name)."""

    def __init__(self, store: Store, model: ModelChoice) -> None:
        self.store = store
        self.model = model
        self.runs: RunManager
        """Set once the task group that runs them exists (see :mod:`sidecar.acp.serve`)."""
        self._client: AgentSideConnection | None = None
        self._client_capabilities: ClientCapabilities | None = None
        self._prompts: dict[str, _Prompt] = {}
        self._played = 0
        """Model calls made so far: the scripted model's next round."""
        self._forwarded: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.in_flight = InFlight()
        session_of = self._session_of_run
        self.config = SessionConfig(store, model)
        self.approvals = Approvals(
            self.config.mode_id,
            lambda session_id: self._send_in_turn(session_id, InTurn(None)),  # the tool_call
            self._cancel_turn,
            self.config,
        )
        self.tools = EditorTools(store, self.approvals, self._send_in_turn, session_of)
        self.mcp = McpServers(lambda fn: self.spawn(fn), session_of, self.approvals)
        self.plan = PlanTool()
        self.run_settings = RunSettings(store, self.config, self.tools, self.plan, self.mcp)
        self.tools.env_of = self.run_settings.command_env
        self.sessions = AcpSessions(
            store,
            model,
            self.config,
            self.mcp,
            self.approvals,
            self._send,
            self._tell,
            self._end_turn,
        )
        # commands, usage and extension methods (sidecar/acp/commands.py, usage.py,
        # extensions.py); the first two are set with the runs (see sidecar.acp.serve)
        self.commands: SlashCommands
        self.serve_methods: ServeMethods
        self.spawn: Callable[[Callable[[], Coroutine[Any, Any, None]]], None]
        self.usage = UsageMeter()

    def cancel_all(self) -> int:
        """Cancel every prompt turn (each answers ``cancelled``), as ``session/cancel`` of
        each session would; how many there were (Ctrl-C in a client's terminal)."""
        sessions = list(self._prompts)
        for session_id in sessions:
            self._cancel_turn(session_id)
        return len(sessions)

    async def drain(self, grace_s: float) -> None:
        """stdin closed: cancel every run (its prompt answers ``cancelled``) and give the
        handlers in flight ``grace_s`` seconds to answer before the connection closes."""
        self.cancel_all()
        with anyio.move_on_after(grace_s):
            await self.in_flight.idle.wait()

    def _session_of_run(self, run_id: str) -> str:
        return str(self.runs.get(run_id)["sessionId"])

    def on_connect(self, conn: AgentSideConnection) -> None:
        self._client = conn
        self.tools.client = conn
        self.approvals.client = conn

    def deliver(self, event: dict[str, Any]) -> None:
        """A run event (the run bridge calls this): for the session's prompt, or, for a run
        started with ``_context-sidecar/run/start``, to the client as it is."""
        prompt = self._prompts.get(str(event.get("sessionId")))
        if prompt is not None and prompt.run_id in (None, event.get("runId")):
            prompt.events.put_nowait(event)
        else:
            self._forwarded.put_nowait(event)

    async def forward_run_events(self) -> None:
        """Send the events of runs no prompt waits for, in order, as
        ``_context-sidecar/run/event`` notifications (``serve``'s ``run/event`` params)."""
        while True:
            event = await self._forwarded.get()
            assert self._client is not None
            try:
                await self._client.ext_notification(f"{EXTENSION_PREFIX}run/event", event)
            except Exception as exc:  # the client went away
                logger.warning("run event not forwarded: %s", exc)

    async def _send(self, session_id: str, update: SessionUpdate) -> None:
        assert self._client is not None
        await self._client.session_update(session_id=session_id, update=update)

    async def _send_in_turn(self, session_id: str, item: InTurn) -> None:
        """Send ``item`` after the run events queued before it; return once it is sent."""
        prompt = self._prompts.get(session_id)
        if prompt is None:
            if item.update is not None:
                await self._send(session_id, item.update)
            return
        prompt.events.put_nowait(item)
        await item.sent.wait()

    # --- lifecycle ---------------------------------------------------------------------------

    @answers
    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self._client_capabilities = client_capabilities
        self.tools.capabilities = client_capabilities
        if protocol_version != PROTOCOL_VERSION:
            logger.warning(
                "client asked for ACP version %d; answering %d", protocol_version, PROTOCOL_VERSION
            )
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=True, audio=False, embedded_context=True
                ),
                mcp_capabilities=McpCapabilities(http=False, sse=False),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    close=SessionCloseCapabilities(),
                    resume=SessionResumeCapabilities(),
                    delete=SessionDeleteCapabilities(),
                    fork=SessionForkCapabilities(),
                ),
            ),
            agent_info=Implementation(
                name="context-sidecar", title="context-sidecar", version=__version__
            ),
            auth_methods=[],
        )

    @answers
    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        raise InvalidRequestError(
            ErrorCode.PARAMS_INVALID,
            f"no authentication method {method_id!r}: credentials come from the profile",
        )

    # --- sessions ----------------------------------------------------------------------------

    @answers
    async def new_session(
        self,
        cwd: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        return await self.sessions.new(cwd, mcp_servers, additional_directories)

    @answers
    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse:
        return await self.sessions.load(cwd, session_id, mcp_servers)

    @answers
    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> ResumeSessionResponse:
        return await self.sessions.resume(cwd, session_id, mcp_servers)

    @answers
    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        return await self.sessions.fork(session_id, cwd, mcp_servers)

    @answers
    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        await self.sessions.close(session_id)
        return CloseSessionResponse()

    @answers
    async def delete_session(self, session_id: str, **kwargs: Any) -> DeleteSessionResponse:
        await self.sessions.delete(session_id)
        return DeleteSessionResponse()

    async def _end_turn(self, session_id: str) -> None:
        """Cancel the session's prompt and wait (at most :data:`DRAIN_S`) for its answer."""
        prompt = self._prompts.get(session_id)
        if prompt is not None:
            self._cancel_turn(session_id)
            with anyio.move_on_after(DRAIN_S):
                await prompt.done.wait()

    # --- settings ----------------------------------------------------------------------------

    @answers
    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        await self.config.set(session_id, config_id, value)
        if config_id == APPROVAL:
            self._tell(session_id, self.config.updates(session_id)[0])
        return SetSessionConfigOptionResponse(config_options=self.config.options(session_id))

    @answers
    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        await self.config.set_mode(session_id, mode_id)
        self._tell(session_id, self.config.updates(session_id)[1])
        return SetSessionModeResponse()

    def _tell(self, session_id: str, *updates: SessionUpdate) -> None:
        """Send ``updates``, in order, once the answer being made is written (the transport
        writes an answer before this task can run)."""

        async def send() -> None:
            try:
                for update in updates:
                    await self._send(session_id, update)
            except Exception as exc:  # the client went away
                logger.warning("session updates not sent: %s", exc)

        self.spawn(send)

    @answers
    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        sessions, next_cursor = self.store.sessions.list_page(cursor=cursor, limit=50)
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=s.session_id,
                    cwd=s.workspace_roots[0] if s.workspace_roots else "",
                    title=s.title or None,
                    updated_at=s.updated_at,
                )
                for s in sessions
                if cwd is None or (s.workspace_roots and s.workspace_roots[0] == cwd)
            ],
            next_cursor=next_cursor,
        )

    # --- prompts -----------------------------------------------------------------------------

    @answers
    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> PromptResponse:
        session = self.store.sessions.get(session_id)
        if session_id in self._prompts:
            raise BusyError(
                ErrorCode.SESSION_BUSY,
                f"session {session_id} is already answering a prompt",
                details={"sessionId": session_id},
                retry_after_ms=500,
            )
        state = _Prompt()
        self._prompts[session_id] = state  # before any await: a second prompt is busy
        command = parse_command(prompt)
        if command is not None:
            return await self._command(session_id, *command)
        root = session.workspace_roots[0] if session.workspace_roots else None
        updates = RunUpdates(
            lambda seq: entry_at(self.store, session_id, seq),
            self.store.blobs.get,
            root,
            self.tools.shown,
        )
        try:
            parts = await anyio.to_thread.run_sync(
                lambda: prompt_parts(prompt, self.store.blobs.put)
            )
            started = await self.runs.start(
                self.run_settings.params(session_id, parts, self._played)
            )
            state.run_id = run_id = str(started["runId"])
            if state.cancel_requested:
                self.runs.cancel(run_id)
            while updates.outcome is None:
                event = await state.events.get()
                if isinstance(event, InTurn):
                    if event.update is not None:
                        await self._send(session_id, event.update)
                    event.sent.set()
                    continue
                for update in [*updates.updates(event), *self.usage.updates(session_id, event)]:
                    await self._send(session_id, update)
            await self.runs.wait(run_id)  # the journal is on disk before the answer
            await after_run(self.store, session_id, session.head_seq, updates)
        finally:
            if state.run_id is not None and updates.outcome is None:  # the client went away
                self.runs.cancel(state.run_id)
            self._prompts.pop(session_id, None)
            state.done.set()
            self._played += updates.model_calls
        outcome = updates.outcome
        assert outcome is not None
        if outcome.stop is None:
            failure = outcome.failure or {}
            message = str(failure.get("message", "the run failed"))
            raise RequestError(acp_code(failure.get("code")), message, failure)
        return PromptResponse(stop_reason=outcome.stop)

    async def _command(self, session_id: str, name: str, argument: str) -> PromptResponse:
        """A slash command (:mod:`sidecar.acp.commands`): answered here, no run."""
        try:
            answer = await self.commands.answer(session_id, name, argument, self._played)
        finally:
            self._prompts.pop(session_id, None)
        self._played += answer.model_calls
        await self._send(session_id, answer.message)
        return PromptResponse(stop_reason="end_turn")

    # --- serve's protocol as extension methods -----------------------------------------------

    @answers
    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self.serve_methods.extension(method, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        logger.debug("extension notification ignored: %s", method)

    @answers
    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._cancel_turn(session_id)

    def _cancel_turn(self, session_id: str) -> None:
        """The session's prompt ends ``cancelled`` (``session/cancel``, or a permission the
        client answered ``cancelled``)."""
        prompt = self._prompts.get(session_id)
        if prompt is None:
            return  # nothing running: a late cancel is not an error
        prompt.cancel_requested = True
        if prompt.run_id is not None:
            self.runs.cancel(prompt.run_id)
