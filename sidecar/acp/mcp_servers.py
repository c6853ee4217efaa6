"""The MCP servers an ACP session was given (``mcpServers`` of ``session/new`` and
``session/load``), connected with the official ``mcp`` SDK.

- Only stdio servers (required of every ACP agent; ``initialize`` advertises
  ``mcpCapabilities {http: false, sse: false}``): each is started with its ``command``,
  ``args`` and ``env`` in the session's ``cwd``, its stderr going to the sidecar's log,
  through :mod:`sidecar.acp.mcp_stdio` (a message is at most 8 MiB; junk on its stdout is
  counted, not logged line by line).  An http, sse or acp server is not connected, and the
  session says why.
- What the log and the editor are told of a server's command line is redacted
  (:mod:`sidecar.redact`): what looks like a secret in its ``args`` is ``***``, and of its
  ``env`` only the names are shown.
- ``session/new`` (and ``session/load``) waits until every server has answered
  ``initialize`` and ``tools/list``, at most :data:`CONNECT_TIMEOUT_S` each (in parallel).  A
  server that cannot be started, exits, or does not answer in time is a *diagnostic* (the
  agent's answer sends it to the chat as an ``agent_message_chunk`` and logs it); the session
  works without it.
- Its tools are offered to every run of the session as ``<server>__<tool>`` (both parts cut
  to the provider-safe ``[A-Za-z0-9_-]``, at most 64 characters in all; a clash gets a
  numeric suffix) with the server's description and input schema, and called through the run
  bridge like the editor tools (:class:`~sidecar.acp.bridge.ToolHost`); a result is bounded
  as a built-in tool's (:mod:`sidecar.acp.mcp_results`).  A call is asked
  about as the session's approval mode says (:mod:`sidecar.acp.approvals`), except for tools
  the server marks ``readOnlyHint``.
- A server lives as long as its session in this process: ``session/load`` of the same session
  replaces them, and the process closes every server before it exits.

Each server is owned by one task (the ``mcp`` SDK's contexts hold task groups that must be
left by the task that entered them): it connects, lists the tools, then waits to be closed;
tool calls from the runs go through its ``ClientSession``.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from acp.schema import McpServerStdio, ToolCallUpdate

from sidecar.acp.mcp_results import error_result, model_result
from sidecar.acp.mcp_stdio import stdio_transport
from sidecar.redact import env_names, redact_command, redact_text

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from mcp import types as mcp_types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters

    from sidecar.acp.approvals import Approvals, Effect

# The ``mcp`` SDK is imported when a session is given a server (its import takes about as
# long as the rest of the process's start), not when ``acp`` starts.

__all__ = ["CONNECT_TIMEOUT_S", "McpServers", "tool_name"]

logger = logging.getLogger(__name__)

#: How long a server has to start and answer ``initialize`` and ``tools/list``.
CONNECT_TIMEOUT_S = 10.0
#: How long closing one server may take (the SDK ends the process after its own grace).
CLOSE_TIMEOUT_S = 5.0

_NAME_LIMIT = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def tool_name(server: str, tool: str, taken: set[str]) -> str:
    """``<server>__<tool>``, provider-safe, at most 64 characters, not in ``taken``."""
    base = f"{_UNSAFE.sub('_', server).strip('_') or 'mcp'}__{_UNSAFE.sub('_', tool) or 'tool'}"
    name, n = base[:_NAME_LIMIT], 1
    while name in taken:
        n += 1
        suffix = f"_{n}"
        name = base[: _NAME_LIMIT - len(suffix)] + suffix
    return name


def _leaf(exc: BaseException) -> BaseException:
    """The first exception that is not a group (task groups wrap what failed)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    leaf = _leaf(exc)
    if isinstance(leaf, OSError) and leaf.strerror:
        return f"cannot start it: {leaf.strerror}"
    text = redact_text(str(leaf).strip())
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


