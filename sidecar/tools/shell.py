"""run_command run by the sidecar itself: a shell command in the workspace, bounded and killable.

Used where no front end runs commands (an ACP editor without a terminal, a ``serve`` host
that turned the built-in tools on).  The command runs under ``sh -c``, with stdin closed, in a
confined working directory, with an allowlisted environment (:mod:`sidecar.tools.command_env`:
the basics, the toolchains' variables, the names the profile lists; never a secret-looking
value) that carries the call's marker.

**Its whole process tree ends with the call.**  On Linux the command runs under a small
wrapper (:mod:`sidecar.tools.command_reaper`, :data:`MECHANISM` ``"subreaper"``): a child
subreaper with a parent-death signal, which kills whatever the command left behind — a
``nohup … &``, a ``setsid`` child, a double fork — when ``sh`` exits, and the whole tree when
the sidecar dies (``kill -9`` included).  Elsewhere (``"group"``) the command runs in its own
process group, killed on timeout or cancel; a ``setsid`` child escapes it there.  Either way
the wrapper (or ``sh``) leads a new session, and on timeout or cancellation that group gets
SIGTERM, then SIGKILL :data:`GRACE_S` later: a child that ignores SIGTERM is killed too.

**Sandboxed** (``sandboxed=True``, the ``auto`` mode's commands): the command runs inside
:mod:`sidecar.tools.sandbox` (``bwrap … sh -c`` under the same wrapper on Linux,
``sandbox-exec`` on macOS): writes only in the roots and a private ``/tmp``, no network.  The
result's ``meta`` then says ``sandboxed`` and, for a failure that shows the sandbox blocked it,
``blocked`` (what it stood in the way of).

The output (stdout and stderr interleaved, as a terminal shows them) is read to its end, but
only :data:`MAX_CAPTURE` bytes are kept: its head and a rolling tail, so the real end of a
huge output is seen, and the result names the total; it is then cut to the bound keeping head
and tail, and names the exit code (or the signal that killed the command).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sidecar import beneath
from sidecar.tools.bounds import DEFAULT_BOUNDS, Bounds, fit_head_tail
from sidecar.tools.command_env import command_env
from sidecar.tools.errors import ToolError
from sidecar.tools.output import ToolOutput
from sidecar.tools.sandbox import blocked_by_sandbox, sandbox_argv

if TYPE_CHECKING:
    from collections.abc import Iterable

    from sidecar.tools.confine import Workspace

__all__ = ["DEFAULT_TIMEOUT_S", "GRACE_S", "MAX_CAPTURE", "MECHANISM", "Capture", "run_command"]

DEFAULT_TIMEOUT_S = 120.0
"""Claude Code's Bash default: two minutes."""
MAX_CAPTURE = 16 * 1024 * 1024
"""Bytes of output kept (half head, half tail); the rest is read and dropped."""
GRACE_S = 2.0
"""From SIGTERM to SIGKILL of the command's group on timeout or cancel."""
_REAPER_GRACE_S = 1.0
"""The wrapper's own grace: it must have killed the tree before the sidecar's SIGKILL."""
_REAPER = Path(__file__).with_name("command_reaper.py")

MECHANISM: Literal["subreaper", "group"] = (
    "subreaper" if sys.platform == "linux" and _REAPER.is_file() else "group"
)
"""How a command's process tree is ended (see the module)."""


class Capture:
    """A command's output as it is kept: the first half of ``limit`` bytes and a rolling last
    half, never more than ``limit`` in memory, and the total read."""

    def __init__(self, limit: int = MAX_CAPTURE) -> None:
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.total = 0

    @property
    def kept(self) -> int:
        return len(self.head) + self.tail_size

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail_size > self.tail_limit:
            extra = self.tail_size - self.tail_limit
            first = self.tail[0]
            if len(first) <= extra:
                self.tail.popleft()
                self.tail_size -= len(first)
            else:
                self.tail[0] = first[extra:]
                self.tail_size -= extra

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        tail = b"".join(self.tail).decode("utf-8", "replace")
        dropped = self.total - self.kept
        if not dropped:
            return head + tail
        return f"{head}\n[… {dropped} bytes of output were not kept …]\n{tail}"


