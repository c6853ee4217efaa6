"""Look-around tools end within their deadline and when cancelled, whatever the files are
(issue 40 item 2), without a process: the deadline itself, the walk stopping, list/glob/grep
saying how far they got, FIFOs refused or skipped, ripgrep killed (on time, on cancel, past
its byte budget) and never left running, a straggling thread answered without, the tools'
children killed on the way out, and the exit backstop ending a process a thread holds."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import anyio
import pytest

from sidecar import children
from sidecar.tools import ToolError, Workspace, glob_files, grep, list_dir
from sidecar.tools.deadline import Deadline, DeadlinePassed
from sidecar.tools.grep import Backend
from sidecar.tools.host import STRAGGLER_GRACE_S, BuiltinTools, _within
from sidecar.tools.output import ToolOutput
from sidecar.tools.walk import walk
from tests.e2e.acp_kit import is_running
from tests.e2e.time_bounds_kit import stuck_dir, wait_no_ripgrep

grep_module = importlib.import_module("sidecar.tools.grep")  # the package names the function
BACKENDS: list[Backend] = ["rg", "python"]
#: What a loaded two-core machine may add to a limit here.
SLACK_S = 1.5


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for d in range(5):
        (root / f"d{d}").mkdir(parents=True)
        for f in range(20):
            (root / f"d{d}" / f"f{f:02d}.txt").write_text(f"needle {d} {f}\n")
    return root


# --- the deadline ------------------------------------------------------------------------------


def test_a_call_gets_the_run_timeout_capped_by_the_tool_limit() -> None:
    short = Deadline.of_call(2.0, 60.0)
    assert (short.limit_s, short.why) == (2.0, "the run's tool timeout")
    for timeout in (None, 0.0, 600.0):
        capped = Deadline.of_call(timeout, 60.0)
        assert (capped.limit_s, capped.why) == (60.0, "the tool's own limit")


def test_a_deadline_passes_and_is_cancelled() -> None:
    deadline = Deadline(0.05)
    deadline.check()
    assert not deadline.passed() and 0 < deadline.remaining() <= 0.05
    time.sleep(0.06)
    assert deadline.passed() and deadline.remaining() == 0
    with pytest.raises(DeadlinePassed) as passed:
        deadline.check()
    error = passed.value.error("grep", "3 files searched", "Narrow it.")
    assert error.code == "tool.timeout"
    assert error.message == (
        "grep stopped at its time limit of 0.05 s (the tool's limit) before it finished:"
        " 3 files searched. Narrow it."
    )

    stopped: list[str] = []
    cancelled = Deadline(60)
    forget = cancelled.on_stop(lambda: stopped.append("a"))
    cancelled.on_stop(lambda: stopped.append("b"))
    forget()  # what has ended is not stopped again
    cancelled.cancel()
    assert stopped == ["b"] and cancelled.cancelled and cancelled.remaining() == 0
    cancelled.on_stop(lambda: stopped.append("late"))  # registered after: stopped at once
    assert stopped == ["b", "late"]
    with pytest.raises(DeadlinePassed) as passed:
        cancelled.check()
    assert passed.value.error("glob", "10 entries", "x").code == "tool.cancelled"


# --- the walk and the tools over it -------------------------------------------------------------


def test_the_walk_stops_at_its_deadline(tree: Path) -> None:
    deadline = Deadline(60)
    seen = 0
    with pytest.raises(DeadlinePassed):
        for _ in walk(tree, deadline=deadline):
            seen += 1
            if seen == 7:
                deadline.cancel()
    assert seen == 7  # checked before every entry: not one more
    assert len(list(walk(tree, deadline=Deadline(60)))) == 105


def test_list_and_glob_say_how_far_they_got(tree: Path) -> None:
    ws = Workspace.of([str(tree)])
    with pytest.raises(ToolError) as listed:
        list_dir(ws, deadline=Deadline(0))
    assert listed.value.code == "tool.timeout"
    assert listed.value.message == (
        "list_dir stopped at its time limit of 0 s (the tool's limit) before it finished:"
        " 0 entries seen under the workspace root, 2 levels deep. List a subdirectory, a lower"
        " depth=, or find files with glob"
    )
    with pytest.raises(ToolError) as globbed:
        glob_files(ws, "**/*.txt", "d1", deadline=Deadline(0))
    assert globbed.value.code == "tool.timeout"
    assert "0 entries walked under d1, 0 of them matching. Glob from a" in globbed.value.message
    assert list_dir(ws, deadline=Deadline(60)).meta["entries"] == 105


# --- grep: FIFOs, the deadline, the byte budget, cancel ------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_grep_refuses_a_fifo_and_skips_one_in_a_directory(tmp_path: Path, backend: Backend) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("needle\n")
    os.mkfifo(tmp_path / "d" / "pipe")
    os.mkfifo(tmp_path / "d" / ".gitignore")  # the walk reads ignore files: never blocking
    os.mkfifo(tmp_path / "pipe")
    ws = Workspace.of([str(tmp_path)])
    with pytest.raises(ToolError) as refused:
        grep(ws, "needle", "pipe", backend=backend, deadline=Deadline(5))
    assert refused.value.code == "tool.not_a_file"
    assert refused.value.message == "pipe is a FIFO: grep searches a directory or a regular file"
    if backend == "python":
        assert grep(ws, "needle", "d", backend=backend).meta == {"matches": 1, "files": 1}
    else:  # ripgrep blocks on the FIFO .gitignore: its deadline ends it (next test)
        (tmp_path / "d" / ".gitignore").unlink()
        assert grep(ws, "needle", "d", backend=backend).meta == {"matches": 1, "files": 1}
    assert "d/pipe" in glob_files(ws, "**/*").text


def test_a_blocked_ripgrep_is_killed_at_the_deadline(tmp_path: Path) -> None:
    token = f"stuck{uuid.uuid4().hex[:8]}"
    stuck_dir(tmp_path)
    ws = Workspace.of([str(tmp_path)])
    started = time.monotonic()
    with pytest.raises(ToolError) as stopped:
        grep(ws, token, "stuck", backend="rg", deadline=Deadline(0.5))
    took = time.monotonic() - started
    assert stopped.value.code == "tool.timeout"
    assert stopped.value.message.startswith(
        "grep stopped at its time limit of 0.5 s (the tool's limit) before it finished: 0"
        " matches in 0 files found so far in stuck (a huge tree, or an ignore file that is a"
        " pipe?). Narrow it: path="
    )
    assert 0.5 <= took < 0.5 + SLACK_S, took
    assert wait_no_ripgrep(token, 0) == []


def test_a_cancel_kills_a_blocked_ripgrep_at_once(tmp_path: Path) -> None:
    token = f"stuck{uuid.uuid4().hex[:8]}"
    stuck_dir(tmp_path)
    ws = Workspace.of([str(tmp_path)])
    deadline = Deadline(60)
    errors: list[ToolError] = []

    def search() -> None:
        try:
            grep(ws, token, "stuck", backend="rg", deadline=deadline)
        except ToolError as exc:
            errors.append(exc)

    worker = threading.Thread(target=search)
    worker.start()
    time.sleep(0.3)
    assert wait_no_ripgrep(token, 0) != []  # blocked in the FIFO's open
    started = time.monotonic()
    deadline.cancel()
    worker.join(5)
    assert time.monotonic() - started < SLACK_S
    assert [e.code for e in errors] == ["tool.cancelled"]
    assert wait_no_ripgrep(token, 0) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_grep_stops_at_its_deadline_on_either_back_end(tree: Path, backend: Backend) -> None:
    ws = Workspace.of([str(tree)])
    with pytest.raises(ToolError) as stopped:
        grep(ws, "needle", backend=backend, deadline=Deadline(0))
    assert stopped.value.code == "tool.timeout"
    assert "found so far" in stopped.value.message


def test_grep_reads_a_bounded_amount_of_ripgrep_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "many.txt").write_text("needle\n" * 20_000)
    monkeypatch.setattr(grep_module, "MAX_RG_OUTPUT_BYTES", 64 * 1024)
    ws = Workspace.of([str(tmp_path)])
    out = grep(ws, "needle", backend="rg", deadline=Deadline(30))
    assert out.truncated and out.meta["partial"] is True
    assert 0 < out.meta["matches"] < 20_000  # stopped part-way: the totals are partial
    assert out.text.splitlines()[-1] == (
        "[the search stopped after 0 MB of results (a file that keeps growing, or far too many"
        " matches), so the totals are partial; narrow with path=, glob= or a more specific"
        " pattern]"
    )
    monkeypatch.undo()
    assert grep(ws, "needle", backend="rg").meta == {"matches": 20_000, "files": 1}


# --- the host: cancel abandons the thread, a straggler is answered without ----------------------


@pytest.mark.anyio
async def test_a_cancelled_call_returns_at_once_and_leaves_no_ripgrep(tmp_path: Path) -> None:
    token = f"stuck{uuid.uuid4().hex[:8]}"
    stuck_dir(tmp_path)
    tools = BuiltinTools(Workspace.of([str(tmp_path)]))
    with anyio.move_on_after(0.3):
        await tools.run("grep", {"pattern": token, "path": "stuck"}, timeout_s=600)
    started = time.monotonic()
    assert await anyio.to_thread.run_sync(wait_no_ripgrep, token) == []
    assert time.monotonic() - started < SLACK_S


@pytest.mark.anyio
async def test_a_thread_that_overstays_is_answered_without() -> None:
    def stubborn(_: Deadline) -> ToolOutput:  # checks nothing: a call stuck in the kernel
        time.sleep(2.0)
        return ToolOutput("late")

    started = time.monotonic()
    with pytest.raises(ToolError) as late:
        await _within("grep", stubborn, Deadline(0.2, "the run's tool timeout"))
    took = time.monotonic() - started
    assert late.value.code == "tool.timeout"
    assert late.value.message.startswith(
        "grep did not finish within its time limit of 0.2 s (the run's tool timeout)"
    )
    assert took < 0.2 + STRAGGLER_GRACE_S + SLACK_S, took


# --- the way out ---------------------------------------------------------------------------------


def test_children_are_killed_on_the_way_out() -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    children.started(sleeper)
    try:
        assert children.kill_all() == 1
        assert sleeper.wait(5) == -9
        assert children.kill_all() == 0  # forgotten once killed
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()


def test_the_backstop_ends_a_process_a_thread_holds(tmp_path: Path) -> None:
    """As a face ends: its main returns with a thread still in asyncio's default executor
    (``asyncio.run`` joins it without a timeout) and a tool's child running: the backstop
    ends the process with the face's code and kills the child."""
    pid_file = tmp_path / "child.pid"
    program = textwrap.dedent(
        f"""
        import asyncio, subprocess, threading
        from sidecar import children
        from sidecar.exiting import arm_backstop

        async def main():
            child = subprocess.Popen(["sleep", "60"])
            children.started(child)
            open({str(pid_file)!r}, "w").write(str(child.pid))
            asyncio.get_running_loop().run_in_executor(None, threading.Event().wait)
            arm_backstop(3, 0.3, "the test's end")

        asyncio.run(main())
        """
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, timeout=20, check=False
    )
    took = time.monotonic() - started
    assert done.returncode == 3, done.stderr
    assert b"exiting now" in done.stderr
    assert took < 0.3 + 5.0, took  # an interpreter start on a loaded machine, and the grace
    child = int(pid_file.read_text())
    end = time.monotonic() + 5
    while is_running(child) and time.monotonic() < end:
        time.sleep(0.05)
    assert not is_running(child), "the tool's child outlived the process"
