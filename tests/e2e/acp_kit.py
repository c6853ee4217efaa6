"""The editor's side of the ACP tests: the official ACP Python SDK's client connection
(``spawn_agent_process`` + ``ClientSideConnection``) driving ``context-sidecar acp``, with a
test editor that records every update and, in :class:`ToolEditor`, serves ``fs/*``,
``terminal/*`` and ``session/request_permission`` as an editor does.

Every message the SDK receives is validated by its own schema models, and every raw request
and ``session/update`` the agent sends is checked to round-trip through them unchanged
(nothing the schema does not know).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.interfaces import Client
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    AvailableCommandsUpdate,
    ClientCapabilities,
    ContentToolCallContent,
    CreateTerminalRequest,
    CreateTerminalResponse,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    KillTerminalRequest,
    KillTerminalResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    ReleaseTerminalResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    TerminalExitStatus,
    TerminalOutputRequest,
    TerminalOutputResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from pydantic import BaseModel

from sidecar.client import sidecar_command


class Editor:
    """The test's editor: the SDK ``Client`` protocol, by name; records every update."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.raw: list[dict[str, Any]] = []
        self.requested: dict[Any, str] = {}
        """The client's requests by id (to check each answer against its method's model)."""
        self.chunks = 0
        self.chunk_arrived = asyncio.Event()
        self.commands: dict[str, AvailableCommandsUpdate] = {}
        self.commands_arrived = asyncio.Event()
        self.extension_notifications: list[tuple[str, dict[str, Any]]] = []
        self.process: asyncio.subprocess.Process | None = None
        """The agent's process (set by :func:`acp_agent`)."""

    async def close(self) -> None:
        """Whatever the editor started for the agent ends with the test (terminals)."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, AvailableCommandsUpdate):  # sent after session/new and /load
            self.commands[session_id] = update
            self.commands_arrived.set()
            return
        self.updates.append((session_id, update))
        if isinstance(update, AgentMessageChunk):
            self.chunks += 1
            self.chunk_arrived.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("session/request_permission")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.extension_notifications.append((method, params))

    def observe(self, event: StreamEvent) -> None:
        message = event.message
        if event.direction == StreamDirection.INCOMING:
            self.raw.append(message)
        elif "method" in message and "id" in message:
            self.requested[message["id"]] = message["method"]

    def take(self) -> list[Any]:
        """The updates since the last take."""
        out = [u for _, u in self.updates]
        self.updates.clear()
        return out


#: What the agent may send the client, and the SDK's model of its params.
CLIENT_REQUESTS: dict[str, type[BaseModel]] = {
    "session/update": SessionNotification,
    "session/request_permission": RequestPermissionRequest,
    "fs/read_text_file": ReadTextFileRequest,
    "fs/write_text_file": WriteTextFileRequest,
    "terminal/create": CreateTerminalRequest,
    "terminal/output": TerminalOutputRequest,
    "terminal/wait_for_exit": WaitForTerminalExitRequest,
    "terminal/release": ReleaseTerminalRequest,
    "terminal/kill": KillTerminalRequest,
}
#: What the agent answers the client's requests with, and the SDK's model of it.
AGENT_ANSWERS: dict[str, type[BaseModel]] = {
    "initialize": InitializeResponse,
    "session/new": NewSessionResponse,
    "session/load": LoadSessionResponse,
    "session/fork": ForkSessionResponse,
    "session/list": ListSessionsResponse,
    "session/prompt": PromptResponse,
    "session/set_mode": SetSessionModeResponse,
    "session/set_config_option": SetSessionConfigOptionResponse,
}


@asynccontextmanager
async def acp_agent(
    tmp_path: Path,
    store: Path,
    *args: str,
    log: str = "acp.log",
    editor: Editor | None = None,
    killed: bool = False,
) -> AsyncIterator[tuple[ClientSideConnection, Editor]]:
    """The agent as an editor starts it; on leaving, its exit code is 0 (unless the test
    ``killed`` it) and every message it sent is what the schema describes."""
    editor = editor or Editor()
    stderr = os.open(tmp_path / log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        async with spawn_agent_process(
            cast("Client", editor),
            *sidecar_command("acp", "--store", str(store), *args),
            env=dict(os.environ),
            transport_kwargs={"stderr": stderr},
            observers=[editor.observe],
        ) as (conn, process):
            editor.process = process
            yield conn, editor
        if not killed:
            assert process.returncode == 0, (tmp_path / log).read_text()
    finally:
        os.close(stderr)
        await editor.close()
    # every request, update and answer exactly as the schema describes it (the SDK's models
    # salvage a bad optional field by dropping it: a round trip shows that too)
    for message in editor.raw:
        method = message.get("method")
        if method is not None:
            if not method.startswith("_"):  # extensions: free-form
                _round_trips(CLIENT_REQUESTS[method], message["params"])
        elif "result" in message:
            answered = editor.requested.get(message.get("id"), "")
            if answered in AGENT_ANSWERS and message["result"] is not None:
                _round_trips(AGENT_ANSWERS[answered], message["result"])


def _round_trips(model: type[BaseModel], raw: dict[str, Any]) -> None:
    dumped = model.model_validate(raw).model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert dumped == raw, (model.__name__, raw)


async def initialize(
    conn: ClientSideConnection, capabilities: ClientCapabilities | None = None
) -> None:
    answer = await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=capabilities or ClientCapabilities(),
        client_info=Implementation(name="sdk-test", version="0"),
    )
    assert answer.protocol_version == 1
    caps = answer.agent_capabilities
    assert caps is not None and caps.load_session is True
    assert caps.prompt_capabilities is not None and caps.prompt_capabilities.embedded_context
    assert answer.auth_methods == []
    assert answer.agent_info is not None and answer.agent_info.name == "context-sidecar"


def texts(
    updates: list[Any], kind: type[AgentMessageChunk | AgentThoughtChunk | UserMessageChunk]
) -> str:
    return "".join(
        u.content.text
        for u in updates
        if isinstance(u, kind) and isinstance(u.content, TextContentBlock)
    )


def transcript(updates: list[Any]) -> list[tuple[str, str]]:
    """Updates as (kind, what), the chunks of one message (kind and ``messageId``) joined:
    a live stream (one chunk per delta) and a replay (one per stored part) compare equal."""
    out: list[tuple[str, str]] = []
    last: tuple[str, str | None] | None = None
    for u in updates:
        if isinstance(u, UserMessageChunk | AgentMessageChunk | AgentThoughtChunk):
            kind = u.session_update
            text = u.content.text if isinstance(u.content, TextContentBlock) else "?"
            assert u.message_id, u
            if last == (kind, u.message_id):
                out[-1] = (kind, out[-1][1] + text)
            else:
                out.append((kind, text))
            last = (kind, u.message_id)
            continue
        last = None
        if isinstance(u, ToolCallStart):
            out.append(("tool_call", f"{u.tool_call_id} {u.status}"))
        elif isinstance(u, ToolCallProgress):
            out.append(("tool_call_update", f"{u.tool_call_id} {u.status}"))
        elif isinstance(u, AgentPlanUpdate):
            out.append(("plan", " ".join(e.status for e in u.entries)))
    return out


class ToolEditor(Editor):
    """An editor with ``fs`` and ``terminal``: reads answer from its (unsaved) buffers first,
    writes go to disk, terminals are subprocesses; permission requests are answered from
    ``choices`` in order."""

    def __init__(self, buffers: dict[str, str], choices: list[str]) -> None:
        super().__init__()
        self.buffers = buffers
        self.choices = choices
        self.asked: list[ToolCallUpdate] = []
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.terminals: dict[str, tuple[asyncio.subprocess.Process, list[str]]] = {}
        self.created: list[CreateTerminalRequest] = []
        self.released: list[str] = []
        self.killed: list[str] = []
        self.terminal_started = asyncio.Event()

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **_: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        assert {o.kind for o in options} == {"allow_once", "allow_always", "reject_once"}
        choice = self.choices.pop(0)
        option = next(o.option_id for o in options if o.kind == choice)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option)
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **_: Any,
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        try:
            return ReadTextFileResponse(content=Path(path).read_text())
        except FileNotFoundError:
            raise RequestError.resource_not_found(path) from None

    async def write_text_file(
        self, session_id: str, path: str, content: str, **_: Any
    ) -> WriteTextFileResponse:
        self.writes.append(path)
        Path(path).write_text(content)
        self.buffers.pop(path, None)
        return WriteTextFileResponse()

    async def create_terminal(
        self, session_id: str, command: str, args: list[str] | None = None, **kwargs: Any
    ) -> CreateTerminalResponse:
        self.created.append(
            CreateTerminalRequest(session_id=session_id, command=command, args=args, **kwargs)
        )
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=kwargs.get("cwd"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = (process, [])
        self.terminal_started.set()
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> WaitForTerminalExitResponse:
        process, output = self.terminals[terminal_id]
        assert process.stdout is not None
        output.append((await process.stdout.read()).decode())
        return WaitForTerminalExitResponse(exit_code=await process.wait())

    async def terminal_output(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> TerminalOutputResponse:
        process, output = self.terminals[terminal_id]
        return TerminalOutputResponse(
            output="".join(output),
            truncated=False,
            exit_status=TerminalExitStatus(exit_code=process.returncode),
        )

    async def release_terminal(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> ReleaseTerminalResponse:
        self.released.append(terminal_id)
        return ReleaseTerminalResponse()

    async def close(self) -> None:
        # a terminal the agent never released or killed (the agent was killed mid-command)
        # is ended here, its pipes read to the end and closed: nothing outlives the test
        for process, _output in self.terminals.values():
            if process.returncode is None:
                process.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.communicate(), 10)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> KillTerminalResponse:
        self.killed.append(terminal_id)
        process, _output = self.terminals[terminal_id]
        if process.returncode is None:
            process.kill()
        return KillTerminalResponse()


def call_round(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"toolCalls": [{"name": name, "arguments": arguments, "id": call_id}]}


def tool_text(update: ToolCallProgress) -> str:
    return "".join(
        c.content.text
        for c in update.content or []
        if isinstance(c, ContentToolCallContent) and isinstance(c.content, TextContentBlock)
    )


#: A tiny MCP stdio server (the ``mcp`` SDK): ``python MCP_SERVER PID_FILE``.
MCP_SERVER = Path(__file__).resolve().parents[1] / "data" / "mcp_calc_server.py"


def is_running(pid: int) -> bool:
    """The process exists and is not a zombie (Linux: /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status
