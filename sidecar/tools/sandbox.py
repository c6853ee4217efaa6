"""The sandbox a command runs in when the approval mode lets it run without asking (``auto``).

What it allows, on each platform (``docs/guide/tools.md`` "Sandbox" puts it beside Codex's and
Claude Code's):

- **writes** only in the session's workspace roots and a private ``/tmp``; the rest of the file
  system is read-only (reads are not limited: a command may read ``~/.ssh``, as under Codex's
  and Claude Code's defaults — the environment, not the disk, is where secrets are scrubbed:
  :mod:`sidecar.tools.command_env`);
- **no network**: not the internet, not the host's loopback (a server the command starts
  itself, inside, is reachable: the sandbox has a loopback of its own);
- **processes**: the command sees only its own (a pid namespace), and they all end with it.

Linux (:data:`BWRAP`): bubblewrap started as a child process (``bwrap --ro-bind / / …``:
unprivileged where user namespaces are on, and as root), under the command's reaper
(:mod:`sidecar.tools.command_reaper` runs ``bwrap … sh -c <command>`` in place of
``sh -c <command>``: the reaper still ends the tree on timeout, cancel and the sidecar's death,
and ``--die-with-parent`` ends the sandbox with the reaper).  ``/tmp`` is a fresh tmpfs; a
the host's top-level ``/tmp`` entries are bound back read-only (a virtualenv or a checkout under
``/tmp`` still runs; ``../x`` beside a root under ``/tmp`` and ``~/.bashrc`` of a home under
``/tmp`` stay read-only), the roots read-write over them.  ``--unshare-net`` gives an empty
network namespace (its own loopback only).

macOS (:func:`seatbelt_profile`): ``sandbox-exec -p <profile>`` with a profile of the same
meaning (deny by default; read everything; write in the roots, ``/private/tmp``, the per-user
temp folder and ``/dev/null``; no network but local sockets).  Written and documented, not
tested here (no Mac in CI).

Whether it can start is probed once per process (:func:`sandbox_ready`): bwrap missing, or
refused by the kernel (no user namespaces, a container's seccomp), is logged once, and
``auto`` falls back to asking about every command.

:func:`blocked_by_sandbox` reads a sandboxed command's failure for the signs of the sandbox
having blocked it (the approval step then asks to run it outside).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "BLOCKED_SIGNS",
    "BWRAP",
    "blocked_by_sandbox",
    "bwrap_argv",
    "sandbox_argv",
    "sandbox_ready",
    "seatbelt_profile",
]

logger = logging.getLogger(__name__)

BWRAP = "bwrap"
_TMP = Path("/tmp")

BLOCKED_SIGNS: tuple[tuple[str, str], ...] = (
    ("Read-only file system", "a write outside the workspace roots"),
    ("Operation not permitted", "an operation the sandbox does not permit"),
    ("Network is unreachable", "the network"),
    ("Connection refused", "a connection outside the sandbox"),
    ("Temporary failure in name resolution", "the network (name resolution)"),
    ("Could not resolve host", "the network (name resolution)"),
    ("Name or service not known", "the network (name resolution)"),
    ("nodename nor servname provided", "the network (name resolution)"),
    ("Errno 101", "the network"),
    ("Errno 111", "a connection outside the sandbox"),
    ("Errno 30", "a write outside the workspace roots"),
)
"""Texts a failing command prints when the sandbox stopped it (the C library's ``strerror``
of EROFS, EPERM, ENETUNREACH, ECONNREFUSED and the resolver's failures; Python's ``[Errno N]``
forms), each with what it stood in the way of."""
_SIGNS = re.compile("|".join(re.escape(s) for s, _ in BLOCKED_SIGNS))


def blocked_by_sandbox(output: str, exit_code: object) -> str | None:
    """What the sandbox seems to have blocked, from a sandboxed command's output, or ``None``.

    Only a command that failed (exit code not 0) counts, and only by the signs above: a
    program that swallows its errors, prints them in another language, or fails later for
    another reason is not seen (the model may then ask with ``sandbox: "escalate"``), and a
    real "Connection refused" (a server that is down) is taken for the sandbox (one question
    too many: approved, the command fails the same way outside)."""
    if exit_code == 0:
        return None
    found = _SIGNS.search(output)
    if found is None:
        return None
    return next(what for sign, what in BLOCKED_SIGNS if sign == found.group(0))


#: How many of the host's ``/tmp`` entries are shown (read-only) inside at most.
MAX_TMP_ENTRIES = 2000


def _tmp_entries(paths: Sequence[Path]) -> list[Path]:
    """The host's top-level ``/tmp`` entries, bound back read-only over the private tmpfs: a
    tool installed there (a virtualenv, a checkout) still runs inside, and ``../x`` beside a
    root under ``/tmp`` stays read-only.  Past :data:`MAX_TMP_ENTRIES`, only the entries
    holding one of ``paths`` (the roots, ``$HOME``)."""
    holding: list[Path] = []
    for path in paths:
        if path.is_relative_to(_TMP) and path != _TMP:
            entry = _TMP / path.relative_to(_TMP).parts[0]
            if entry not in holding:
                holding.append(entry)
    try:
        with os.scandir(_TMP) as scan:
            every = sorted(
                _TMP / e.name for e, _ in zip(scan, range(MAX_TMP_ENTRIES + 1), strict=False)
            )
    except OSError:
        return holding
    if len(every) > MAX_TMP_ENTRIES:
        logger.debug(
            "/tmp has over %d entries: only the roots' are shown in the sandbox", MAX_TMP_ENTRIES
        )
        return holding
    return every


def bwrap_argv(roots: Sequence[Path], home: str | None) -> list[str]:
    """bubblewrap's arguments (``bwrap`` first) up to the command (``sh -c …`` follows)."""
    argv = [BWRAP, "--die-with-parent", "--unshare-pid", "--unshare-net", "--new-session"]
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]
    real_roots = [Path(r) for r in roots]
    kept = [*real_roots, *([Path(home)] if home and Path(home).is_absolute() else [])]
    for entry in _tmp_entries(kept):
        if entry.is_symlink():
            with contextlib.suppress(OSError):
                argv += ["--symlink", os.readlink(entry), str(entry)]
        else:  # -try: an entry removed since the listing is no error
            argv += ["--ro-bind-try", str(entry), str(entry)]
    for root in real_roots:
        argv += ["--bind", str(root), str(root)]
    argv += ["--setenv", "TMPDIR", "/tmp", "--"]
    return argv