async def run_command(
    ws: Workspace,
    command: object,
    cwd: object = None,
    *,
    timeout_s: float | None = None,
    bounds: Bounds = DEFAULT_BOUNDS,
    env_names: Iterable[str] = (),
    marker: str | None = None,
    sandboxed: bool = False,
) -> ToolOutput:
    """Run ``command`` with ``sh -c`` under ``cwd`` (a root by default) and report its output.

    ``env_names``: variables the profile lets through (:func:`command_env`); ``marker``: the
    call's ``<runId>/<callId>`` (default: this process and a random token); ``sandboxed``: in
    the sandbox (the caller checked :func:`~sidecar.tools.sandbox.sandbox_ready`)."""
    if not isinstance(command, str) or not command.strip():
        raise ToolError("tool.failed", "command must be a non-empty string")
    if "\x00" in command:
        raise ToolError("tool.failed", "command contains a NUL byte")
    where = ws.directory(cwd)
    limit = timeout_s if timeout_s and timeout_s > 0 else DEFAULT_TIMEOUT_S
    env = command_env(env_names, marker or f"{os.getpid()}/{uuid.uuid4().hex[:12]}")
    sandbox: list[str] = []
    if sandboxed:
        sandbox = sandbox_argv(ws.roots, env.get("HOME")) or []
        if not sandbox:
            raise ToolError("tool.failed", f"no sandbox on {sys.platform}")
    if MECHANISM == "subreaper":
        # -E -P: a project's PYTHONPATH, or this directory, must not shadow a stdlib module
        argv = [sys.executable, "-S", "-E", "-P", str(_REAPER)]
        argv += [str(os.getpid()), str(_REAPER_GRACE_S), command, *sandbox]
    else:
        argv = [*sandbox, "sh", "-c", command]
    try:
        dir_fd = beneath.open_dir(ws.root_of(where), where)
    except OSError as exc:
        shown = ws.display(where)
        raise ToolError("tool.failed", f"{shown} cannot be opened: {exc.strerror or exc}") from exc
    try:
        # forked from the event loop's thread, which lives as long as the process: the
        # wrapper's parent-death signal fires when the sidecar dies, not before.  It starts
        # in the directory checked, held open (the descriptor is not passed on)
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=beneath.start_dir(dir_fd, where),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError("tool.failed", f"the command could not start: {exc}") from exc
    finally:
        os.close(dir_fd)
    capture = Capture(MAX_CAPTURE)
    timed_out = False
    try:
        async with asyncio.timeout(limit):
            await _collect(proc, capture)
            await proc.wait()
    except TimeoutError:
        timed_out = True
        await _kill_group(proc)
    except BaseException:  # cancelled: the command stops with the call
        await asyncio.shield(_kill_group(proc))
        raise
    output = capture.text()  # up to MAX_CAPTURE decoded: once
    text, cut = fit_head_tail(
        output,
        bounds.max_tokens,
        "run it again with the output redirected to a file and grep it",
    )
    if timed_out:
        ending = f"[timed out after {limit:.0f} s; the command and its children were killed]"
    elif proc.returncode is not None and proc.returncode < 0:
        ending = f"[killed by signal {-proc.returncode}]"
    else:
        ending = f"[exit code {proc.returncode}]"
    if capture.total > capture.kept:
        ending = f"[{capture.total} bytes of output; the middle was not kept]\n{ending}"
    body = f"{text.rstrip()}\n{ending}" if text.strip() else ending
    meta: dict[str, object] = {
        "exitCode": proc.returncode,
        "timedOut": timed_out,
        "bytes": capture.total,
        "keptBytes": capture.kept,
    }
    if sandboxed:
        meta["sandboxed"] = True
        if not timed_out and (blocked := blocked_by_sandbox(output, proc.returncode)):
            meta["blocked"] = blocked
    return ToolOutput(text=body, truncated=cut or capture.total > capture.kept, meta=meta)


async def _collect(proc: asyncio.subprocess.Process, capture: Capture) -> None:
    assert proc.stdout is not None
    while chunk := await proc.stdout.read(65536):
        capture.add(chunk)


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            async with asyncio.timeout(wait):
                await _exited(proc)
            # the leader is gone; its group may not be: SIGKILL what is left
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except TimeoutError:
            continue


async def _exited(proc: asyncio.subprocess.Process) -> None:
    """Until the process has exited.  Not ``proc.wait()``: before Python 3.12 it also waits
    for the output pipe to close, which a process that left the group (``setsid``, without
    the wrapper) may hold open for as long as it lives."""
    while proc.returncode is None:  # noqa: ASYNC110 (asyncio offers no event for the exit alone)
        await asyncio.sleep(0.01)
