"""``context-sidecar acp`` at start: a ``--profile`` path that does not exist is named, with
exit code 2 and no traceback (not taken for a stored profile's id and refused at the first
prompt, ``no prf document``); and stdin of any kind is read, to its end."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest

from sidecar.client import sidecar_command


@pytest.mark.parametrize("given", ["{tmp}/nowhere/profile.json", "profile.json", "./p", "~/x"])
def test_a_missing_profile_file_is_named_at_start(tmp_path: Path, given: str) -> None:
    value = given.format(tmp=tmp_path)
    done = subprocess.run(
        sidecar_command("acp", "--store", str(tmp_path / "store"), "--profile", value),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("context-sidecar acp: profile file ")
    assert "does not exist" in line and Path(value).expanduser().name in line
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("stdin", ["devnull", "file"])
def test_stdin_that_epoll_cannot_watch_is_read_all_the_same(tmp_path: Path, stdin: str) -> None:
    """``acp < /dev/null`` (asyncio takes the device for a pipe, epoll refuses it) and
    ``acp < requests.jsonl``: read on a thread, answered, and the process ends at EOF —
    it used to log a traceback and never read."""
    source = tmp_path / "requests.jsonl"
    source.write_text(
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
    )
    with open(os.devnull if stdin == "devnull" else source, "rb") as handle:
        done = subprocess.run(
            sidecar_command("acp", "--store", str(tmp_path / "store")),
            stdin=handle,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "ERROR" not in done.stderr, done.stderr
    if stdin == "file":
        answer = json.loads(done.stdout.splitlines()[0])
        assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1
    else:
        assert done.stdout == ""


def test_an_error_answered_with_id_null_is_logged_as_what_it_is(tmp_path: Path) -> None:
    """Toad answers a notification it does not know with an error whose ``id`` is null
    (JSON-RPC's answer to what cannot be tied to a request): logged at info as that, not
    warned about as a malformed message, and nothing is sent back."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32601, "message": "Method not found"}},
    ]
    done = subprocess.run(
        sidecar_command("acp", "--store", str(tmp_path / "store"), "-v"),
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(out)["id"] for out in done.stdout.splitlines()] == [1]
    assert "WARNING" not in done.stderr, done.stderr
    assert "answered an error with id null: -32601 'Method not found'" in done.stderr


@pytest.mark.anyio
async def test_a_missing_profile_file_through_the_sdk(tmp_path: Path) -> None:
    """As an editor meets it (the official SDK spawning the agent): the process ends at start
    with exit code 2, its log naming the file; the editor's first request fails at once."""
    from acp.schema import ClientCapabilities

    from tests.e2e.acp_kit import acp_agent

    missing = tmp_path / "nowhere" / "profile.json"
    codes: list[int] = []
    with pytest.raises(Exception):  # noqa: B017 - the SDK's error for a closed pipe varies
        async with acp_agent(
            tmp_path, tmp_path / "store", "--profile", str(missing), killed=True
        ) as (conn, editor):
            assert editor.process is not None
            codes.append(await asyncio.wait_for(editor.process.wait(), 30))
            await asyncio.wait_for(
                conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities()), 10
            )
    assert codes == [2]
    log = (tmp_path / "acp.log").read_text()
    assert f"profile file {missing} does not exist" in log and "Traceback" not in log
