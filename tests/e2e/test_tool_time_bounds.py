"""Every look-around call ends within its limit and is cancellable, whatever the file, and the
process exits when its client goes whatever a tool is doing (issue 40 item 2), on the
``serve`` face, through the real process.

A FIFO named as grep's target is refused at once; one inside a searched directory is
skipped.  A file that keeps growing, and a 200,000-file tree for list_dir, glob and grep,
each answer within the run's ``toolTimeoutMs`` (plus slack for a loaded machine).  A grep
that blocks (ripgrep waiting in the ``open`` of a FIFO ignore file) is cancelled at once by
``run/cancel``, and the process exits within a second of its stdin closing; no ripgrep is
left running either way.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sidecar.client import SidecarClient
from tests.conftest import SidecarFactory
from tests.e2e.time_bounds_kit import Grower, make_tree, stuck_dir, wait_no_ripgrep

pytestmark = pytest.mark.anyio

#: What a loaded two-core CI machine may add to a limit (the scripted model's rounds, the
#: events' way out, a process start).
SLACK_S = 2.5


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"toolCalls": [{"id": call_id, "name": name, "arguments": arguments}]}


class Host:
    """The host's side: every run event, with the time it arrived."""

    def __init__(self, client: SidecarClient) -> None:
        self.client = client
        self.events: list[tuple[float, dict[str, Any]]] = []
        client.on_notification(self._notified)

    def _notified(self, method: str, params: Any) -> None:
        if method == "run/event":
            self.events.append((time.monotonic(), params))

    async def event(self, run_id: str, kind: str, timeout: float = 30) -> dict[str, Any]:
        async def seen() -> dict[str, Any]:
            while True:
                for _, e in self.events:
                    if e["runId"] == run_id and e["type"] == kind:
                        return e
                await asyncio.sleep(0.01)

        return await asyncio.wait_for(seen(), timeout)

    def durations(self, run_id: str) -> dict[str, float]:
        """Seconds from each call's ``tool.callRequested`` to its ``tool.resultStored``."""
        asked: dict[str, float] = {}
        took: dict[str, float] = {}
        for at, e in self.events:
            if e["runId"] != run_id:
                continue
            if e["type"] == "tool.callRequested":
                asked[e["payload"]["callId"]] = at
            elif e["type"] == "tool.resultStored":
                took[e["payload"]["callId"]] = at - asked[e["payload"]["callId"]]
        return took

    def results(self, run_id: str) -> dict[str, dict[str, Any]]:
        return {
            e["payload"]["callId"]: e["payload"]
            for _, e in self.events
            if e["runId"] == run_id and e["type"] == "tool.resultStored"
        }


def text(payload: dict[str, Any]) -> str:
    return "".join(part["text"] for part in payload["content"])


async def _start(
    client: SidecarClient, root: Path, rounds: list[dict[str, Any]], timeout_ms: int
) -> str:
    created = await client.request(
        "session/create", {"title": "bounds", "workspaceRoots": [str(root)]}
    )
    started = await client.request(
        "run/start",
        {
            "sessionId": created["sessionId"],
            "userTurn": [{"type": "text", "text": "look"}],
            "builtinTools": {},
            "toolTimeoutMs": timeout_ms,
            "maxRounds": 20,
            "script": {"rounds": [*rounds, {"text": "done"}]},
        },
    )
    return str(started["runId"])


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """200 directories of 1,000 empty files, made once for the module's cases: in memory
    where there is a tmpfs (about 1 s, where a loaded disk took 10 to 90 s)."""
    shm = Path("/dev/shm")
    in_memory = shm.is_dir() and os.access(shm, os.W_OK)
    root = (
        Path(tempfile.mkdtemp(prefix="sidecar-tree-", dir=shm))
        if in_memory
        else tmp_path_factory.mktemp("tree")
    )
    try:
        took = make_tree(root)
        assert took < 60, f"making the tree took {took:.1f} s"
        yield root
    finally:
        if in_memory:
            shutil.rmtree(root, ignore_errors=True)


async def test_a_fifo_is_refused_and_one_in_a_directory_skipped(
    sidecars: SidecarFactory, tmp_path: Path
) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("needle here\n")
    os.mkfifo(tmp_path / "d" / "pipe")
    os.mkfifo(tmp_path / "pipe")
    client = await sidecars.start()
    host = Host(client)
    rounds = [
        call("grep", "g1", pattern="needle", path="pipe"),
        call("grep", "g2", pattern="needle", path="d"),
        call("grep", "g3", pattern="needle"),
        call("list_dir", "l1", path="d"),
        call("glob", "f1", pattern="**/*"),
    ]
    run_id = await _start(client, tmp_path, rounds, 60_000)
    await host.event(run_id, "run.completed", 20)
    results = host.results(run_id)
    took = host.durations(run_id)
    assert results["g1"]["isError"]
    assert text(results["g1"]) == "pipe is a FIFO: grep searches a directory or a regular file"
    assert text(results["g2"]).splitlines() == [
        "1 match in 1 file",
        "d/a.txt: 1 match",
        "  1: needle here",
    ]
    assert "d/a.txt: 1 match" in text(results["g3"])
    assert "pipe" in text(results["l1"]) and not results["f1"]["isError"]
    assert max(took.values()) < SLACK_S, took


