"""A built-in ``run_command`` through the real ``serve`` process: its whole process tree ends
with the call, and with the sidecar (``kill -9`` included); a resumed run does not run a
command that had started a second time, it says it was interrupted; the sidecar's secrets
never reach a command (issue 40, items 3 and 4)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sidecar.client import SidecarClient
from tests.conftest import SidecarFactory

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform != "linux", reason="the subreaper wrapper and /proc"),
]

SECRETS = {
    "DATABASE_URL": "postgres://u:pw-db-9@h/db",
    "GH_PAT": "ghp_" + "Zq9x" * 9,
    "SENTRY_DSN": "https://f00dkey77@o1.ingest.sentry.io/42",
    "PGPASS": "pgpass-value-1",
    "MY_APP_PWD": "app-pwd-value-2",
    "OPENAI_API_KEY": "sk-" + "T3st" * 10,
    "PLAIN_SETTING": "fine",
}


def marked(prefix: str) -> list[int]:
    """Live processes whose environment carries ``CONTEXT_SIDECAR_CALL=<prefix>…``."""
    wanted = f"CONTEXT_SIDECAR_CALL={prefix}".encode()
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if any(v.startswith(wanted) for v in f.read().split(b"\0")):
                    found.append(int(entry))
        except (OSError, ValueError):
            continue
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Host:
    def __init__(self, client: SidecarClient) -> None:
        self.events: list[dict[str, Any]] = []
        client.on_notification(self._notified)

    def _notified(self, method: str, params: Any) -> None:
        if method == "run/event":
            self.events.append(params)

    async def until_done(self, run_id: str, timeout: float = 20) -> list[dict[str, Any]]:
        def mine() -> list[dict[str, Any]]:
            return [e for e in self.events if e["runId"] == run_id]

        async def wait() -> None:
            while not any(e["type"] == "run.completed" for e in mine()):
                await asyncio.sleep(0.01)

        await asyncio.wait_for(wait(), timeout)
        return mine()


async def until(predicate: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.01)


def command(call_id: str, text: str) -> dict[str, Any]:
    return {"toolCalls": [{"id": call_id, "name": "run_command", "arguments": {"command": text}}]}


def stored(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        e["payload"]["callId"]: e["payload"] for e in events if e["type"] == "tool.resultStored"
    }


async def start_run(client: SidecarClient, root: Path, rounds: list[dict[str, Any]]) -> str:
    created = await client.request(
        "session/create", {"title": "commands", "workspaceRoots": [str(root)]}
    )
    started = await client.request(
        "run/start",
        {
            "sessionId": created["sessionId"],
            "userTurn": [{"type": "text", "text": "run it"}],
            "builtinTools": {"mode": "allow_all", "env": ["PLAIN_SETTING"]},
            "toolTimeoutMs": 60_000,
            "script": {"rounds": rounds},
        },
    )
    return str(started["runId"])


async def test_a_commands_leftovers_end_with_it_and_no_secret_reaches_it(
    sidecars: SidecarFactory, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    client = await sidecars.start(env=SECRETS)
    host = Host(client)
    leave = (
        "setsid sleep 300 & echo $! > a; "
        "nohup sleep 301 >/dev/null 2>&1 & echo $! > b; "
        "(sleep 302 & echo $! > c); echo left"
    )
    run_id = await start_run(
        client, root, [command("c1", leave), command("c2", "env"), {"text": "done"}]
    )
    events = await host.until_done(run_id)
    assert events[-1]["payload"] == {"status": "completed"}
    results = stored(events)
    assert results["c1"]["content"][0]["text"] == "left\n[exit code 0]"
    left = [pid for pid in (int((root / n).read_text()) for n in "abc") if alive(pid)]
    assert left == [], "a setsid, nohup or double-forked child outlived its call"
    env = results["c2"]["content"][0]["text"]
    assert f"\nPATH={os.environ['PATH']}\n" in f"\n{env}"
    assert f"\nHOME={os.environ['HOME']}\n" in f"\n{env}"
    assert "PLAIN_SETTING=fine" in env  # the run's builtinTools.env names it
    assert f"CONTEXT_SIDECAR_CALL={run_id}/c2" in env
    for name, value in SECRETS.items():
        if name != "PLAIN_SETTING":
            assert f"{name}=" not in env and value not in env, name


@pytest.mark.parametrize("killed", ["sidecar", "sidecar-and-wrapper"])
async def test_kill_9_during_a_command_ends_it_and_a_resume_does_not_run_it_again(
    sidecars: SidecarFactory, tmp_path: Path, killed: str
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    client = await sidecars.start()
    run_id = await start_run(
        client,
        root,
        [command("c1", "echo ran >> log; setsid sleep 300 & sleep 300"), {"text": "done"}],
    )
    # running: the wrapper, sh, the setsid'd sleep and the other one
    await until(lambda: (root / "log").exists() and len(marked(f"{run_id}/")) >= 4)
    if killed == "sidecar-and-wrapper":  # the wrapper cannot end the tree: the resume must
        wrapper = next(
            pid
            for pid in marked(f"{run_id}/")
            if b"command_reaper" in Path(f"/proc/{pid}/cmdline").read_bytes()
        )
        os.kill(wrapper, signal.SIGKILL)
    client.kill()
    await client.wait()
    killed_at = time.monotonic()
    if killed == "sidecar":
        await until(lambda: not marked(f"{run_id}/"), timeout=1.0)
        assert time.monotonic() - killed_at < 1.0
    else:
        await asyncio.sleep(0.3)
        assert len(marked(f"{run_id}/")) >= 2, "nothing left for the resume to end"

    restarted = await sidecars.start()
    host = Host(restarted)
    resumed = await restarted.request("run/resume", {"runId": run_id})
    # ended before the resumed run ran anything (before it was even answered)
    assert marked(f"{run_id}/") == []
    events = await host.until_done(resumed["runId"])
    assert events[-1]["payload"] == {"status": "completed"}
    result = stored(events)["c1"]
    assert result["isError"] and result["content"][0]["text"].startswith(
        "interrupted: the sidecar stopped while this command ran"
    )
    assert (root / "log").read_text() == "ran\n"  # not run a second time
    deltas = [e["payload"]["text"] for e in events if e["type"] == "model.delta"]
    assert deltas == ["done"]  # and the model went on


async def test_stdin_closed_during_a_command_ends_the_process_and_the_command(
    sidecars: SidecarFactory, tmp_path: Path
) -> None:
    """The client goes while a command (and a ``setsid`` grandchild) runs: the sidecar exits
    within a second or so, and nothing of the command is left."""
    root = tmp_path / "ws"
    root.mkdir()
    client = await sidecars.start()
    host = Host(client)
    run_id = await start_run(
        client, root, [command("c1", "setsid sleep 300 & sleep 300"), {"text": "never"}]
    )
    await until(lambda: len(marked(run_id)) >= 3)  # the wrapper, sh, the sleeps
    assert any(e["type"] == "tool.callRequested" for e in host.events)
    started = time.monotonic()
    client.close_stdin()
    code = await client.wait(15)
    exited = time.monotonic() - started
    assert code == 0
    await until(lambda: marked(run_id) == [], timeout=5)
    assert exited < 3.0, exited  # well under a second here; slack for a loaded 2-core machine
