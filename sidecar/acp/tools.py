"""The coding tools an ACP session offers the model, run through the editor.

Four tools, offered to every run of an ACP session (``tools`` of the run, executed by the
run bridge when the loop sends ``tool/execute``; nothing here is known to ``sidecar/runs``):

- ``read_file {path, offset?, limit?}``: ``fs/read_text_file`` when the client advertises
  ``fs.readTextFile`` (the editor answers from its buffer: unsaved changes are seen), else
  the file on disk; shaped as :func:`sidecar.tools.number_lines` shapes every read.
- ``write_file {path, content}``, ``edit_file {path, old_text, new_text, replace_all?}`` or
  ``edit_file {path, edits: [{old_text, new_text, replace_all?}, ...]}`` (the core's
  :func:`sidecar.tools.edit.edited_text` on the file as the editor has it: each ``old_text``
  must occur once, unless ``replace_all``; all or nothing): ``fs/write_text_file`` when the
  client advertises ``fs.writeTextFile``, else the disk.  The ``tool_call_update`` shows a
  ``diff`` (old text read as ``read_file`` reads it) and points at the first changed line.
- ``list_dir {path?, depth?}``, ``glob {pattern, path?}``, ``grep {pattern, path?, glob?,
  ignore_case?, context?, mode?}``: run by the sidecar (:mod:`sidecar.tools`), confined to
  the roots, ``.gitignore`` respected, results bounded; read-only, never asked.
- ``run_command {command, cwd?}``: in the editor's terminal (:mod:`sidecar.acp.terminal`)
  when the client advertises ``terminal``; otherwise the sidecar runs it itself
  (:func:`sidecar.tools.run_command`: same roots, same approval, its whole process tree
  ended with the call, its environment an allowlist plus the profile's ``builtinTools.env``),
  so a client without a terminal
  still gets a shell after permission.  In ``auto`` the sidecar runs it in the sandbox
  (:mod:`sidecar.tools.sandbox`; no terminal, which no sandbox wraps), and asks to run it
  again outside when the sandbox blocked it.

Writes and commands go through the core's approval step (the run's ``approvalRequired``):
the bridge's ``approval/request`` is decided by the session's approval mode, and asked with
``session/request_permission`` where the mode says so (:mod:`sidecar.acp.approvals`).  Every
path is confined to the session's
roots (symlinks followed): one outside is refused before anything is asked or touched, and
the model reads why.  What the editor is sent (``fs/*`` paths, diffs, locations, a
terminal's working directory) is the resolved path the check passed, never the path as the
model wrote it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.lowlevel
import anyio.to_thread
from acp import RequestError
from acp.schema import (
    ClientCapabilities,
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallUpdate,
)

from sidecar.acp.mapping import SessionUpdate, tool_kind, tool_title
from sidecar.acp.terminal import run_in_terminal
from sidecar.acp.tool_results import (
    Refused,
    Target,
    changed_at,
    diff,
    read_disk,
    result,
    text_content,
    write_disk,
)
from sidecar.paths import file_kind
from sidecar.tools import (
    ToolError,
    Workspace,
    number_lines,
    run_command,
)
from sidecar.tools.catalog import (
    DEFINITIONS,
    EDIT_FILE,
    GLOB,
    GREP,
    LIST_DIR,
    READ_FILE,
    RECALL,
    RUN_COMMAND,
    WRITE_FILE,
)
from sidecar.tools.edit import edited_text, edits_of
from sidecar.tools.host import BuiltinTools
from sidecar.tools.presentation import fenced, language_of
from sidecar.tools.recall import recall

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from acp.core import AgentSideConnection

    from sidecar.acp.approvals import Approvals, Effect
    from sidecar.store import Store

__all__ = [
    "READ_FILE",
    "RUN_COMMAND",
    "TOOL_TIMEOUT_MS",
    "EDIT_FILE",
    "WRITE_FILE",
    "EditorTools",
    "InTurn",
    "ShownContent",
]

logger = logging.getLogger(__name__)

_WRITES = (WRITE_FILE, EDIT_FILE)
#: How many matched files a grep's update points at.
_MATCHED_FILES = 10
#: Run by the sidecar itself (sidecar.tools), confined to the roots; read-only: never asked.
_LOOKS = (LIST_DIR, GLOB, GREP, RECALL)
#: A person answers a permission request and a command may build a project: the run waits
#: this long for either (the core's default, one minute, is for programs).
TOOL_TIMEOUT_MS = 600_000

ShownContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent


@dataclass(slots=True)
class InTurn:
    """An update to send in the order of the run's events (``None``: only wait until every
    event before it has been sent).  ``sent`` is set once it is on the wire."""

    update: SessionUpdate | None
    sent: asyncio.Event = field(default_factory=asyncio.Event)


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


class EditorTools:
    """The tool host of an ACP connection: what the run bridge asks to approve and execute.

    ``client`` and ``capabilities`` are set as the connection learns them (``on_connect``,
    ``initialize``); ``send_in_turn(session_id, InTurn)`` queues an update behind the run's
    events and returns once it is sent; ``session_of(run_id)`` names a run's session."""

    def __init__(
        self,
        store: Store,
        approvals: Approvals,
        send_in_turn: Callable[[str, InTurn], Awaitable[None]],
        session_of: Callable[[str], str],
    ) -> None:
        self.store = store
        self.approvals = approvals
        self.client: AgentSideConnection | None = None
        self.capabilities: ClientCapabilities | None = None
        self._send_in_turn = send_in_turn
        self._session_of = session_of
        self._shown: dict[str, list[ShownContent]] = {}
        """Per call: what the final ``tool_call_update`` shows instead of the result text."""
        self._sandboxed: set[str] = set()
        """Calls approved to run in the sandbox (``auto``): run here, never in a terminal."""
        self.env_of: Callable[[str], tuple[str, ...]] = lambda session_id: ()
        """The variables a session's profile lets through to a command run here
        (``builtinTools.env``; set by the agent)."""

    # --- what is offered -----------------------------------------------------------------

    def _can(self, what: Literal["read", "write", "terminal"]) -> bool:
        caps = self.capabilities
        if caps is None or self.client is None:
            return False
        if what == "terminal":
            return bool(caps.terminal)
        fs = caps.fs
        return bool(fs and (fs.read_text_file if what == "read" else fs.write_text_file))

    def names(self) -> list[str]:
        # run_command is offered to every client: in the editor's terminal when it has one,
        # else run by the sidecar (same confinement, same approval).
        return [READ_FILE, LIST_DIR, GLOB, GREP, WRITE_FILE, EDIT_FILE, RUN_COMMAND, RECALL]

    def offers(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def run_settings(self, allowed: frozenset[str] | None = None) -> dict[str, Any]:
        """What a run of this connection's sessions starts with (``run/start`` wire fields);
        ``allowed``: the tools a profile narrows them to."""
        names = [n for n in self.names() if allowed is None or n in allowed]
        return {
            "tools": [DEFINITIONS[n] for n in names],
            "approvalRequired": [n for n in names if n != READ_FILE and n not in _LOOKS],
            "toolTimeoutMs": TOOL_TIMEOUT_MS,
        }

    def shown(self, call_id: str) -> list[ShownContent] | None:
        """What the call's final update shows (once): ``None`` for the stored result as text;
        an empty list for "leave the content as it is" (a terminal: clients keep showing a
        released terminal's output, and a new reference to it may not resolve)."""
        return self._shown.pop(call_id, None)

    # --- paths -----------------------------------------------------------------------------

    def _roots(self, session_id: str) -> list[str]:
        return list(self.store.sessions.get(session_id).workspace_roots)

    def _workspace(self, session_id: str, roots: list[str] | None = None) -> Workspace:
        roots = self._roots(session_id) if roots is None else roots
        if not roots:
            raise Refused("this session has no workspace root")
        return Workspace.of(roots)

    def _target(self, session_id: str, raw: object, what: str = "path") -> Target:
        if not isinstance(raw, str) or not raw:
            raise Refused(f"the {what!r} argument must be a non-empty string")
        roots = self._roots(session_id)
        workspace = self._workspace(session_id, roots)
        try:
            real = workspace.resolve(raw, what=what)
        except ToolError as exc:
            if exc.code == "tool.path_outside_roots":
                raise Refused(
                    f"refused: {raw} is outside the session's roots ({', '.join(roots)})"
                ) from None
            raise Refused(f"refused: {exc}") from None
        # The editor is sent the path the check passed: ``sub/../x`` normalised lexically
        # is not where ``sub`` (a symlink) leads, and may be outside the roots.
        return Target(str(real), real, workspace.root_of(real))

    def _file(self, session_id: str, raw: object) -> Target:
        """A target that is a regular file or absent: a FIFO, socket or device is refused
        before anything opens it (a write to a FIFO would block the session)."""
        target = self._target(session_id, raw)
        try:
            mode = os.lstat(target.real).st_mode
        except FileNotFoundError:
            return target
        except OSError as exc:
            raise Refused(f"{target.shown}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(mode):
            raise Refused(f"refused: {target.shown} is {file_kind(mode)}, not a regular file")
        return target

    # --- approval ------------------------------------------------------------------------

    async def approve(self, params: dict[str, Any]) -> dict[str, Any]:
        """``approval/request`` → ``session/request_permission`` (asked only of a call that
        could run: a path outside the roots is refused without asking)."""
        name, call_id = str(params["name"]), str(params["callId"])
        arguments: dict[str, Any] = params.get("arguments") or {}
        if name not in (*_WRITES, RUN_COMMAND):
            return {"approved": True}  # reads are not asked about
        session_id = self._session_of(str(params["runId"]))
        try:
            shown, locations = await self._preview(session_id, name, arguments)
        except Refused as exc:
            return {"approved": False, "reason": str(exc)}
        call = ToolCallUpdate(
            tool_call_id=call_id,
            title=tool_title(name, arguments),
            kind=tool_kind(name),
            status="pending",
            content=shown,
            locations=locations,
            raw_input=arguments,
        )
        effect: Effect = "edit" if name in _WRITES else "execute"
        answer = await self.approvals.decide(session_id, name, effect, call, arguments)
        if answer.get("sandboxed") is True:
            self._sandboxed.add(call_id)
        return answer

    async def _preview(
        self, session_id: str, name: str, arguments: dict[str, Any]
    ) -> tuple[list[ShownContent], list[ToolCallLocation] | None]:
        """What the permission request shows and points at (and checks the call can run at
        all)."""
        if name in _WRITES:
            target, old_text, new_text, _ = await self._change(session_id, name, arguments)
            return [diff(target, old_text, new_text)], changed_at(target, old_text, new_text)
        command = arguments.get("command")
        if not isinstance(command, str) or not command.strip():
            raise Refused("the 'command' argument must be a non-empty string")
        if "\x00" in command:
            raise Refused("refused: the command contains a NUL byte")
        self._cwd(session_id, arguments)
        return [text_content(fenced(command, "sh"))], None

    def _cwd(self, session_id: str, arguments: dict[str, Any]) -> Target:
        cwd = arguments.get("cwd")
        roots = self._roots(session_id)
        return self._target(session_id, roots[0] if cwd is None and roots else cwd, "cwd")

    # --- execution -----------------------------------------------------------------------

    async def execute(self, params: dict[str, Any]) -> dict[str, Any]:
        """``tool/execute``: a ``ToolExecuteResult`` (wire JSON); a refusal, an editor's
        error or an unreadable file is an error result the model reads."""
        name, call_id = str(params["name"]), str(params["callId"])
        arguments: dict[str, Any] = params.get("arguments") or {}
        session_id = self._session_of(str(params["runId"]))
        try:
            if name == READ_FILE:
                return await self._read(session_id, call_id, arguments)
            if name in _LOOKS:
                return await self._look(session_id, call_id, name, arguments)
            if name in _WRITES:
                return await self._write(session_id, call_id, name, arguments)
            return await self._run(session_id, call_id, arguments, str(params["runId"]))
        except Refused as exc:
            self._forget(call_id)
            return result(str(exc), error=True)
        except RequestError as exc:
            self._forget(call_id)
            return result(f"the editor answered an error: {exc}", error=True)
        except BaseException:  # cancelled: no final update will ask for it
            self._forget(call_id)
            raise

    async def _look(
        self, session_id: str, call_id: str, name: str, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        """list_dir / glob / grep, run by the sidecar in a worker thread; a grep's update
        points at the files it matched (the first few, at their first match)."""
        workspace = self._workspace(session_id)
        try:
            if name == RECALL:  # a masked result of this session, by its ledger id
                item = arguments.get("id")
                out = await anyio.to_thread.run_sync(lambda: recall(self.store, session_id, item))
            else:
                out = (await BuiltinTools(workspace).run(name, arguments)).output
        except ToolError as exc:
            if exc.code == "tool.path_outside_roots":
                roots = ", ".join(self._roots(session_id))
                raise Refused(f"refused: {exc} (the session's roots: {roots})") from None
            raise Refused(str(exc)) from None
        if name == GREP and out.locations:
            found = [ToolCallLocation(path=p, line=n) for p, n in out.locations[:_MATCHED_FILES]]
            await self._progress(session_id, call_id, None, found)
        return result(out.text)

    async def _read(
        self, session_id: str, call_id: str, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        """The file as the editor has it (else the disk), as ``sidecar.tools`` shapes a read:
        numbered lines, a window from ``offset`` (``line`` is its older name), bounded in
        tokens, the last line saying which offset reads on.  The editor is shown the same
        text fenced as code (in the file's language); the model reads it plain."""
        target = self._file(session_id, arguments.get("path"))
        start = _positive(arguments.get("offset")) or _positive(arguments.get("line"))
        limit = _positive(arguments.get("limit"))
        if self._can("read"):
            assert self.client is not None
            answer = await self.client.read_text_file(session_id=session_id, path=target.shown)
            text = answer.content
        else:
            text = await read_disk(target)
        try:
            window = await anyio.to_thread.run_sync(
                lambda: number_lines(text, target.shown, offset=start, limit=limit)
            )
        except ToolError as exc:
            raise Refused(str(exc)) from None
        self._shown[call_id] = [text_content(fenced(window.text, language_of(target.shown)))]
        return result(window.text)

    async def _old_text(self, session_id: str, target: Target) -> str | None:
        """The file as the editor has it before a write (``None``: it does not exist)."""
        if self._can("read"):
            assert self.client is not None
            try:
                answer = await self.client.read_text_file(session_id=session_id, path=target.shown)
            except RequestError:
                return None  # no such file (clients answer "not found" differently)
            return answer.content
        try:
            return await read_disk(target)
        except Refused:
            return None

    async def _change(
        self, session_id: str, name: str, arguments: dict[str, Any]
    ) -> tuple[Target, str | None, str, str]:
        """What a write or an edit makes of the file as the editor has it: the target, its
        old text (``None``: no such file), its new text, and what to tell the model."""
        target = self._file(session_id, arguments.get("path"))
        old_text = await self._old_text(session_id, target)
        if name == WRITE_FILE:
            content = arguments.get("content")
            if not isinstance(content, str):
                raise Refused("the 'content' argument must be a string")
            return (
                target,
                old_text,
                content,
                f"wrote {len(content.encode())} bytes to {target.shown}",
            )
        if old_text is None:
            raise Refused(f"{target.shown} does not exist (write_file creates a file)")
        try:  # all or nothing: one edit that does not match exactly changes nothing
            edits = edits_of(arguments)
            new_text = edited_text(old_text, target.shown, edits)
        except ToolError as exc:
            raise Refused(str(exc)) from None
        done = f"edited {target.shown}: {len(edits)} edit(s) applied"
        return target, old_text, new_text, done

    async def _write(
        self, session_id: str, call_id: str, name: str, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        target, old_text, content, done = await self._change(session_id, name, arguments)
        shown = diff(target, old_text, content)
        self._shown[call_id] = [shown]
        await self._progress(session_id, call_id, [shown], changed_at(target, old_text, content))
        if self._can("write"):
            assert self.client is not None
            await self.client.write_text_file(
                session_id=session_id, path=target.shown, content=content
            )
        else:
            await anyio.to_thread.run_sync(lambda: write_disk(target, content))
        return result(done)

    def _forget(self, call_id: str) -> None:
        """What was kept for a call that ends without its final update."""
        self._shown.pop(call_id, None)
        self._sandboxed.discard(call_id)

    async def _run(
        self, session_id: str, call_id: str, arguments: dict[str, Any], run_id: str
    ) -> dict[str, Any]:
        command = arguments.get("command")
        if not isinstance(command, str) or not command.strip():
            raise Refused("the 'command' argument must be a non-empty string")
        cwd = self._cwd(session_id, arguments)
        if call_id in self._sandboxed:  # auto: in the sandbox; asked to leave it if blocked
            self._sandboxed.discard(call_id)
            done, blocked = await self._run_here(session_id, run_id, call_id, command, cwd, True)
            call = ToolCallUpdate(tool_call_id=call_id, title=tool_title(RUN_COMMAND, arguments))
            if not blocked:
                return done
            answer = await self.approvals.leave_sandbox(session_id, RUN_COMMAND, call, blocked)
            if answer.get("approved") is not True:
                return done
        if not self._can("terminal"):
            return (await self._run_here(session_id, run_id, call_id, command, cwd))[0]
        assert self.client is not None

        async def show(terminal: TerminalToolCallContent) -> None:
            await self._progress(session_id, call_id, [terminal])
            self._shown[call_id] = []

        return await run_in_terminal(self.client, session_id, command, cwd.shown, show)

    async def _run_here(
        self,
        session_id: str,
        run_id: str,
        call_id: str,
        command: str,
        cwd: Target,
        sandboxed: bool = False,
    ) -> tuple[dict[str, Any], str | None]:
        """A command for a client without a terminal, or in the sandbox: run by the sidecar
        (sidecar.tools, as a ``serve`` run's: its process tree ended with the call, the
        environment an allowlist with the profile's ``builtinTools.env``, the ``runId/callId``
        marker); the editor is shown its output fenced (there is no terminal to show).  With
        the result: what the sandbox blocked, if it did."""
        try:
            out = await run_command(
                self._workspace(session_id),
                command,
                str(cwd.real),
                env_names=self.env_of(session_id),
                marker=f"{run_id}/{call_id}",
                sandboxed=sandboxed,
            )
        except ToolError as exc:
            raise Refused(str(exc)) from None
        self._shown[call_id] = [text_content(fenced(out.text))]
        blocked = out.meta.get("blocked")
        return result(out.text, error=out.meta.get("exitCode") != 0), blocked

    async def _progress(
        self,
        session_id: str,
        call_id: str,
        content: list[ShownContent] | None,
        locations: list[ToolCallLocation] | None = None,
    ) -> None:
        update = ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=call_id,
            status="in_progress",
            content=None if content is None else list(content),
            locations=locations,
        )
        await self._send_in_turn(session_id, InTurn(update))
