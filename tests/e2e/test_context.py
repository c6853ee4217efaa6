"""The context pipeline over real stdio, in a fixture workspace (tests/data/workspaces/webapp)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from protocol import methods as m
from protocol.context import AssembledPrompt, ContextAssembleResult
from sidecar.client import RpcError, SidecarClient
from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio

FIXTURE = Path(__file__).parent.parent / "data" / "workspaces" / "webapp"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "webapp"
    shutil.copytree(FIXTURE, root)
    (root / ".git").mkdir()  # the project-root marker (a fixture cannot commit a .git dir)
    return root


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def msg(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "message", "role": role, "content": list(parts)}


async def _session(client: SidecarClient, workspace: Path) -> str:
    created = await client.request("session/create", {"workspaceRoots": [str(workspace)]})
    sid: str = created["sessionId"]
    await client.request(
        "session/append",
        {
            "sessionId": sid,
            "entries": [
                msg("user", text("Add a /version endpoint.")),
                msg(
                    "assistant",
                    text("Reading the handlers first."),
                    {
                        "type": "toolCall",
                        "callId": "c1",
                        "name": "read_file",
                        "arguments": {"path": "src/api/handlers.py"},
                    },
                ),
                msg(
                    "user",
                    {
                        "type": "toolResult",
                        "callId": "c1",
                        "content": [text("def health() -> dict[str, str]: ...")],
                    },
                ),
                msg("assistant", text("Added `version()` next to `health()`.")),
            ],
        },
    )
    return sid


async def test_sources_and_skills(sidecars: SidecarFactory, workspace: Path) -> None:
    client = await sidecars.start(env={"HOME": str(workspace.parent / "home")})
    sid = await _session(client, workspace)
    sources = await client.request(
        "context/sources", {"sessionId": sid, "mentionedPaths": ["src/api/handlers.py"]}
    )
    by_path = {f["path"]: f for f in sources["instructions"]}
    assert sources["projectRoot"] == str(workspace)
    assert by_path["AGENTS.md"]["applies"] and by_path["AGENTS.md"]["scope"] == "."
    assert by_path["src/api/AGENTS.md"]["applies"]
    assert by_path["docs/AGENTS.md"]["applies"] is False
    assert [s["name"] for s in sources["skills"]] == ["release-notes"]

    listed = await client.request("skills/list", {"sessionId": sid})
    assert listed["skills"][0]["description"].startswith("Draft release notes")
    activated = await client.request("skills/activate", {"sessionId": sid, "name": "release-notes"})
    assert [r["path"] for r in activated["references"]] == ["template.md"]
    assert activated["entry"]["seq"] == 5
    with pytest.raises(RpcError) as err:
        await client.request("skills/activate", {"sessionId": sid, "name": "nope"})
    assert err.value.data_code == "skills.not_found"


async def test_assemble_explains_what_the_model_sees(
    sidecars: SidecarFactory, workspace: Path
) -> None:
    client = await sidecars.start(env={"HOME": str(workspace.parent / "home")})
    sid = await _session(client, workspace)
    await client.request("skills/activate", {"sessionId": sid, "name": "release-notes"})
    await client.request(
        "session/pin",
        {"sessionId": sid, "target": {"kind": "file", "locator": "src/api/handlers.py"}},
    )
    await client.request(
        "context/registerSource",
        {
            "sessionId": sid,
            "source": {
                "id": "rag",
                "title": "search results",
                "text": "FastAPI routing docs …",
                "priority": 5,
            },
        },
    )
    result = await client.request(
        "context/assemble",
        {
            "sessionId": sid,
            "userTurn": [text("Now document it.")],
            "mentionedPaths": ["docs/api.md"],
            "date": "2026-11-30",
            "tools": [
                {
                    "name": "read_file",
                    "description": "Read a file",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                }
            ],
        },
    )
    prompt = AssembledPrompt.model_validate(
        {k: v for k, v in result.items() if k != "body"}, by_alias=True, by_name=False
    )

    section_ids = [s.id for s in prompt.system]
    assert section_ids[:8] == [
        "fragment:base_identity",
        "fragment:communication_style",
        "fragment:action_model",
        "fragment:edit_guidance",
        "fragment:action_safety",
        "fragment:self_knowledge",
        "fragment:web_source_guidance",
        "environment",
    ]
    # root instruction first, the docs one applies (mentioned path), src/api via the pin
    assert section_ids[8:11] == [
        "instruction:AGENTS.md",
        "instruction:docs/AGENTS.md",
        "instruction:src/api/AGENTS.md",
    ]
    assert section_ids[11:] == [
        "skills:catalog",
        "skill:release-notes",
        "pin:src/api/handlers.py",
        "host:rag",
    ]
    env = next(s for s in prompt.system if s.id == "environment")
    assert "date: 2026-11-30" in env.text and str(workspace) in env.text

    roles = [(msg.role, msg.content[0].type) for msg in prompt.messages]
    assert roles == [
        ("user", "text"),
        ("assistant", "text"),
        ("user", "toolResult"),
        ("assistant", "text"),
        ("user", "text"),
    ]
    assert prompt.messages[-1].provenance[0].kind == "userTurn"

    reasons = {(i.kind, i.locator): (i.visibility, i.reason) for i in prompt.ledger}
    assert reasons[("pin", "src/api/handlers.py")] == ("pinned", "pinned")
    assert reasons[("instruction", "docs/AGENTS.md")][0] == "visible"
    assert reasons[("host", "rag")] == ("visible", "host source (priority 5)")
    assert reasons[("userTurn", None)][1] == "the current user turn: never evicted"
    tool_call_group = [i for i in prompt.ledger if i.kind == "transcript" and i.from_seq == 2]
    assert tool_call_group and tool_call_group[0].through_seq == 3  # call + result: one item

    board = prompt.dashboard
    assert sum(board.categories.values()) == board.used
    assert board.categories["instructions"] == sum(
        s.tokens for s in prompt.system if s.category == "instructions"
    )
    assert board.categories["pinned"] > 0 and board.categories["host"] > 0
    assert board.free == board.available_input - board.used
    assert prompt.model_limits.source == "table" and prompt.tokenizer == "cl100k_base"
    assert prompt.instructions_diff.added == ["AGENTS.md", "docs/AGENTS.md", "src/api/AGENTS.md"]

    lowered = await client.request(
        "context/assemble",
        {
            "sessionId": sid,
            "userTurn": [text("Now document it.")],
            "date": "2026-11-30",
            "mentionedPaths": ["docs/api.md"],
            "lowerTo": "anthropic-messages",
        },
    )
    body = lowered["body"]
    assert body["model"] == prompt.model_limits.model
    assert [b["type"] for b in body["system"]] == ["text"] * len(lowered["system"])
    assert body["system"][0]["text"].startswith(lowered["system"][0]["text"])
    assert body["messages"][-1]["role"] == "user"
    assert lowered["messages"] == result["messages"]  # spliced JSON equals the dict form

    # a second assembly reports no instruction change; an edit shows up in the diff
    (workspace / "AGENTS.md").write_text("# webapp\n\n- changed rules\n")
    again = await client.request(
        "context/assemble", {"sessionId": sid, "userTurn": [text("and?")], "date": "2026-11-30"}
    )
    assert again["instructionsDiff"]["changed"] == ["AGENTS.md"]
    assert again["instructionsDiff"]["added"] == []


async def test_drop_recover_and_compact(sidecars: SidecarFactory, workspace: Path) -> None:
    client = await sidecars.start()
    sid = await _session(client, workspace)
    await client.request(
        "session/drop",
        {"sessionId": sid, "target": {"kind": "range", "fromSeq": 2, "throughSeq": 3}},
    )
    dropped = await client.request(
        "context/assemble", {"sessionId": sid, "userTurn": [text("x")], "date": "2026-11-30"}
    )
    assert [m["provenance"][0].get("fromSeq") for m in dropped["messages"][:-1]] == [1, 4]
    assert any(i["visibility"] == "dropped" and i.get("fromSeq") == 2 for i in dropped["ledger"])

    await client.request(
        "session/recover",
        {"sessionId": sid, "target": {"kind": "range", "fromSeq": 2, "throughSeq": 3}},
    )
    await client.request(
        "session/compact",
        {"sessionId": sid, "summary": "User wants /version.", "throughSeq": 4, "keepFromSeq": 4},
    )
    compacted = await client.request(
        "context/assemble", {"sessionId": sid, "userTurn": [text("x")], "date": "2026-11-30"}
    )
    summary = compacted["system"][-1]
    assert summary["category"] == "summary"
    assert summary["text"] == (
        "<conversation-checkpoint><summary>User wants /version.</summary></conversation-checkpoint>"
    )
    # the kept tail (seq 4) starts with an assistant message: trimmed to start on a user turn;
    # the user's archived message is shown verbatim before it (keepUserMessages)
    assert [m["role"] for m in compacted["messages"]] == ["user", "user"]
    kept = compacted["messages"][0]
    assert kept["provenance"][0]["kind"] == "summary"
    assert kept["content"][1] == text("Add a /version endpoint.")
    archived = [i for i in compacted["ledger"] if i["visibility"] == "summaryOnly"]
    assert archived and archived[0]["fromSeq"] == 1 and archived[0]["throughSeq"] == 3

    with pytest.raises(RpcError) as err:
        await client.request(
            "session/compact", {"sessionId": sid, "summary": "s", "throughSeq": 99}
        )
    assert err.value.data_code == "session.seq_out_of_range"


READ_FILE = {
    "name": "read_file",
    "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}


async def test_a_summary_that_does_not_fit_gives_way_to_the_archived_history(
    sidecars: SidecarFactory, workspace: Path
) -> None:
    client = await sidecars.start()
    sid = await _session(client, workspace)
    await client.request(
        "session/compact", {"sessionId": sid, "summary": "word " * 5000, "throughSeq": 4}
    )
    result = await client.request(
        "context/assemble",
        {
            "sessionId": sid,
            "userTurn": [text("x")],
            "date": "2026-11-30",
            "tools": [READ_FILE],
            "profile": {"model": "tiny", "window": 4096, "maxOutput": 256},
            "lowerTo": "anthropic-messages",
        },
    )
    ContextAssembleResult.model_validate(result)
    assert not any(s["category"] == "summary" for s in result["system"])
    summary = [i for i in result["ledger"] if i["kind"] == "summary"]
    assert [i["visibility"] for i in summary] == ["blocked"]
    assert summary[0]["reason"].endswith("; the archived history 1-4 is offered instead")
    assert not any(i["visibility"] == "summaryOnly" for i in result["ledger"])
    # the history the summary stood for is shown again, the tool exchange whole
    assert [m["provenance"][0].get("fromSeq") for m in result["messages"][:-1]] == [1, 2, 3, 4]
    blocks = [b["type"] for m in result["body"]["messages"] for b in m["content"]]
    assert blocks.count("tool_use") == blocks.count("tool_result") == 1
    omitted = [d for d in result["diagnostics"] if d["code"] == "context.summary_omitted"]
    assert len(omitted) == 1 and "larger than the whole input budget" in omitted[0]["message"]


async def test_pinning_a_tool_result_pins_the_call_with_it(
    sidecars: SidecarFactory, workspace: Path
) -> None:
    client = await sidecars.start()
    sid = await _session(client, workspace)
    await client.request(
        "session/append",
        {"sessionId": sid, "entries": [msg("user", text("word " * 400)) for _ in range(12)]},
    )
    await client.request(
        "session/pin",
        {"sessionId": sid, "target": {"kind": "range", "fromSeq": 3, "throughSeq": 3}},
    )
    for target in ("anthropic-messages", "openai-chat"):
        result = await client.request(
            "context/assemble",
            {
                "sessionId": sid,
                "userTurn": [text("x")],
                "date": "2026-11-30",
                "tools": [READ_FILE],
                "profile": {"model": "tiny", "window": 6000, "maxOutput": 256},
                "lowerTo": target,
            },
        )
        pinned = [i for i in result["ledger"] if i["visibility"] == "pinned"]
        assert [(i["fromSeq"], i["throughSeq"]) for i in pinned] == [(2, 3)]
        # the older turns did not fit: the pinned exchange is shown alone, once, whole
        assert any(i["visibility"] == "candidate" for i in result["ledger"])
        shown = [m["provenance"][0]["fromSeq"] for m in result["messages"][:-1]]
        assert shown[:2] == [2, 3] and 1 not in shown and shown.count(2) == 1
        body = json.dumps(result["body"])
        assert "interrupted" not in body and "earlier tool call" not in body
        if target == "anthropic-messages":
            assert body.count('"tool_use"') == body.count('"tool_result"') == 1
        else:
            assert body.count('"tool_call_id": "c1"') == 1 and '"tool_calls"' in body


async def test_old_tool_results_are_masked_and_recover_brings_one_back(
    sidecars: SidecarFactory, workspace: Path
) -> None:
    client = await sidecars.start()
    created = await client.request("session/create", {"workspaceRoots": [str(workspace)]})
    sid = created["sessionId"]
    entries = []
    for i in range(8):
        call = {
            "type": "toolCall",
            "callId": f"c{i}",
            "name": "read_file",
            "arguments": {"path": f"src/m{i}.py"},
        }
        result = {"type": "toolResult", "callId": f"c{i}", "content": [text("code " * 800)]}
        entries += [
            msg("user", text(f"step {i}")),
            msg("assistant", text("reading"), call),
            msg("user", result),
            msg("assistant", text(f"done {i}")),
        ]
    await client.request("session/append", {"sessionId": sid, "entries": entries})
    params = {
        "sessionId": sid,
        "userTurn": [text("next?")],
        "date": "2026-11-30",
        "tools": [READ_FILE],
        "profile": {"masking": {"protectTokens": 2000, "batchTokens": 1000}},
        "lowerTo": "anthropic-messages",
    }
    result = await client.request("context/assemble", params)
    ContextAssembleResult.model_validate(result)
    masked = sorted(
        (i for i in result["ledger"] if i["visibility"] == "masked"), key=lambda i: i["fromSeq"]
    )
    # 8 results of ~805 tokens (6,440): the batch line 4,000 crossed, masked through the
    # protect line where the output crossed it (the newest result reached 6,000: 4,440)
    assert [i["fromSeq"] for i in masked] == [3, 7, 11, 15, 19]
    assert all("session/recover shows it in full" in i["reason"] for i in masked)
    blocks = [b for m in result["body"]["messages"] for b in m["content"]]
    assert sum(b["type"] == "tool_use" for b in blocks) == 8
    results = [b for b in blocks if b["type"] == "tool_result"]
    assert len(results) == 8
    placeholder = json.dumps(results[0])
    assert 'read_file {\\"path\\": \\"src/m0.py\\"}' in placeholder
    assert masked[0]["itemId"] in placeholder
    assert "masked" in result["dashboard"]["summary"]
    state = result["dashboard"]["masking"]
    assert state["maskedResults"] == 5 and state["protectTokens"] == 2000
    assert state["maskedTokens"] == sum(i["tokens"] for i in masked)
    # the batch line (4,000) moves to 5,000 once the tool output passes 7,000
    assert state["nextMoveIn"] == 5000 + 2000 - state["toolTokens"] > 0
    window = result["dashboard"]["historyWindow"]
    # the nearest cap: the default working budget (historyWindow.workingTokens, 64k)
    assert window["startSeq"] is None and window["boundBy"] == "maxTokens"
    assert window["limit"] == 64_000
    assert window["roomLeft"] == window["limit"] - result["dashboard"]["categories"]["transcript"]

    await client.request(
        "session/recover",
        {"sessionId": sid, "target": {"kind": "item", "itemId": masked[0]["itemId"]}},
    )
    recovered = await client.request("context/assemble", params)
    still = sorted(i["fromSeq"] for i in recovered["ledger"] if i["visibility"] == "masked")
    assert still == [7, 11, 15, 19]
    first = next(m for m in recovered["messages"] if m["provenance"][0].get("fromSeq") == 3)
    assert first["content"][0]["content"] == [text("code " * 800)]

    off = await client.request(
        "context/assemble", {**params, "profile": {"masking": "off"}, "lowerTo": None}
    )
    assert not any(i["visibility"] == "masked" for i in off["ledger"])


async def test_user_turn_over_budget_is_a_clear_error(
    sidecars: SidecarFactory, workspace: Path
) -> None:
    client = await sidecars.start()
    sid = await _session(client, workspace)
    with pytest.raises(RpcError) as err:
        await client.request(
            "context/assemble",
            {
                "sessionId": sid,
                "userTurn": [text("word " * 5000)],
                "profile": {"model": "tiny", "window": 2048, "maxOutput": 256},
            },
        )
    assert err.value.data_code == "context.budget_exceeded"
    assert err.value.data["details"]["userTurnTokens"] > 4000


async def test_the_model_catalog_over_the_wire(sidecars: SidecarFactory, workspace: Path) -> None:
    """``modelLimits`` as a client reads it: Sonnet 5's 1M window from the catalog, an unknown
    model's fallback with its warning (sidecar/context/data/models.json)."""
    client = await sidecars.start()
    sid = await _session(client, workspace)
    answers = {}
    for model in ("claude-sonnet-5", "my-local-model"):
        result = await client.request(
            "context/assemble",
            {"sessionId": sid, "userTurn": [text("Next?")], "profile": {"model": model}},
        )
        answers[model] = result["modelLimits"]
    sonnet = answers["claude-sonnet-5"]
    assert (sonnet["window"], sonnet["source"], sonnet["family"]) == (
        1_000_000,
        "table",
        "Claude Sonnet 5",
    )
    assert sonnet.get("warning") is None
    unknown = answers["my-local-model"]
    assert (unknown["window"], unknown["source"]) == (32_768, "fallback")
    assert "my-local-model" in unknown["warning"] and "profile" in unknown["warning"]


async def test_methods_are_registered(sidecar: SidecarClient) -> None:
    names = set(sidecar.capabilities["methods"])
    assert {s.name for s in m.CLIENT_METHODS} == names
    assert {
        "context/assemble",
        "context/sources",
        "skills/activate",
        "session/pin",
        "session/compact",
    } <= names
