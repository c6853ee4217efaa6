"""The ``auto`` and ``plan`` modes through the official ACP SDK (issue 45).

``auto``: a write and ``pytest`` run without a question (the command by the sidecar, in the
sandbox: no terminal); ``touch ../x``, ``echo > ~/.bashrc`` (HOME is a temp dir for the agent)
and a connection to the test's loopback server fail in the sandbox and are asked about
(rejected: nothing is left); a command marked ``sandbox: "escalate"`` is asked about (allow
once / reject only), runs outside (the editor's terminal) and reaches the server.  ``plan``:
a write and a command refused without asking, a read runs; ``ask`` asks the same calls.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from tests.e2e.acp_kit import ToolEditor, acp_agent, call_round, initialize
from tests.e2e.test_acp_run_approvals import _run
from tests.e2e.workspace_kit import fixture_repo

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap"),
]

CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)
CONNECT = (
    f"{sys.executable} -S -c 'import socket; "
    'socket.create_connection(("127.0.0.1", {port}), timeout=3); print("connected")\''
)


class AnyOptionsEditor(ToolEditor):
    """Answers from ``choices`` whatever options are offered; keeps them."""

    def __init__(self, choices: list[str]) -> None:
        super().__init__({}, choices)
        self.options: list[list[str]] = []

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **_: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        self.options.append([o.kind for o in options])
        choice = self.choices.pop(0)
        option = next(o.option_id for o in options if o.kind == choice)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option)
        )


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.2)
        yield server


def connections(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            conn, _ = server.accept()
        except TimeoutError:
            return count
        conn.close()
        count += 1


async def test_auto_and_plan_through_the_acp_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listener: socket.socket
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    repo = tmp_path / "repo"
    fixture_repo(repo)
    port = listener.getsockname()[1]
    tests = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    fixed = "def add(a, b):\n    return a + b\n"
    editor = AnyOptionsEditor(["reject_once", "reject_once", "reject_once", "allow_once"])
    async with acp_agent(tmp_path, tmp_path / "store", editor=editor) as (conn, _):
        await initialize(conn, CAPABILITIES)
        sid = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
        modes = await conn.set_session_mode(session_id=sid, mode_id="auto")
        assert modes is not None

        results = await _run(
            conn,
            editor,
            sid,
            [
                call_round("write_file", "w1", path="calc/add.py", content=fixed),
                call_round("run_command", "c1", command=tests),
                call_round("run_command", "c2", command="touch ../x"),
                call_round("run_command", "c3", command="echo hi > ~/.bashrc"),
                call_round("run_command", "c4", command=CONNECT.format(port=port)),
                call_round(
                    "run_command",
                    "c5",
                    command=CONNECT.format(port=port),
                    sandbox="escalate",
                    justification="reaches the test server",
                ),
                {"text": "done"},
            ],
        )
        # what a bypassed sandbox would change: the files outside, the server's connections
        assert not (tmp_path / "x").exists() and not (home / ".bashrc").exists()
        assert connections(listener) == 1  # c5's, outside the sandbox
        assert "1 passed" in results["c1"]
        assert "Read-only file system" in results["c2"]
        assert "connected" not in results["c4"]
        titles = [c.title or "" for c in editor.asked]
        assert [c.tool_call_id for c in editor.asked] == ["c2", "c3", "c4", "c5"]
        assert "the sandbox blocked a write outside the workspace roots" in titles[0]
        assert "the sandbox blocked a connection outside the sandbox" in titles[2]
        assert titles[3].endswith("(run outside the sandbox: reaches the test server)")
        assert all("allow_always" not in kinds for kinds in editor.options)
        assert len(editor.created) == 1  # only c5 ran in the editor's terminal

        # plan: the write and the command are refused without a question; the read runs
        editor.asked.clear()
        await conn.set_session_mode(session_id=sid, mode_id="plan")
        rounds = [
            call_round("write_file", "w2", path="calc/add.py", content="changed\n"),
            call_round("run_command", "c6", command="touch ran.txt"),
            call_round("read_file", "r1", path="calc/add.py"),
            {"text": "1. nothing to change"},
        ]
        results = await _run(conn, editor, sid, rounds)
        assert results["w2"] == "not approved: refused: the session is in Plan mode"
        assert results["c6"] == "not approved: refused: the session is in Plan mode"
        assert "return a + b" in results["r1"]
        assert editor.asked == [] and not (repo / "ran.txt").exists()

        # ask: the same calls are asked about
        editor.choices = ["reject_once", "reject_once"]
        await conn.set_session_mode(session_id=sid, mode_id="ask")
        await _run(conn, editor, sid, rounds)
        assert [c.tool_call_id for c in editor.asked] == ["w2", "c6"]
