"""run_command run by the sidecar itself: a shell command in the workspace, bounded and killable.

Used where no front end runs commands (an ACP editor without a terminal, a ``serve`` host
that turned the built-in tools on).  The command runs under ``sh -c`` in its own process group
(``start_new_session``), with stdin closed, in a confined working directory, with the
sidecar's environment minus anything that looks like a secret (names containing KEY, TOKEN,
SECRET, PASSWORD, PASSWD, CREDENTIAL, AUTH or BEARER, :func:`sidecar.redact.secret_name`: a
provider key the sidecar was started with never reaches a command the model wrote).  On
timeout or cancellation the whole group gets SIGTERM, then SIGKILL a moment later: a
``sleep`` a test spawned does not outlive the call.  The output (stdout and stderr
interleaved, as a terminal shows them) keeps its head and tail within the bound, and the
result names the exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import TYPE_CHECKING

from sidecar.redact import secret_name
from sidecar.tools.bounds import DEFAULT_BOUNDS, Bounds, fit_head_tail
from sidecar.tools.errors import ToolError
from sidecar.tools.output import ToolOutput

if TYPE_CHECKING:
    from sidecar.tools.confine import Workspace

__all__ = ["DEFAULT_TIMEOUT_S", "run_command", "scrubbed_env"]

DEFAULT_TIMEOUT_S = 120.0
"""Claude Code's Bash default: two minutes."""
_MAX_CAPTURE = 16 * 1024 * 1024  # read at most this much; the rest is drained and dropped
_GRACE_S = 2.0


def scrubbed_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) without the variables that may hold secrets."""
    source = os.environ if env is None else env
    return {k: v for k, v in source.items() if not secret_name(k)}


async def run_command(
    ws: Workspace,
    command: object,
    cwd: object = None,
    *,
    timeout_s: float | None = None,
    bounds: Bounds = DEFAULT_BOUNDS,
) -> ToolOutput:
    """Run ``command`` with ``sh -c`` under ``cwd`` (a root by default) and report its output."""
    if not isinstance(command, str) or not command.strip():
        raise ToolError("tool.failed", "command must be a non-empty string")
    if "\x00" in command:
        raise ToolError("tool.failed", "command contains a NUL byte")
    where = ws.directory(cwd)
    limit = timeout_s if timeout_s and timeout_s > 0 else DEFAULT_TIMEOUT_S
    try:
        proc = await asyncio.create_subprocess_exec(
            "sh",
            "-c",
            command,
            cwd=where,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=scrubbed_env(),
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError("tool.failed", f"the command could not start: {exc}") from exc
    chunks: list[bytes] = []
    timed_out = False
    try:
        async with asyncio.timeout(limit):
            await _collect(proc, chunks)
            await proc.wait()
    except TimeoutError:
        timed_out = True
        await _kill_group(proc)
    except BaseException:  # cancelled: the command stops with the call
        await asyncio.shield(_kill_group(proc))
        raise
    raw = b"".join(chunks).decode("utf-8", "replace")
    text, cut = fit_head_tail(
        raw, bounds.max_tokens, "run it again with the output redirected to a file and grep it"
    )
    if timed_out:
        ending = f"[timed out after {limit:.0f} s; the command and its children were killed]"
    elif proc.returncode is not None and proc.returncode < 0:
        ending = f"[killed by signal {-proc.returncode}]"
    else:
        ending = f"[exit code {proc.returncode}]"
    body = f"{text.rstrip()}\n{ending}" if text.strip() else ending
    return ToolOutput(
        text=body,
        truncated=cut,
        meta={"exitCode": proc.returncode, "timedOut": timed_out, "bytes": len(raw)},
    )


async def _collect(proc: asyncio.subprocess.Process, chunks: list[bytes]) -> None:
    assert proc.stdout is not None
    kept = 0
    while True:
        chunk = await proc.stdout.read(65536)
        if not chunk:
            return
        if kept < _MAX_CAPTURE:
            chunks.append(chunk)
            kept += len(chunk)


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    for sig, wait in ((signal.SIGTERM, _GRACE_S), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            async with asyncio.timeout(wait):
                await proc.wait()
            # the leader is gone; its group may not be: SIGKILL what is left
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except TimeoutError:
            continue
