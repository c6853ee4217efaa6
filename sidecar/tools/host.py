"""The built-in tools called by name, with the arguments a model sends (wire JSON).

:class:`BuiltinTools` is what a run executes a built-in call with: the arguments are checked
and mapped onto the functions of this package, file-system work runs in a worker thread
(nothing blocks the event loop), and every answer is a :class:`Ran` (the bounded text the
model reads, plus what a front end shows: a diff, an exit code, locations).  A call that
cannot do what it was asked raises :class:`~sidecar.tools.errors.ToolError`, whose message is
what the model reads.

Every look-around call (read, list, glob, grep) ends within its time and is cancellable,
whatever the files are: it gets one :class:`~sidecar.tools.deadline.Deadline` (the run's tool
timeout capped by :data:`~sidecar.tools.deadline.LOOK_LIMIT_S`), which its worker thread
checks as it goes.  The thread is abandoned when the call is cancelled (``run/cancel``, the
client gone), and the deadline is cancelled with it, so the thread stops at its next check
and a ripgrep it started is killed: nothing waits for a thread stuck in a read.  Should the
thread not come back a moment after the limit anyway (a system call no check can interrupt),
the call answers ``tool.timeout`` without it.  Writes and edits are not abandoned: a write
half done and reported as not done would be worse than a late answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from sidecar.tools.bounds import DEFAULT_BOUNDS, Bounds
from sidecar.tools.catalog import (
    BUILTIN_NAMES,
    EDIT_FILE,
    GLOB,
    GREP,
    LIST_DIR,
    READ_FILE,
    RUN_COMMAND,
    WRITE_FILE,
)
from sidecar.tools.deadline import LOOK_LIMIT_S, Deadline
from sidecar.tools.edit import Change, apply_edits, commit, edits_of, plan_write
from sidecar.tools.errors import ToolError
from sidecar.tools.grep import grep
from sidecar.tools.listing import glob_files, list_dir
from sidecar.tools.output import ToolOutput
from sidecar.tools.read import read_file
from sidecar.tools.shell import run_command

if TYPE_CHECKING:
    from collections.abc import Callable

    from sidecar.tools.confine import Workspace

__all__ = ["BuiltinTools", "Preview", "Ran"]

#: How long after its deadline a look-around call's thread may take to notice it, before the
#: call answers without it.
STRAGGLER_GRACE_S = 1.0


@dataclass(frozen=True, slots=True)
class Preview:
    """What an approval shows before a write or a command runs."""

    change: Change | None = None
    command: str | None = None
    cwd: str | None = None


@dataclass(frozen=True, slots=True)
class Ran:
    output: ToolOutput
    change: Change | None = None
    """For a write or an edit: the file before and after."""


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class BuiltinTools:
    """The built-in tools over one workspace, within ``bounds``."""

    def __init__(
        self,
        workspace: Workspace,
        bounds: Bounds = DEFAULT_BOUNDS,
        env_names: tuple[str, ...] = (),
    ) -> None:
        self.workspace = workspace
        self.bounds = bounds
        self.env_names = env_names
        """What ``run_command`` passes on besides its allowlist (``builtinTools.env``)."""

    @staticmethod
    def offers(name: object) -> bool:
        return isinstance(name, str) and name in BUILTIN_NAMES

    async def preview(self, name: str, arguments: dict[str, Any]) -> Preview:
        """What ``name`` would do (nothing done); raises :class:`ToolError` when it could not
        run at all, so nobody is asked about a call that would fail."""
        ws = self.workspace
        if name == WRITE_FILE:
            content = arguments.get("content")
            path = arguments.get("path")
            return Preview(change=await anyio.to_thread.run_sync(plan_write, ws, path, content))
        if name == EDIT_FILE:
            edits = edits_of(arguments)
            path = arguments.get("path")
            return Preview(change=await anyio.to_thread.run_sync(apply_edits, ws, path, edits))
        if name == RUN_COMMAND:
            command = arguments.get("command")
            if not isinstance(command, str) or not command.strip():
                raise ToolError("tool.failed", "command must be a non-empty string")
            if "\x00" in command:
                raise ToolError("tool.failed", "command contains a NUL byte")
            cwd = ws.directory(arguments.get("cwd"))
            return Preview(command=command, cwd=ws.display(cwd))
        return Preview()

    async def run(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        timeout_s: float | None = None,
        marker: str | None = None,
        sandboxed: bool = False,
    ) -> Ran:
        """Run one call; ``marker``: the ``<runId>/<callId>`` a command's processes carry;
        ``sandboxed``: a command runs in the sandbox (:mod:`sidecar.tools.sandbox`)."""
        ws, bounds, a = self.workspace, self.bounds, arguments
        if name == RUN_COMMAND:
            out = await run_command(
                ws,
                a.get("command"),
                a.get("cwd"),
                timeout_s=timeout_s,
                bounds=bounds,
                env_names=self.env_names,
                marker=marker,
                sandboxed=sandboxed,
            )
            return Ran(out)
        if name in (WRITE_FILE, EDIT_FILE):
            # Worked out again: the file may have changed while the user was asked.
            change = (await self.preview(name, a)).change
            assert change is not None
            return Ran(await anyio.to_thread.run_sync(commit, change), change)
        if name in (READ_FILE, LIST_DIR, GLOB, GREP):
            deadline = Deadline.of_call(timeout_s, LOOK_LIMIT_S)
            return Ran(await _within(name, self._look(name, a), deadline))
        raise ToolError("tool.failed", f"{name!r} is not a built-in tool")

    def _look(self, name: str, a: dict[str, Any]) -> Callable[[Deadline], ToolOutput]:
        """The worker-thread half of a look-around call."""
        ws, bounds = self.workspace, self.bounds
        if name == READ_FILE:
            offset = _positive(a.get("offset"))
            limit = _positive(a.get("limit"))
            return lambda _: read_file(ws, a.get("path"), offset=offset, limit=limit, bounds=bounds)
        if name == LIST_DIR:
            depth = _positive(a.get("depth"))
            return lambda d: list_dir(ws, a.get("path"), depth=depth, bounds=bounds, deadline=d)
        if name == GLOB:
            return lambda d: glob_files(
                ws, a.get("pattern"), a.get("path"), bounds=bounds, deadline=d
            )
        mode = a.get("mode") if a.get("mode") in ("content", "files", "count") else "content"
        context = _positive(a.get("context")) or 0
        return lambda d: grep(
            ws,
            a.get("pattern"),
            a.get("path"),
            glob=_text(a.get("glob")),
            ignore_case=a.get("ignore_case") is True,
            context=context,
            mode=mode,  # type: ignore[arg-type]
            bounds=bounds,
            deadline=d,
        )


async def _within(
    name: str, work: Callable[[Deadline], ToolOutput], deadline: Deadline
) -> ToolOutput:
    """``work(deadline)`` in a worker thread, abandoned (and its deadline cancelled) when the
    call is cancelled or its thread overstays the deadline."""
    try:
        with anyio.move_on_after(deadline.remaining() + STRAGGLER_GRACE_S):
            return await anyio.to_thread.run_sync(work, deadline, abandon_on_cancel=True)
    except BaseException:
        deadline.cancel()  # the abandoned thread stops at its next check; ripgrep is killed
        raise
    deadline.cancel()
    raise ToolError(
        "tool.timeout",
        f"{name} did not finish within its time limit of {deadline.limit_s:g} s"
        f" ({deadline.why}); narrow it: a smaller path=, glob= or pattern",
    )
