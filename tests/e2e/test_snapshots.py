"""Frozen inputs, content-addressed snapshots, diff, blobs, gc and secrets over real stdio."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sidecar.client import RpcError, SidecarClient
from tests.bodies import unmarked
from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio

FIXTURE = Path(__file__).parent.parent / "data" / "workspaces" / "webapp"
CLOCK = {"date": "2026-11-30", "time": "12:00"}
SECRET = "sk-live-do-not-leak-7f3a9c"


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def msg(role: str, t: str) -> dict[str, Any]:
    return {"kind": "message", "role": role, "content": [text(t)]}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "webapp"
    shutil.copytree(FIXTURE, root)
    git = ["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "fixture"], check=True)
    return root


async def _session(client: SidecarClient, workspace: Path) -> str:
    created = await client.request("session/create", {"workspaceRoots": [str(workspace)]})
    sid: str = created["sessionId"]
    await client.request(
        "session/append",
        {
            "sessionId": sid,
            "entries": [
                msg("user", "What does health() return?"),
                msg("assistant", "A status dict."),
            ],
        },
    )
    return sid


def _freeze_params(sid: str, turn: str) -> dict[str, Any]:
    return {
        "sessionId": sid,
        "userTurn": [text(turn)],
        "clock": CLOCK,
        "attachments": [
            {"kind": "file", "path": "src/api/handlers.py"},
            {"kind": "snippet", "path": "error log", "content": "KeyError: 'version'"},
        ],
        "components": [
            {"identifier": "persona", "content": "You help {{user}}.{{setvar::mood::calm}}"},
            {"identifier": "mood", "content": "Mood: {{getvar::mood}}; turn {{incvar::turns}}."},
        ],
        "macroContext": {"user": "Ada", "char": "Sidecar"},
        "variables": {"local": {"turns": 1}, "global": {}},
        "modelConnection": {
            "connectionRef": "env:CS_TEST_SECRET",
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
            "parameters": {"temperature": 0.2},
        },
    }


async def test_same_input_same_ids_across_restarts(
    sidecars: SidecarFactory, workspace: Path
) -> None:
    first = await sidecars.start()
    sid = await _session(first, workspace)
    frozen = await first.request("input/freeze", _freeze_params(sid, "Add /version."))
    again = await first.request("input/freeze", _freeze_params(sid, "Add /version."))
    assert frozen["inputId"] == again["inputId"]  # same inputs, same id
    input_id = frozen["inputId"]
    snap = await first.request("snapshot/assemble", {"sessionId": sid, "inputId": input_id})
    before = await first.request("input/get", {"inputId": input_id})
    await first.close()

    second = await sidecars.start()
    await second.request("session/append", {"sessionId": sid, "entries": [msg("user", "later")]})
    repeat = await second.request("snapshot/assemble", {"sessionId": sid, "inputId": input_id})
    assert repeat["snapshotId"] == snap["snapshotId"]  # later history is not the input's
    after = await second.request("input/get", {"inputId": input_id})
    assert after == before  # assembly never changes the frozen input

    full = await second.request("snapshot/get", {"snapshotId": snap["snapshotId"]})
    system = {s["id"]: s["text"] for s in full["system"]}
    assert system["component:persona"] == "You help Ada."
    assert system["component:mood"] == "Mood: calm; turn 2."  # setvar seen, on a working copy
    assert after["variables"]["local"] == {"turns": 1}
    assert full["parameters"] == {"temperature": 0.2}
    user_turn = full["messages"][-1]["content"]
    assert any("KeyError: 'version'" in p.get("text", "") for p in user_turn)


async def test_git_reads_snapshots_and_items(
    sidecars: SidecarFactory, workspace: Path, store_dir: Path
) -> None:
    client = await sidecars.start()
    sid = await _session(client, workspace)
    frozen = await client.request("input/freeze", _freeze_params(sid, "Add /version."))
    item = frozen["input"]["attachments"][0]
    hashed = subprocess.run(
        ["git", "-C", str(workspace), "hash-object", "src/api/handlers.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert item["blob"] == hashed  # a tracked file's item id is its git blob id
    assert item["preview"].startswith('"""HTTP handlers')

    snap = await client.request(
        "snapshot/assemble", {"sessionId": sid, "inputId": frozen["inputId"]}
    )
    git_dir = str(store_dir / "blobs")
    shown = subprocess.run(
        ["git", "--git-dir", git_dir, "cat-file", "-p", snap["snapshotId"]],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    items = json.loads(shown)["items"]
    assert [i["path"] for i in items] == ["src/api/handlers.py", "error log"]
    content = subprocess.run(
        ["git", "--git-dir", git_dir, "cat-file", "-p", items[0]["blob"]],
        check=True,
        capture_output=True,
    ).stdout
    assert content == (workspace / "src/api/handlers.py").read_bytes()

    ranged = await client.request("blob/read", {"blob": items[1]["blob"], "offset": 0, "length": 8})
    assert ranged == {
        "blob": items[1]["blob"],
        "size": 19,
        "offset": 0,
        "length": 8,
        "data": "KeyError",
        "encoding": "utf-8",
        "eof": False,
    }
    with pytest.raises(RpcError) as err:
        await client.request("blob/read", {"blob": "0" * 40})
    assert err.value.data_code == "blob.not_found"


def _units(body: dict[str, Any]) -> list[str]:
    return [
        json.dumps(unmarked(u), sort_keys=True)
        for u in (*body["tools"], *body["system"], *body["messages"])
    ]


async def test_diff_predicts_the_cached_prefix(sidecars: SidecarFactory, workspace: Path) -> None:
    client = await sidecars.start()
    sid = await _session(client, workspace)
    params = {
        **_freeze_params(sid, "Add /version."),
        "attachments": [],
        "components": [],
        "tools": [{"name": "read_file", "parameters": {"type": "object"}}],
    }
    one = await client.request("input/freeze", params)
    snap1 = await client.request("snapshot/assemble", {"sessionId": sid, "inputId": one["inputId"]})
    assert snap1["diff"]["fromSnapshot"] is None
    await client.request(
        "session/append",
        {
            "sessionId": sid,
            "entries": [
                msg("user", "Add /version."),
                msg("assistant", "Done: /version returns the tag."),
            ],
        },
    )
    two = await client.request("input/freeze", {**params, "userTurn": [text("Test it.")]})
    snap2 = await client.request("snapshot/assemble", {"sessionId": sid, "inputId": two["inputId"]})
    diff = await client.request("snapshot/diff", {"to": snap2["snapshotId"]})
    assert diff == snap2["diff"] and diff["fromSnapshot"] == snap1["snapshotId"]
    assert diff["messagesBefore"] == 3 and diff["messagesAfter"] == 5

    bodies = []
    for snap in (snap1, snap2):
        lowered = await client.request(
            "snapshot/lower", {"snapshotId": snap["snapshotId"], "target": "anthropic-messages"}
        )
        bodies.append(lowered["body"])
    assert bodies[0]["temperature"] == 0.2  # evaluated parameters merged into the body
    units1, units2 = _units(bodies[0]), _units(bodies[1])
    identical = 0
    while identical < min(len(units1), len(units2)) and units1[identical] == units2[identical]:
        identical += 1
    assert diff["prefixUnits"] == identical > 0
    full = await client.request("snapshot/get", {"snapshotId": snap2["snapshotId"]})
    tool_tokens = [i["tokens"] for i in full["ledger"] if i["kind"] == "tool"]
    unit_tokens = (
        tool_tokens
        + [s["tokens"] for s in full["system"]]
        + [m["tokens"] for m in full["messages"]]
    )
    assert diff["prefixTokens"] == sum(unit_tokens[:identical])
    assert diff["sectionsChanged"] == [] and diff["sectionsAdded"] == []


async def test_profiles_presets_and_rebuild(
    sidecars: SidecarFactory, workspace: Path, store_dir: Path
) -> None:
    client = await sidecars.start()
    sid = await _session(client, workspace)
    preset = await client.request(
        "preset/create",
        {
            "name": "terse",
            "components": [{"identifier": "style", "content": "Be terse, {{user}}."}],
            "parameters": {"top_p": 0.9},
            "maxOutput": 2048,
        },
    )
    profile = await client.request(
        "profile/create",
        {
            "name": "gpt",
            "modelBinding": {
                "provider": "openai",
                "modelId": "gpt-4o",
                "parameters": {"temperature": 0.7},
            },
            "preset": {"mode": "ref", "presetId": preset["presetId"]},
            "agentSystemPrompt": "You are {{char}}.",
        },
    )
    assert (await client.request("profile/list", {}))["profiles"] == [profile]
    frozen = await client.request("input/freeze", _freeze_params(sid, "Hi"))
    snap = await client.request(
        "snapshot/assemble",
        {"sessionId": sid, "inputId": frozen["inputId"], "profileId": profile["profileId"]},
    )
    full = await client.request("snapshot/get", {"snapshotId": snap["snapshotId"]})
    ids = [s["id"] for s in full["system"]]
    assert "agent" in ids and "component:style" in ids and "component:persona" not in ids
    assert full["modelLimits"]["model"] == "gpt-4o" and full["modelLimits"]["maxOutput"] == 2048
    assert full["parameters"] == {"top_p": 0.9, "temperature": 0.7}  # binding overrides
    with pytest.raises(RpcError) as err:
        await client.request("profile/get", {"id": "prf_missing"})
    assert err.value.data_code == "profile.not_found"

    # material gone -> a clear rebuild error that names it
    blob = frozen["input"]["attachments"][1]["blob"]
    os.chmod(store_dir / "blobs" / "objects" / blob[:2], 0o755)
    (store_dir / "blobs" / "objects" / blob[:2] / blob[2:]).unlink()
    with pytest.raises(RpcError) as err:
        await client.request("snapshot/assemble", {"sessionId": sid, "inputId": frozen["inputId"]})
    assert err.value.data_code == "agent.macro_context_rebuild_unavailable"
    assert "attachment error log" in err.value.data["details"]["missing"][0]


async def test_gc_collects_only_unreferenced(
    sidecars: SidecarFactory, workspace: Path, store_dir: Path
) -> None:
    client = await sidecars.start()
    sid = await _session(client, workspace)
    kept = await client.request("input/freeze", _freeze_params(sid, "kept"))
    snap = await client.request("snapshot/assemble", {"sessionId": sid, "inputId": kept["inputId"]})
    orphan = await client.request(
        "input/freeze",
        {
            "sessionId": sid,
            "userTurn": [text("orphan")],
            "clock": CLOCK,
            "attachments": [{"kind": "snippet", "path": "scratch", "content": "only here"}],
        },
    )
    dry = await client.request("store/gc", {"graceSeconds": 0, "dryRun": True})
    assert dry["dryRun"] and dry["collected"] >= 2
    result = await client.request("store/gc", {"graceSeconds": 0})
    assert result["collected"] == dry["collected"]

    for blob in (
        snap["snapshotId"],
        kept["inputId"],
        *(i["blob"] for i in kept["input"]["attachments"]),
    ):
        await client.request("blob/read", {"blob": blob, "length": 1})  # still there
    for blob in (orphan["inputId"], orphan["input"]["attachments"][0]["blob"]):
        with pytest.raises(RpcError):
            await client.request("blob/read", {"blob": blob, "length": 1})
    again = await client.request(
        "snapshot/assemble", {"sessionId": sid, "inputId": kept["inputId"]}
    )
    assert again["snapshotId"] == snap["snapshotId"]


async def test_secrets_never_reach_disk(
    sidecars: SidecarFactory, workspace: Path, store_dir: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    client = await sidecars.start(
        env={"CS_TEST_SECRET": SECRET, "CONTEXT_SIDECAR_TRACE": str(trace)}
    )
    sid = await _session(client, workspace)
    profile = await client.request(
        "profile/create",
        {
            "modelBinding": {
                "connectionRef": "env:CS_TEST_SECRET",
                "provider": "anthropic",
                "modelId": "claude-sonnet-4-5",
            }
        },
    )
    frozen = await client.request("input/freeze", _freeze_params(sid, "go"))
    snap = await client.request(
        "snapshot/assemble",
        {"sessionId": sid, "inputId": frozen["inputId"], "profileId": profile["profileId"]},
    )
    await client.request(
        "snapshot/lower", {"snapshotId": snap["snapshotId"], "target": "anthropic-messages"}
    )
    with pytest.raises(RpcError) as err:  # a credential in parameters is refused at the edge
        await client.request(
            "profile/create", {"modelBinding": {"parameters": {"api_key": SECRET}}}
        )
    assert err.value.code == -32602
    await client.close()
    written = [
        p for p in (*store_dir.rglob("*"), trace, *sidecars.log_dir.rglob("*")) if p.is_file()
    ]
    assert len(written) > 10
    import zlib

    for path in written:
        data = path.read_bytes()
        if "/objects/" in str(path):
            data = zlib.decompress(data)
        assert SECRET.encode() not in data, f"the secret leaked into {path}"


async def test_in_chat_components_and_inspect(
    sidecars: SidecarFactory, workspace: Path, store_dir: Path
) -> None:
    client = await sidecars.start()
    sid = await _session(client, workspace)
    params = {
        **_freeze_params(sid, "Next?"),
        "attachments": [],
        "components": [
            {
                "identifier": "reminder",
                "role": "system",
                "position": "inChat",
                "depth": 1,
                "content": "Remember {{user}} prefers short answers.",
            },
            {"identifier": "off", "enabled": False, "content": "never shown"},
        ],
    }
    frozen = await client.request("input/freeze", params)
    snap = await client.request(
        "snapshot/assemble", {"sessionId": sid, "inputId": frozen["inputId"]}
    )
    full = await client.request("snapshot/get", {"snapshotId": snap["snapshotId"]})
    texts = [m["content"][0]["text"] for m in full["messages"]]
    # depth 1: one message from the end of the transcript, before the user turn
    assert texts == [
        "What does health() return?",
        "[system note] Remember Ada prefers short answers.",
        "A status dict.",
        "Next?",
    ]
    assert "never shown" not in json.dumps(full)
    injected = [i for i in full["ledger"] if i.get("locator") == "reminder"]
    assert injected and injected[0]["reason"] == "preset component injected at depth 1"

    shown = subprocess.run(
        [sys.executable, "-m", "sidecar", "inspect", "--store", str(store_dir), snap["snapshotId"]],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert snap["snapshotId"] in shown.stdout
    assert "input tokens used" in shown.stdout and "transcript" in shown.stdout
    assert "diff (first snapshot)" in shown.stdout
    info = await client.request("server/info", {})
    assert info["storeWritable"] is True  # inspect never took the write lock


async def test_in_chat_components_keep_a_tool_call_with_its_result(
    sidecars: SidecarFactory, workspace: Path
) -> None:
    client = await sidecars.start()
    sid = await _session(client, workspace)
    call = {"type": "toolCall", "callId": "c1", "name": "read_file", "arguments": {"path": "a"}}
    answer = {"type": "toolResult", "callId": "c1", "content": [text("file a")]}
    await client.request(
        "session/append",
        {
            "sessionId": sid,
            "entries": [
                {"kind": "message", "role": "assistant", "content": [call]},
                {"kind": "message", "role": "user", "content": [answer]},
            ],
        },
    )
    params = {
        **_freeze_params(sid, "Next?"),
        "attachments": [],
        "tools": [{"name": "read_file", "description": "Read a file"}],
        "components": [
            # depth 1 falls between the call (seq 3) and its result (seq 4)
            {"identifier": "reminder", "position": "inChat", "depth": 1, "content": "Be brief."}
        ],
    }
    frozen = await client.request("input/freeze", params)
    snap = await client.request(
        "snapshot/assemble", {"sessionId": sid, "inputId": frozen["inputId"]}
    )
    full = await client.request("snapshot/get", {"snapshotId": snap["snapshotId"]})
    kinds = [m["content"][0].get("text", m["content"][0]["type"]) for m in full["messages"]]
    assert kinds == [
        "What does health() return?",
        "A status dict.",
        "[system note] Be brief.",
        "toolCall",
        "toolResult",
        "Next?",
    ]
    for target in ("anthropic-messages", "openai-chat"):
        lowered = await client.request(
            "snapshot/lower", {"snapshotId": snap["snapshotId"], "target": target}
        )
        body = json.dumps(lowered["body"])
        assert "earlier tool call" not in body and "interrupted" not in body, body
        if target == "anthropic-messages":
            assert body.count('"tool_use"') == body.count('"tool_result"') == 1
        else:
            assert body.count('"tool_call_id": "c1"') == 1 and '"tool_calls"' in body