def _scheme_string(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def seatbelt_profile(roots: Sequence[Path]) -> str:
    """macOS: the ``sandbox-exec`` profile of the same meaning as :func:`bwrap_argv` (the
    per-user temp folder is ``/private/var/folders``; ``/tmp`` is ``/private/tmp``)."""
    writable = "\n".join(f"  (subpath {_scheme_string(str(r))})" for r in roots)
    return (
        "(version 1)\n"
        "(deny default)\n"
        "(allow process-exec process-fork)\n"
        "(allow signal (target same-sandbox))\n"
        "(allow file-read*)\n"
        "(allow sysctl-read mach-lookup ipc-posix-shm ipc-posix-sem iokit-open)\n"
        "(allow file-write*\n"
        f"{writable}\n"
        '  (subpath "/private/tmp")\n'
        '  (subpath "/private/var/folders")\n'
        '  (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/fd/"))\n'
        '(allow file-ioctl (literal "/dev/null") (literal "/dev/tty"))\n'
        "(deny network*)\n"
        "(allow network* (remote unix-socket) (local unix-socket))\n"
    )


def sandbox_argv(roots: Sequence[Path], home: str | None) -> list[str] | None:
    """What runs before ``sh -c <command>`` on this platform (``None``: no sandbox here)."""
    platform: str = sys.platform  # a plain str: mypy checks one platform's branches only
    if platform == "linux":
        return bwrap_argv(roots, home)
    if platform == "darwin":
        return ["sandbox-exec", "-p", seatbelt_profile(roots), "--"]
    return None


_ready: dict[str, str | None] = {}
"""The probe's answer, once: ``{"why": None}`` (usable) or the reason it is not."""


async def sandbox_ready() -> str | None:
    """``None`` when commands can run in the sandbox here, else why not (said in the log once;
    probed once per process by starting ``true`` in it)."""
    if "why" not in _ready:  # two first calls at once probe twice: harmless, said twice
        why = await _probe()
        if why is not None and "why" not in _ready:
            logger.warning(
                "commands cannot run in a sandbox here (%s): the auto mode asks about every "
                "command instead",
                why,
            )
        _ready["why"] = why
    return _ready["why"]


async def _probe() -> str | None:
    prefix = sandbox_argv([Path.cwd()], None)
    if prefix is None:
        return f"no sandbox on {sys.platform}"
    if shutil.which(prefix[0]) is None:
        return f"{prefix[0]} is not installed (Debian: apt-get install bubblewrap)"
    try:
        proc = await asyncio.create_subprocess_exec(
            *prefix,
            "true",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(proc.communicate(), 10)
    except (OSError, TimeoutError) as exc:
        return f"{prefix[0]} could not start: {exc}"
    if proc.returncode != 0:
        said = err.decode("utf-8", "replace").strip().splitlines()
        return f"{prefix[0]} failed: {said[-1] if said else f'exit code {proc.returncode}'}"
    return None
