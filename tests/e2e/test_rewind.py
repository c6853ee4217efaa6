"""Rewind (issue 44) through a real ``serve`` process, a loopback OpenAI Responses server and a
real git repository: the built-in tools change the workspace over two turns, and the
checkpoints put it back.

Turn 1 edits the tracked file and writes a new one; turn 2 edits it again, and a command
deletes the untracked file and makes another.  Restoring the checkpoint before turn 2 puts
every file back byte for byte (permissions too), removes the command's file, brings back the
deleted one; ``.git/`` is byte-identical after every checkpoint and restore; the ignored
``node_modules/`` never reaches the store; the conversation forks before turn 2's user
message and the original session is intact; an edit made outside the agent is a conflict
without ``force``; the restore is undone by restoring the checkpoint it took.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sidecar.client import RpcError, SidecarClient
from sidecar.store.blobs import git_blob_id
from tests.conftest import SidecarFactory
from tests.e2e.rewind_kit import files_of, git_dir_hash, make_repo, store_has_object
from tests.e2e.test_runs import Host
from tests.unit.test_openai_responses import Call, responses_stream
from tests.unit.test_providers import FakeServer, Reply

pytestmark = pytest.mark.anyio

KEY_ENV = "CS_REWIND_TEST_KEY"


def _call(call_id: str, name: str, **arguments: Any) -> Call:
    return Call(f"fc_{call_id}", call_id, name, json.dumps(arguments))


async def _turn(
    client: SidecarClient, host: Host, sid: str, server: FakeServer, text: str, *rounds: Reply
) -> list[dict[str, Any]]:
    server.script(*rounds)
    started = await client.request(
        "run/start",
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": text}],
            "builtinTools": {"mode": "allow_all"},
            "profile": {
                "modelBinding": {
                    "provider": "openai-responses",
                    "modelId": "gpt-5-codex",
                    "baseUrl": server.url + "/v1",
                    "connectionRef": f"env:{KEY_ENV}",
                }
            },
        },
    )
    events = await host.until_done(started["runId"], timeout=60)
    assert events[-1]["payload"] == {"status": "completed"}, events[-1]
    return events


def _reply(*items: Call | str) -> Reply:
    return Reply(body=responses_stream(*items))


async def test_rewind_a_two_turn_task(sidecars: SidecarFactory, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    big = make_repo(repo)
    git_before = git_dir_hash(repo)
    server = FakeServer()
    await server.start()
    client = await sidecars.start(env={KEY_ENV: "sk-loopback", "NO_PROXY": "127.0.0.1"})
    host = Host(client)
    created = await client.request(
        "session/create", {"title": "rewind", "workspaceRoots": [str(repo)]}
    )
    sid = created["sessionId"]
    try:
        await _turn(
            client,
            host,
            sid,
            server,
            "add line 5 and a changelog",
            _reply(
                _call("e1", "edit_file", path="tracked.txt", old_text="4\n", new_text="4\n5\n"),
                _call("w1", "write_file", path="docs/CHANGES.md", content="# Changes\n"),
            ),
            _reply("Done."),
        )
        assert git_dir_hash(repo) == git_before
        after_turn_1 = files_of(repo)
        turn_2_head = (await client.request("session/get", {"sessionId": sid}))["headSeq"]
        command = "rm untracked.txt && mkdir -p out && printf 'made\\n' > out/made.txt"
        await _turn(
            client,
            host,
            sid,
            server,
            "one more line, and clean up",
            _reply(_call("e2", "edit_file", path="tracked.txt", old_text="5\n", new_text="5\n6\n")),
            _reply(_call("c1", "run_command", command=command)),
            _reply("Cleaned up."),
        )
    finally:
        await server.stop()
    assert git_dir_hash(repo) == git_before
    assert not (repo / "untracked.txt").exists() and (repo / "out" / "made.txt").exists()
    after_turn_2 = files_of(repo)

    listed = await client.request("checkpoint/list", {"sessionId": sid})
    reasons = [c["reason"] for c in listed["checkpoints"]]
    # newest first: turn 2 (turn, edit, command), turn 1 (turn, edit, edit)
    assert reasons == ["command", "edit", "turn", "edit", "edit", "turn"], reasons
    before_2 = listed["checkpoints"][2]
    assert before_2["seq"] == turn_2_head + 1 == before_2["turnSeq"]
    assert before_2["changedFiles"] == 3  # tracked.txt, untracked.txt, out/made.txt
    assert listed["checkpoints"][0]["tool"] == "run_command"

    # node_modules was never read into the store, and .git is untouched
    store = sidecars.store
    assert not store_has_object(store, git_blob_id(big))
    index_js = git_blob_id(b"module.exports = 1;\n")
    assert not store_has_object(store, index_js)
    assert store_has_object(store, git_blob_id(b"notes nobody committed\n"))

    diff = await client.request(
        "checkpoint/diff", {"sessionId": sid, "checkpointId": before_2["checkpointId"]}
    )
    changes = {f["path"]: f for f in diff["files"]}
    assert {p: f["change"] for p, f in changes.items()} == {
        "tracked.txt": "modified",
        "untracked.txt": "deleted",
        "out/made.txt": "added",
    }
    assert "+6\n" in changes["tracked.txt"]["diff"]
    assert changes["tracked.txt"]["before"] == git_blob_id(after_turn_1["tracked.txt"][1])

    # an edit outside the agent: a conflict, and nothing is written without force
    (repo / "docs" / "CHANGES.md").write_text("# Changes\nby hand\n")
    (repo / "tracked.txt").write_text("edited by hand\n")
    edited = files_of(repo)
    refused = await client.request(
        "checkpoint/restore",
        {
            "sessionId": sid,
            "checkpointId": before_2["checkpointId"],
            "files": True,
            "conversation": False,
        },
    )
    assert refused["status"] == "conflicts"
    assert [c["path"] for c in refused["conflicts"]] == ["docs/CHANGES.md", "tracked.txt"]
    assert "changed outside the agent" in refused["conflicts"][0]["reason"]
    assert refused.get("undoCheckpointId") is None
    assert files_of(repo) == edited
    count = (await client.request("checkpoint/list", {"sessionId": sid}))["total"]
    assert count == 6  # no checkpoint taken for a refused restore

    restored = await client.request(
        "checkpoint/restore",
        {
            "sessionId": sid,
            "checkpointId": before_2["checkpointId"],
            "files": True,
            "conversation": False,
            "force": True,
        },
    )
    assert restored["status"] == "restored"
    assert {r["path"]: r["action"] for r in restored["restored"]} == {
        "tracked.txt": "written",
        "untracked.txt": "created",
        "out/made.txt": "deleted",
        "docs/CHANGES.md": "written",
    }
    assert files_of(repo) == after_turn_1  # bytes, permissions, links; made.txt gone
    assert not (repo / "out").exists()
    assert (repo / "node_modules" / "pkg" / "big.bin").read_bytes() == big
    assert (repo / "debug.log").read_text() == "ignored\n"
    assert git_dir_hash(repo) == git_before

    # the restore is undone by restoring the checkpoint it took
    undo = restored["undoCheckpointId"]
    undone = await client.request(
        "checkpoint/restore",
        {"sessionId": sid, "checkpointId": undo, "files": True, "conversation": False},
    )
    assert undone["status"] == "restored", undone
    assert files_of(repo) == edited
    assert git_dir_hash(repo) == git_before
    assert after_turn_2 != edited

    # the conversation forks before turn 2's user message; the original is intact
    original = await client.request("session/read", {"sessionId": sid})
    forked = await client.request(
        "checkpoint/restore",
        {
            "sessionId": sid,
            "checkpointId": before_2["checkpointId"],
            "files": False,
            "conversation": True,
        },
    )
    fork_id = forked["forkedSessionId"]
    fork = await client.request("session/read", {"sessionId": fork_id})
    assert fork["headSeq"] == turn_2_head
    assert fork["entries"] == original["entries"][:turn_2_head]
    assert fork["entries"][-1]["role"] == "assistant"
    again = await client.request("session/read", {"sessionId": sid})
    assert again["entries"] == original["entries"]
    assert files_of(repo) == edited  # conversation only: no file touched

    # the snapshot of turn 2 names the checkpoint its turn saw
    index = (store / "sessions" / sid / "snapshots.jsonl").read_text().splitlines()
    last = json.loads(index[-1])["snapshotId"]
    snapshot = await client.request("snapshot/get", {"snapshotId": last})
    assert snapshot["checkpointId"] == before_2["checkpointId"]

    stats = await client.request("store/stats", {})
    assert stats["checkpoints"]["count"] == 8  # six, and one before each restore
    assert stats["checkpoints"]["objects"] > 0 < stats["checkpoints"]["bytes"]
    if sys.platform.startswith("linux"):  # every capture after the first from the watcher
        assert list(stats["checkpoints"]["watchers"].values()) == ["on"]


async def test_rewind_errors(sidecars: SidecarFactory, tmp_path: Path) -> None:
    client = await sidecars.start()
    bare = await client.request("session/create", {"title": "no roots"})
    sid = bare["sessionId"]
    assert (await client.request("checkpoint/list", {"sessionId": sid})) == {
        "checkpoints": [],
        "total": 0,
    }
    for method, params, code in (
        ("checkpoint/diff", {"checkpointId": "ckpt_nope"}, "checkpoint.not_found"),
        (
            "checkpoint/restore",
            {"checkpointId": "ckpt_nope", "files": True, "conversation": False},
            "checkpoint.not_found",
        ),
        (
            "checkpoint/restore",
            {"checkpointId": "ckpt_nope", "files": False, "conversation": False},
            "params.invalid",
        ),
        ("checkpoint/list", {"sessionId": "ses_nope"}, "session.not_found"),
    ):
        with pytest.raises(RpcError) as err:
            await client.request(method, {"sessionId": sid, **params})
        assert err.value.data_code == code, (method, params)
