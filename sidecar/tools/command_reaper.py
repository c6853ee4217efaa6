"""The wrapper a command runs under on Linux: it ends the command's whole process tree.

Run as a script (``python -S command_reaper.py <parent pid> <grace s> <command> [<sandbox
argv>…]``, never
imported by the sidecar: standard library only, so it starts in a few milliseconds).  It

1. makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``): a descendant whose
   parent exits — a ``nohup … &``, a ``setsid`` child, a double fork — is reparented to it,
   not to init, so the tree cannot slip away from it;
2. asks for SIGTERM when the sidecar dies (``prctl(PR_SET_PDEATHSIG)``), and checks its
   parent right after, since the sidecar may have died before the call: a ``kill -9`` of the
   sidecar still reaches the command;
3. runs ``sh -c <command>`` (after the sandbox's argv when one is given:
   ``bwrap … -- sh -c <command>``, :mod:`sidecar.tools.sandbox`) with its own stdout and
   stderr (the sidecar's pipe) and its environment, and waits, reaping whatever is reparented to it;
4. when ``sh`` exits, kills every process left below it (SIGKILL, read from
   ``/proc/<pid>/task/*/children``, again until none is left) and exits as ``sh`` did (the
   same code, or killed by the same signal);
5. on SIGTERM, SIGINT or SIGHUP (a timeout, a cancel, the sidecar's death): SIGTERM to every
   process of the tree, ``grace`` seconds for them to go, then SIGKILL to what is left, and
   exits killed by that signal.

It writes nothing to stdout (the command's output goes there); a failure to start says so on
stderr, which the sidecar reads with the output.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

__all__ = ["descendants", "main"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _Stop(Exception):
    """Raised by the signal handler: out of the blocking wait, into the teardown."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_stopped: list[int] = []


def _on_signal(signum: int, _frame: object) -> None:
    # only the first one: a second signal must not break off the teardown of the first
    if not _stopped:
        _stopped.append(signum)
        raise _Stop(signum)


def _prctl(option: int, value: int) -> bool:
    """Whether the kernel took it (a seccomp filter may refuse: the sidecar's process-group
    kill is then what is left)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found += [int(p) for p in f.read().split()]
        except OSError:
            continue
    return found


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` now, parents before their children."""
    out: list[int] = []
    todo = _children(pid)
    while todo:
        child = todo.pop(0)
        out.append(child)
        todo += _children(child)
    return out


def _signal_tree(sig: int) -> None:
    for pid in descendants(os.getpid()):
        try:  # noqa: SIM105 (no contextlib: every import delays the command's start)
            os.kill(pid, sig)
        except OSError:
            pass


def _reap() -> bool:
    """Reap every exited child; whether any child (running or not) is left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def _kill_all() -> None:
    """SIGKILL the tree until nothing is left below this process.  Having no child at all
    means having no descendant: a subreaper gets an orphan before its parent can be reaped."""
    while True:
        _signal_tree(signal.SIGKILL)
        if not _reap():
            return
        time.sleep(0.005)


def _wait_for(shell: int) -> int:
    """Reap children (orphans included) until ``shell`` exits; its wait status."""
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == shell:
            return status


def _end_like(status: int) -> None:
    """Exit as ``sh`` did: with its code, or killed by its signal (so the sidecar's
    ``returncode`` reads the same as without the wrapper)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:  # noqa: SIM105 (as above)
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL cannot be handled: it is at its default
            pass
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def main(argv: list[str]) -> None:
    parent, grace, command, sandbox = int(argv[0]), float(argv[1]), argv[2], argv[3:]
    for sig in _STOPS:
        signal.signal(sig, _on_signal)
    try:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the sidecar died before the signal was asked for
            raise _Stop(signal.SIGTERM)
        shell_argv = [*sandbox, "sh", "-c", command]
        shell = os.posix_spawnp(
            shell_argv[0],
            shell_argv,
            os.environ,
            # Python ignores these; a command expects them at their defaults
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, *_STOPS),
        )
        status = _wait_for(shell)
        _stopped.append(0)  # sh is gone: a signal from now on changes nothing
    except _Stop as stop:
        _signal_tree(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while _reap() and time.monotonic() < deadline:
            time.sleep(0.01)
        _kill_all()
        status = stop.signum  # a wait status "killed by signum"
    except OSError as exc:
        sys.stderr.write(f"the command could not start: {exc}\n")
        os._exit(127)
    _kill_all()
    _end_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
