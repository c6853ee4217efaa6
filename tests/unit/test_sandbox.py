"""The sandbox a command runs in under ``auto`` (sidecar.tools.sandbox, sidecar.tools.shell):
writes only in the roots and a private /tmp, no network, the tree still ended with the call,
and the detector that reads a blocked command's failure."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sidecar.tools import Workspace, run_command, shell
from sidecar.tools.sandbox import (
    blocked_by_sandbox,
    bwrap_argv,
    sandbox_ready,
    seatbelt_profile,
)

linux = pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    """A root beside a fake home (never the real one: ``echo > ~/.bashrc`` is run)."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return Workspace.of([str(tmp_path / "ws")])


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.2)
        yield server


def accepted(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except TimeoutError:
        return False
    conn.close()
    return True


CONNECT = (
    'python3 -c \'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])),'
    ' timeout=3); print("connected")\' {port}'
)


@linux
@pytest.mark.anyio
async def test_the_sandbox_starts_here() -> None:
    assert await sandbox_ready() is None


@linux
@pytest.mark.anyio
@pytest.mark.parametrize("sandboxed", [True, False])
async def test_writes_outside_the_roots_fail_and_leave_nothing(
    ws: Workspace, tmp_path: Path, sandboxed: bool
) -> None:
    """Outside the sandbox the same command writes (the test can fail)."""
    ours = Path("/tmp") / f"sandbox-test-{os.getpid()}-{time.monotonic_ns()}"
    command = f"touch inside; touch ../x; echo hi > ~/.bashrc; touch {ours}; echo done"
    out = await run_command(ws, command, timeout_s=20, sandboxed=sandboxed)
    written_to_tmp = ours.exists()
    ours.unlink(missing_ok=True)
    assert (tmp_path / "ws" / "inside").exists()
    outside = [tmp_path / "x", tmp_path / "home" / ".bashrc"]
    if not sandboxed:
        assert all(p.exists() for p in outside) and written_to_tmp
        return
    assert [p for p in outside if p.exists()] == []
    assert not written_to_tmp  # a private /tmp
    assert out.text.count("Read-only file system") == 2, out.text
    assert out.meta["sandboxed"] is True
    assert out.meta["exitCode"] == 0  # the last command succeeded: not read as blocked
    assert "blocked" not in out.meta


@linux
@pytest.mark.anyio
@pytest.mark.parametrize("sandboxed", [True, False])
async def test_no_connection_leaves_the_sandbox(
    ws: Workspace, listener: socket.socket, sandboxed: bool
) -> None:
    port = listener.getsockname()[1]
    out = await run_command(ws, CONNECT.format(port=port), timeout_s=20, sandboxed=sandboxed)
    assert accepted(listener) is not sandboxed
    if sandboxed:
        assert "connected" not in out.text
        assert out.meta["blocked"] == "a connection outside the sandbox", out.text
    else:
        assert "connected" in out.text and out.meta["exitCode"] == 0


@linux
@pytest.mark.anyio
async def test_a_blocked_write_is_read_as_blocked(ws: Workspace) -> None:
    out = await run_command(ws, "touch ../x", timeout_s=20, sandboxed=True)
    assert out.meta["blocked"] == "a write outside the workspace roots"


@linux
@pytest.mark.anyio
async def test_the_sandboxed_tree_ends_with_the_call(ws: Workspace, tmp_path: Path) -> None:
    """A timeout still kills everything: the wrapper runs bwrap, bwrap dies with it, and the
    kernel kills what is left in its pid namespace — just after the call returns, so the
    check waits up to 3 s (a fixed 0.2 s failed once on a loaded CI machine); a process that
    escaped would still be there for 300 s."""
    assert shell.MECHANISM == "subreaper"
    started = time.monotonic()
    out = await run_command(
        ws,
        "setsid sleep 300 & nohup sleep 301 >/dev/null 2>&1 & sleep 302",
        timeout_s=0.5,
        sandboxed=True,
    )
    assert out.meta["timedOut"] and time.monotonic() - started < 5
    deadline = time.monotonic() + 3

    def left() -> list[str]:
        names = ("sleep 300", "sleep 301", "sleep 302")
        return [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline(pid) in names]

    while left() and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    assert left() == []


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def test_roots_and_a_home_under_tmp_are_bound_back() -> None:
    argv = bwrap_argv([Path("/tmp/a/ws"), Path("/srv/b")], "/tmp/h/home")
    pairs = [tuple(argv[i : i + 3]) for i in range(len(argv) - 2)]
    assert ("--tmpfs", "/tmp", "--tmpfs") in pairs
    assert ("--bind", "/tmp/a/ws", "/tmp/a/ws") in pairs
    assert ("--bind", "/srv/b", "/srv/b") in pairs
    assert "--unshare-net" in argv and argv[-1] == "--"
    # the read-only binds of the /tmp entries come before the roots' read-write ones
    assert argv.index("--bind") > argv.index("--tmpfs")


def test_the_seatbelt_profile_writes_only_in_the_roots_and_temp() -> None:
    profile = seatbelt_profile([Path('/Users/me/my "proj"')])
    assert "(deny default)" in profile and "(deny network*)" in profile
    assert '(subpath "/Users/me/my \\"proj\\"")' in profile
    assert "(allow file-read*)" in profile


@pytest.mark.parametrize(
    ("output", "code", "blocked"),
    [
        ("touch: cannot touch '../x': Read-only file system", 1, "a write outside"),
        ("curl: (6) Could not resolve host: pypi.org", 6, "the network"),
        ("OSError: [Errno 101] Network is unreachable", 1, "the network"),
        ("ConnectionRefusedError: [Errno 111] Connection refused", 1, "a connection"),
        ("touch: cannot touch '../x': Read-only file system", 0, None),  # it succeeded
        ("FAILED tests/test_x.py::test_a - AssertionError", 1, None),
    ],
)
def test_the_detector(output: str, code: int, blocked: str | None) -> None:
    found = blocked_by_sandbox(output, code)
    assert (found is None) if blocked is None else (found or "").startswith(blocked)


@linux
@pytest.mark.anyio
async def test_a_tool_installed_under_tmp_runs_inside_read_only(ws: Workspace) -> None:
    """A checkout or a virtualenv under /tmp (CI clones there) is still there inside the
    private /tmp, read-only: it runs, it cannot be written."""
    place = Path("/tmp") / f"sandbox-tool-{os.getpid()}-{time.monotonic_ns()}"
    place.mkdir()
    try:
        tool = place / "tool.sh"
        tool.write_text("#!/bin/sh\necho tool ran\n")
        tool.chmod(0o755)
        command = f"{tool}; touch {place}/written; echo done"
        out = await run_command(ws, command, timeout_s=20, sandboxed=True)
        assert "tool ran" in out.text, out.text
        assert "Read-only file system" in out.text and not (place / "written").exists()
    finally:
        for child in place.iterdir():
            child.unlink()
        place.rmdir()
