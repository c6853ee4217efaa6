"""The ``auto`` and ``plan`` modes on the ``serve`` face, over real stdio (issue 45).

``auto``: an edit and ``pytest`` run without a question; ``touch ../x``, ``echo > ~/.bashrc``
(HOME is a temp dir for the sidecar under test) and a connection to a loopback server the test
started fail inside the sandbox, are asked about as ``blocked`` (denied here) and leave
nothing; a command the model marks ``sandbox: "escalate"`` is asked about with its
justification, runs when approved and reaches the server.  The assertions are on the files
and the server, so a bypassed sandbox turns them red (checked by hand: see the branch's log).

``plan``: the write and the command are refused without a question, the read runs, and the
model's system prompt says it is in plan mode; the same calls in ``ask`` are asked.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sidecar.tools.approvals import PLAN_NOTE
from tests.conftest import SidecarFactory
from tests.e2e.test_builtin_tools import Host, by_call, call, text
from tests.e2e.workspace_kit import fixture_repo

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap"),
]

CONNECT = (
    f"{sys.executable} -S -c 'import socket; "
    'socket.create_connection(("127.0.0.1", {port}), timeout=3); print("connected")\''
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


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sidecar under test's HOME: never the real one."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


async def test_auto_runs_in_the_sandbox_and_asks_only_to_leave_it(
    sidecars: SidecarFactory, tmp_path: Path, home: Path, listener: socket.socket
) -> None:
    repo = tmp_path / "repo"
    fixture_repo(repo)
    port = listener.getsockname()[1]
    client = await sidecars.start()
    # answers: c2, c3, c4 blocked -> denied; c5 escalated -> approved
    host = Host(client, answers=[False, False, False, True])
    sid = str(
        (await client.request("session/create", {"workspaceRoots": [str(repo)]}))["sessionId"]
    )
    tests = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    events = await host.run(
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "fix it"}],
            "builtinTools": {"mode": "auto"},
            "maxRounds": 20,
            "script": {
                "rounds": [
                    call("edit_file", "e1", path="calc/add.py", old_text="a - b", new_text="a + b"),
                    call("run_command", "c1", command=tests),
                    call("run_command", "c2", command="touch ../x"),
                    call("run_command", "c3", command="echo hi > ~/.bashrc"),
                    call("run_command", "c4", command=CONNECT.format(port=port)),
                    call(
                        "run_command",
                        "c5",
                        command=CONNECT.format(port=port),
                        sandbox="escalate",
                        justification="reaches the test server",
                    ),
                    {"text": "done"},
                ]
            },
        }
    )
    stored = by_call(events, "tool.resultStored")
    assert "1 passed" in text(stored["c1"]) and stored["c1"]["exitCode"] == 0
    # what a bypassed sandbox would change: the files outside, the server's connections
    assert not (tmp_path / "x").exists() and not (home / ".bashrc").exists()
    assert "Read-only file system" in text(stored["c2"])
    assert "running it outside: no" in text(stored["c3"])
    assert "connected" not in text(stored["c4"]) and "connected" in text(stored["c5"])
    assert connections(listener) == 1  # c5's, approved outside the sandbox
    asked = [(a["callId"], a.get("escalation"), a.get("justification")) for a in host.asked]
    assert asked == [
        ("c2", "blocked", "the sandbox blocked a write outside the workspace roots"),
        ("c3", "blocked", "the sandbox blocked a write outside the workspace roots"),
        ("c4", "blocked", "the sandbox blocked a connection outside the sandbox"),
        ("c5", "requested", "reaches the test server"),
    ]
    approvals = [
        (e["payload"]["callId"], e["payload"]["verdict"], e["payload"]["approved"])
        for e in events
        if e["type"] == "tool.approval"
    ]
    assert approvals == [
        ("e1", "allow", True),
        ("c1", "sandbox", True),
        ("c2", "sandbox", True),
        ("c2", "ask", False),
        ("c3", "sandbox", True),
        ("c3", "ask", False),
        ("c4", "sandbox", True),
        ("c4", "ask", False),
        ("c5", "ask", True),
    ]


async def _system_texts(client: Any, events: list[dict[str, Any]]) -> list[str]:
    snap = next(e for e in events if e["type"] == "context.assembled")["payload"]["snapshotId"]
    snapshot = await client.request("snapshot/get", {"snapshotId": snap})
    return [part["text"] for part in snapshot["system"]]


async def test_plan_refuses_without_asking_and_ask_asks(
    sidecars: SidecarFactory, tmp_path: Path, home: Path
) -> None:
    repo = tmp_path / "repo"
    fixture_repo(repo)
    client = await sidecars.start()
    host = Host(client, answers=[False, False])
    script = {
        "rounds": [
            call("read_file", "r1", path="calc/add.py"),
            call("write_file", "w1", path="calc/add.py", content="changed\n"),
            call("run_command", "c1", command="touch ran.txt"),
            {"text": "1. fix add"},
        ]
    }
    sid = str(
        (
            await client.request(
                "session/create",
                {"workspaceRoots": [str(repo)], "meta": {"acp": {"approvalMode": "plan"}}},
            )
        )["sessionId"]
    )
    turn = [{"type": "text", "text": "plan it"}]
    events = await host.run(
        {"sessionId": sid, "userTurn": turn, "builtinTools": {}, "script": script}
    )
    stored = by_call(events, "tool.resultStored")
    assert host.asked == []
    assert not stored["r1"]["isError"] and "return a - b" in text(stored["r1"])
    assert text(stored["w1"]).startswith("refused: write_file is not allowed in plan mode")
    assert stored["c1"]["isError"] and not (repo / "ran.txt").exists()
    assert PLAN_NOTE in await _system_texts(client, events)
    # the plan the model wrote is in the conversation
    history = await client.request("session/read", {"sessionId": sid})
    assert "1. fix add" in str(history["entries"][-1])

    # the user leaves plan mode: the same calls are asked about, and the note is gone
    events = await host.run(
        {
            "sessionId": sid,
            "userTurn": turn,
            "builtinTools": {"mode": "ask"},
            "script": script,
        }
    )
    assert [a["callId"] for a in host.asked] == ["w1", "c1"]
    assert PLAN_NOTE not in await _system_texts(client, events)