class _Server:
    """One server process and its client session, owned by the task running :meth:`run`."""

    def __init__(self, name: str, params: StdioServerParameters) -> None:
        self.name = name
        self.params = params
        self.tools: list[mcp_types.Tool] = []
        self.session: ClientSession | None = None
        """Set while connected: what tool calls go through."""
        self.failure: str | None = None
        """Why it never connected."""
        self.ready = anyio.Event()
        """Connected, or failed."""
        self.closing = anyio.Event()
        self.done = anyio.Event()

    async def run(self) -> None:
        """Connect, list the tools, serve calls until closed (the owning task)."""
        try:
            from mcp.client.session import ClientSession

            logger.debug(
                "starting MCP server %r: %s (env: %s)",
                self.name,
                self.shown_command(),
                env_names(self.params.env),
            )
            with anyio.CancelScope() as scope:
                scope.deadline = anyio.current_time() + CONNECT_TIMEOUT_S
                async with (
                    stdio_transport(self.name, self.params) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    self.tools = await _list_tools(session)
                    scope.deadline = math.inf
                    self.session = session
                    self.ready.set()
                    await self.closing.wait()
            if scope.cancelled_caught and self.session is None:
                self.failure = f"no answer within {CONNECT_TIMEOUT_S:g} s"
        except Exception as exc:
            if self.session is None:
                self.failure = _describe(exc)
            else:
                logger.warning("MCP server %r ended: %s", self.name, _describe(exc))
        finally:
            self.session = None
            self.ready.set()
            self.done.set()

    def shown_command(self) -> str:
        """Its command line as the log and the editor may see it (redacted)."""
        return redact_command(self.params.command, self.params.args)

    async def close(self) -> None:
        self.closing.set()
        with anyio.move_on_after(CLOSE_TIMEOUT_S):
            await self.done.wait()


async def _list_tools(session: ClientSession) -> list[mcp_types.Tool]:
    from mcp import types as mcp_types

    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    while True:
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools


@dataclass(frozen=True, slots=True)
class _Offered:
    server: _Server
    tool: str
    """The tool's name on its server."""
    definition: dict[str, Any]
    """What the run offers the model (a ``ToolDefinition``, wire JSON)."""
    read_only: bool
    """The server marks it ``readOnlyHint``: not asked about."""


class McpServers:
    """The MCP servers of this connection's sessions, as a tool host of the run bridge.

    ``spawn(fn)`` starts a task in the process's task group; ``session_of(run_id)`` names a
    run's session."""

    def __init__(
        self,
        spawn: Callable[[Callable[[], Coroutine[Any, Any, None]]], None],
        session_of: Callable[[str], str],
        approvals: Approvals,
    ) -> None:
        self._spawn = spawn
        self._session_of = session_of
        self._approvals = approvals
        self._servers: dict[str, list[_Server]] = {}
        self._offered: dict[str, dict[str, _Offered]] = {}
        """Per session: offered name → tool."""

    async def open(self, session_id: str, servers: list[Any] | None, cwd: str) -> list[str]:
        """Connect the session's servers (replacing any it had); the diagnostics to show."""
        await self.close(session_id)
        notes: list[str] = []
        started: list[_Server] = []
        for given in servers or []:
            name = str(getattr(given, "name", "?"))
            if not isinstance(given, McpServerStdio):
                kind = getattr(given, "type", "?")
                notes.append(
                    f"MCP server {name!r} is not connected: {kind} servers are not supported "
                    "(stdio only)."
                )
                continue
            from mcp.client.stdio import StdioServerParameters

            params = StdioServerParameters(
                command=given.command,
                args=list(given.args),
                env={v.name: v.value for v in given.env} or None,
                cwd=cwd,
            )
            server = _Server(name, params)
            self._spawn(server.run)
            started.append(server)
        self._servers[session_id] = started  # closed at exit even if this answer never ends
        for server in started:
            await server.ready.wait()
        offered: dict[str, _Offered] = {}
        for server in started:
            if server.failure is not None:
                env = f"; env: {env_names(server.params.env)}" if server.params.env else ""
                notes.append(
                    f"MCP server {server.name!r} is not connected: {server.failure} "
                    f"(command: {server.shown_command()}{env}; its stderr is in the sidecar's "
                    "log). The session goes on without its tools."
                )
                continue
            for tool in server.tools:
                name = tool_name(server.name, tool.name, set(offered))
                schema = dict(tool.input_schema) or {"type": "object", "properties": {}}
                definition = {
                    "name": name,
                    "description": tool.description or tool.title or tool.name,
                    "parameters": schema,
                }
                read_only = bool(tool.annotations and tool.annotations.read_only_hint)
                offered[name] = _Offered(server, tool.name, definition, read_only)
            logger.info(
                "MCP server %r connected for session %s: %d tools",
                server.name,
                session_id,
                len(server.tools),
            )
        self._offered[session_id] = offered
        for note in notes:
            logger.warning("session %s: %s", session_id, note)
        return notes

    def definitions(self, session_id: str) -> list[dict[str, Any]]:
        """The tools a run of the session offers the model (``ToolDefinition`` wire JSON)."""
        return [o.definition for o in self._offered.get(session_id, {}).values()]

    def offers(self, name: object) -> bool:
        return isinstance(name, str) and any(name in o for o in self._offered.values())

    def approval_required(self, session_id: str) -> list[str]:
        """The offered tools a call of which goes through the approval step."""
        return [n for n, o in self._offered.get(session_id, {}).items() if not o.read_only]

    async def approve(self, params: dict[str, Any]) -> dict[str, Any]:
        """As the session's approval mode says (:mod:`sidecar.acp.approvals`)."""
        name = str(params["name"])
        session_id = self._session_of(str(params["runId"]))
        offered = self._offered.get(session_id, {}).get(name)
        if offered is None:
            return {"approved": False, "reason": f"tool {name!r} is not available"}
        arguments: dict[str, Any] = params.get("arguments") or {}
        call = ToolCallUpdate(
            tool_call_id=str(params["callId"]),
            title=f"{offered.server.name}: {offered.tool}",
            kind="other",
            status="pending",
            raw_input=arguments,
        )
        effect: Effect = "read" if offered.read_only else "mcp"
        return await self._approvals.decide(session_id, name, effect, call)

    async def execute(self, params: dict[str, Any]) -> dict[str, Any]:
        """``tool/execute`` → ``tools/call``: a ``ToolExecuteResult`` (wire JSON)."""
        name = str(params["name"])
        session_id = self._session_of(str(params["runId"]))
        offered = self._offered.get(session_id, {}).get(name)
        if offered is None:
            return error_result(f"tool {name!r} is not available in this session")
        session = offered.server.session
        if session is None:
            return error_result(f"MCP server {offered.server.name!r} is not running")
        arguments: dict[str, Any] = params.get("arguments") or {}
        try:
            answer = await session.call_tool(offered.tool, arguments)
        except Exception as exc:
            why = _describe(exc)  # one line per failed call; the traceback only at -vv
            logger.warning("MCP %s/%s failed: %s", offered.server.name, offered.tool, why)
            logger.debug("MCP %s/%s failed", offered.server.name, offered.tool, exc_info=True)
            return error_result(f"MCP server {offered.server.name!r}: {why}")
        return await model_result(answer, name)

    async def close(self, session_id: str) -> None:
        """Close the session's servers (their processes end)."""
        self._offered.pop(session_id, None)
        servers = self._servers.pop(session_id, [])
        async with anyio.create_task_group() as tg:
            for server in servers:
                tg.start_soon(server.close)

    async def close_all(self) -> None:
        for session_id in list(self._servers):
            await self.close(session_id)