async def test_a_file_growing_without_end(sidecars: SidecarFactory, tmp_path: Path) -> None:
    token = f"grow{uuid.uuid4().hex[:8]}"
    client = await sidecars.start()
    host = Host(client)
    with Grower(tmp_path / "grows.log", token):
        run_id = await _start(
            client, tmp_path, [call("grep", "g1", pattern=token, path="grows.log")], 2_000
        )
        await host.event(run_id, "run.completed", 20)
    size = (tmp_path / "grows.log").stat().st_size
    result = host.results(run_id)["g1"]
    took = host.durations(run_id)["g1"]
    assert took < 2.0 + SLACK_S, took
    found = text(result)
    if result["isError"]:  # out of time before 32 MB of results were read
        assert found.startswith("grep stopped at its time limit of 2 s (the run's tool timeout)")
        assert "still reading grows.log" in found
    else:  # 32 MB of results read first: partial totals, said so
        assert result["truncated"] and "so the totals are partial" in found.splitlines()[-1]
    assert wait_no_ripgrep(token) == []
    assert size < 1 << 30, size  # the writer stopped with the call: no disk filled


async def test_a_200000_file_tree(sidecars: SidecarFactory, tmp_path: Path, big_tree: Path) -> None:
    client = await sidecars.start()
    host = Host(client)
    rounds = [
        call("list_dir", "l1"),
        call("glob", "f1", pattern="**/needle*"),
        call("grep", "g1", pattern="needle"),
        call("list_dir", "l2", path="d007", depth=1),
    ]
    for limit_ms in (3_000, 100):  # a limit the whole tree fits in, one it does not
        run_id = await _start(client, big_tree, rounds, limit_ms)
        await host.event(run_id, "run.completed", 60)
        took = host.durations(run_id)
        results = host.results(run_id)
        assert set(took) == {"l1", "f1", "g1", "l2"}
        for call_id, seconds in took.items():
            found = text(results[call_id])
            assert seconds < limit_ms / 1000 + SLACK_S, (limit_ms, call_id, seconds, found[:300])
            if results[call_id]["isError"]:  # the tree was too big for the limit: said so
                assert f"time limit of {limit_ms / 1000:g} s" in found, found
            elif call_id in ("f1", "g1"):
                assert "d000/needle.txt" in found
        assert not results["l2"]["isError"] and "f0499.txt" in text(results["l2"])


async def test_run_cancel_during_a_stuck_grep(sidecars: SidecarFactory, tmp_path: Path) -> None:
    token = f"stuck{uuid.uuid4().hex[:8]}"
    stuck_dir(tmp_path)
    client = await sidecars.start()
    host = Host(client)
    run_id = await _start(
        client, tmp_path, [call("grep", "g1", pattern=token, path="stuck")], 600_000
    )
    await host.event(run_id, "tool.callRequested")
    await asyncio.sleep(0.3)  # ripgrep is blocked in the FIFO's open by now
    started = time.monotonic()
    await asyncio.wait_for(client.request("run/cancel", {"runId": run_id}), 10)
    answered = time.monotonic() - started
    completed = await host.event(run_id, "run.completed", 5)
    assert answered < 2.0, answered
    assert completed["payload"]["status"] == "cancelled"
    assert wait_no_ripgrep(token) == []
    # the session and the tools are free: a grep with a limit ends with it, and says so
    created = await client.request("run/get", {"runId": run_id})
    rerun = await client.request(
        "run/start",
        {
            "sessionId": created["sessionId"],
            "userTurn": [{"type": "text", "text": "again"}],
            "builtinTools": {},
            "toolTimeoutMs": 1_000,
            "script": {"rounds": [call("grep", "g2", pattern=token, path="stuck"), {"text": "x"}]},
        },
    )
    await host.event(rerun["runId"], "run.completed", 10)
    result = host.results(rerun["runId"])["g2"]
    assert host.durations(rerun["runId"])["g2"] < 1.0 + SLACK_S
    assert result["isError"] and text(result).startswith(
        "grep stopped at its time limit of 1 s (the run's tool timeout) before it finished:"
        " 0 matches in 0 files found so far in stuck (a huge tree, or an ignore file that is a"
        " pipe?)"
    )
    assert wait_no_ripgrep(token) == []


async def test_stdin_closed_during_a_stuck_grep(sidecars: SidecarFactory, tmp_path: Path) -> None:
    token = f"stuck{uuid.uuid4().hex[:8]}"
    stuck_dir(tmp_path)
    client = await sidecars.start()
    host = Host(client)
    run_id = await _start(
        client, tmp_path, [call("grep", "g1", pattern=token, path="stuck")], 600_000
    )
    await host.event(run_id, "tool.callRequested")
    await asyncio.sleep(0.3)
    started = time.monotonic()
    client.close_stdin()
    code = await client.wait(10)
    exited = time.monotonic() - started
    assert code == 0
    assert exited < 3.0, exited  # measured ~0.1-0.3 s; slack for a loaded 2-core machine
    assert wait_no_ripgrep(token) == []
