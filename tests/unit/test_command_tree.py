"""A command's whole process tree ends with the call (sidecar.tools.shell and its wrapper,
sidecar.tools.command_reaper), its output is kept within a bound that still shows the end, and
processes left by a dead sidecar are found by their marker (sidecar.tools.leftovers)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from sidecar.tools import Workspace, run_command, shell
from sidecar.tools.command_env import MARKER
from sidecar.tools.leftovers import end_marked, marked

linux = pytest.mark.skipif(sys.platform != "linux", reason="/proc, prctl")


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace.of([str(tmp_path)])


def alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped, is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def pids(tmp_path: Path, *names: str) -> list[int]:
    return [int((tmp_path / n).read_text()) for n in names]


@linux
@pytest.mark.anyio
async def test_a_setsid_a_nohup_and_a_double_fork_end_with_the_call(
    ws: Workspace, tmp_path: Path
) -> None:
    assert shell.MECHANISM == "subreaper"
    command = (
        "setsid sleep 300 & echo $! > a; "
        "nohup sleep 301 >/dev/null 2>&1 & echo $! > b; "
        "(sleep 302 & echo $! > c); "
        'echo "marker=$CONTEXT_SIDECAR_CALL"'
    )
    started = time.monotonic()
    out = await run_command(ws, command, marker="run_t/c1", timeout_s=20)
    # the call ends when sh does: nothing left holds its output open
    assert time.monotonic() - started < 5
    assert "marker=run_t/c1" in out.text and out.text.endswith("[exit code 0]")
    left = [p for p in pids(tmp_path, "a", "b", "c") if alive(p)]
    assert left == [], "a descendant outlived the call"


@pytest.mark.parametrize("mechanism", ["subreaper", "group"])
@pytest.mark.anyio
async def test_a_child_ignoring_sigterm_is_killed(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mechanism: str
) -> None:
    if mechanism == "subreaper" and sys.platform != "linux":
        pytest.skip("the wrapper is Linux only")
    monkeypatch.setattr(shell, "MECHANISM", mechanism)
    monkeypatch.setattr(shell, "GRACE_S", 0.6)
    monkeypatch.setattr(shell, "_REAPER_GRACE_S", 0.3)
    # under the wrapper the child leaves the group (only the wrapper's SIGKILL reaches it);
    # without it, the group's SIGKILL must
    spawn = "setsid sleep 60" if mechanism == "subreaper" else "sleep 60"
    started = time.monotonic()
    out = await run_command(ws, f"trap '' TERM; {spawn} & echo $! > a; wait", timeout_s=0.3)
    took = time.monotonic() - started
    assert out.meta["timedOut"] and "timed out after" in out.text
    assert took < 0.3 + shell.GRACE_S + 1.0, took
    (child,) = pids(tmp_path, "a")
    await anyio.sleep(0.1)
    assert not alive(child), "a child ignoring SIGTERM outlived the timeout"


@linux
def test_a_wrapper_whose_sidecar_is_already_gone_runs_nothing() -> None:
    """The parent-death signal is asked for after the wrapper started: a sidecar that died in
    between is seen by ``getppid()`` (here: the pid it was given is not its parent)."""
    reaper = Path(shell.__file__).with_name("command_reaper.py")
    done = subprocess.run(
        [sys.executable, "-S", "-E", "-P", str(reaper), "1", "1", "echo ran"],
        capture_output=True,
        timeout=10,
    )
    assert (done.returncode, done.stdout) == (-15, b"")


@pytest.mark.anyio
async def test_a_signal_and_an_exit_code_read_as_without_the_wrapper(ws: Workspace) -> None:
    out = await run_command(ws, "echo out; echo err >&2; exit 7")
    assert out.text == "out\nerr\n[exit code 7]" and out.meta["exitCode"] == 7
    out = await run_command(ws, "kill -KILL $$")
    assert out.text == "[killed by signal 9]" and out.meta["exitCode"] == -9


def test_the_capture_keeps_head_and_a_rolling_tail_within_its_limit() -> None:
    capture = shell.Capture(1000)
    data = b"".join(b"%06d\n" % i for i in range(2000))  # 14,000 bytes
    at = 0
    for size in [1, 7, 499, 3000, 64, 9000, 1429]:
        capture.add(data[at : at + size])
        at += size
        assert capture.kept <= 1000
    assert at == len(data) and capture.total == len(data)
    text = capture.text()
    assert text.startswith("000000\n") and text.endswith("001999\n")
    assert f"[… {len(data) - 1000} bytes of output were not kept …]" in text


@pytest.mark.anyio
async def test_an_output_over_the_cap_shows_its_end_and_its_size(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shell, "MAX_CAPTURE", 64 * 1024)
    out = await run_command(ws, "seq 1 200000; echo THE-END")
    assert out.meta["bytes"] == len("".join(f"{i}\n" for i in range(1, 200001))) + 8
    assert out.meta["keptBytes"] <= 64 * 1024
    lines = out.text.splitlines()
    assert lines[0] == "1" and out.truncated
    assert lines[-4:] == [
        "200000",
        "THE-END",  # the real end, not the end of what fitted in memory
        f"[{out.meta['bytes']} bytes of output; the middle was not kept]",
        "[exit code 0]",
    ]


@linux
def test_leftovers_are_found_by_their_marker_and_ended() -> None:
    env = {"PATH": os.environ["PATH"]}
    ours = [
        subprocess.Popen(["sleep", "60"], env={**env, MARKER: f"run_gone/c{i}"}) for i in (1, 2)
    ]
    other = subprocess.Popen(["sleep", "60"], env={**env, MARKER: "run_other/c1"})
    try:
        assert sorted(marked("run_gone/")) == sorted(p.pid for p in ours)
        assert end_marked("run_gone/") == 2
        for p in ours:
            assert p.wait(5) == -9
        assert other.poll() is None and marked("run_gone/") == []
    finally:
        for p in [*ours, other]:
            p.kill()
            p.wait()


@pytest.mark.anyio
async def test_a_command_is_journaled_as_started_before_it_starts(
    ws: Workspace, tmp_path: Path
) -> None:
    """A resume tells a started command from one never run by the journal's ``tool.approval``:
    the loop writes the journal in ``before_run``, which must come after that event and before
    the command runs (and only for a command: a read needs no write)."""
    from sidecar.runs.builtin import BuiltinRunner
    from sidecar.tools.approvals import mode_named
    from sidecar.tools.host import BuiltinTools
    from sidecar.tools.output import ToolOutput

    mode = mode_named("allow_all")
    assert mode is not None
    runner = BuiltinRunner(
        frozenset({"run_command", "list_dir"}), mode, BuiltinTools(ws), lambda _: ToolOutput("")
    )
    seen: list[str] = []

    def before_run() -> None:
        seen.append(f"before_run ran={(tmp_path / 'ran').exists()}")

    async def ask(*_: object) -> None:
        raise AssertionError("allow_all asks nothing")

    for name, arguments in (
        ("list_dir", {}),
        ("run_command", {"command": 'echo "$CONTEXT_SIDECAR_CALL" > ran'}),
    ):
        await runner.call(
            "run_1",
            "c1",
            name,
            arguments,
            ask=ask,
            emit=lambda kind, _: seen.append(kind),
            timeout_s=10,
            before_run=before_run,
        )
    assert seen == ["tool.approval", "before_run ran=False"]
    assert (tmp_path / "ran").read_text() == "run_1/c1\n"
