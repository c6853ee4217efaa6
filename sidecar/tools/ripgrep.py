"""One ripgrep process, read while it runs, within a deadline and a byte budget.

:func:`run_ripgrep` hands every line ripgrep prints to the caller as it arrives, and ends the
process (SIGKILL) the moment the call must stop, whatever ripgrep is doing:

- the deadline passed (:class:`~sidecar.tools.deadline.Deadline`): the reader waits on the
  pipes with ``select`` and a timeout, so a ripgrep that prints nothing (blocked opening a
  FIFO, stalled on a slow file) is still killed on time; the deadline's ``check`` then raises;
- the call was cancelled: the deadline kills ripgrep from the cancelling thread at once;
- more than ``max_bytes`` of output were read (a file that grows without end, matching as it
  grows): ripgrep is killed and the result says it was cut (:attr:`RgEnd.cut`).

While it runs the process is registered with :mod:`sidecar.children`, so it is killed too
when the sidecar exits with the call still going.  Nothing is left running on any way out.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sidecar import children
from sidecar.tools.errors import ToolError

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from sidecar.tools.deadline import Deadline

__all__ = ["RgEnd", "run_ripgrep"]

_CHUNK = 1 << 16
_MAX_STDERR = 1 << 16
#: How often the reader looks at the clock when ripgrep is silent (a cancel kills it sooner).
_POLL_S = 0.2


@dataclass(frozen=True, slots=True)
class RgEnd:
    """How ripgrep ended."""

    returncode: int | None
    stderr: bytes
    read: int
    """Bytes of output read."""
    cut: bool
    """Killed after ``max_bytes`` of output: what was read is all there is."""


def run_ripgrep(
    args: list[str],
    cwd: Path | str,
    env: dict[str, str],
    *,
    on_line: Callable[[bytes], None],
    deadline: Deadline,
    max_bytes: int,
    pass_fds: tuple[int, ...] = (),
) -> RgEnd:
    """Run ``args``, passing each line of its stdout to ``on_line``; raises
    :class:`~sidecar.tools.deadline.DeadlinePassed` when the deadline stops it."""
    try:
        process = subprocess.Popen(
            args,
            cwd=cwd,
            pass_fds=pass_fds,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
    except OSError as exc:
        raise ToolError("tool.failed", f"ripgrep could not start: {exc}") from exc
    children.started(process)
    forget = deadline.on_stop(process.kill)  # a cancel ends it now, not at the next poll
    try:
        return _read(process, on_line, deadline, max_bytes)
    finally:
        forget()
        if process.poll() is None:
            with contextlib.suppress(OSError):
                process.kill()
        process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        children.ended(process)


def _read(
    process: subprocess.Popen[bytes],
    on_line: Callable[[bytes], None],
    deadline: Deadline,
    max_bytes: int,
) -> RgEnd:
    assert process.stdout is not None and process.stderr is not None
    out_fd, err_fd = process.stdout.fileno(), process.stderr.fileno()
    open_fds = [out_fd, err_fd]
    pending = b""
    err = bytearray()
    read = 0
    while open_fds:
        deadline.check()
        ready, _, _ = select.select(open_fds, [], [], min(_POLL_S, deadline.remaining()))
        for fd in ready:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                open_fds.remove(fd)
            elif fd == err_fd:
                err += chunk[: max(0, _MAX_STDERR - len(err))]
            else:
                read += len(chunk)
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    deadline.check()
                    if line:
                        on_line(line)
                if read >= max_bytes:
                    process.kill()
                    return RgEnd(None, bytes(err), read, cut=True)
    deadline.check()  # a cancel killed it: what it printed is not all there is
    if pending:
        on_line(pending)
    return RgEnd(process.wait(), bytes(err), read, cut=False)
