"""The ACP face's mapping (sidecar/acp/mapping.py), without a process: prompts, events,
history, stop reasons."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from sidecar.acp.mapping import (
    RunOutcome,
    RunUpdates,
    prompt_parts,
    stop_reason,
    tool_kind,
)
from sidecar.acp.replay import history_updates
from sidecar.errors import InvalidRequestError

BLOBS: dict[str, bytes] = {}


def put(data: bytes) -> str:
    key = f"blob{len(BLOBS)}"
    BLOBS[key] = data
    return key


def test_prompt_blocks_become_content_parts() -> None:
    png = base64.b64encode(b"\x89PNG").decode()
    parts = prompt_parts(
        [
            TextContentBlock(type="text", text="look"),
            ImageContentBlock(type="image", data=png, mime_type="image/png"),
            ResourceContentBlock(type="resource_link", name="a.py", uri="file:///w/a.py"),
            EmbeddedResourceContentBlock(
                type="resource",
                resource=TextResourceContents(uri="file:///w/b.py", text="print(1)"),
            ),
        ],
        put,
    )
    assert parts[0] == {"type": "text", "text": "look"}
    assert parts[1]["type"] == "image" and BLOBS[parts[1]["blob"]] == b"\x89PNG"
    assert parts[2] == {"type": "text", "text": "[a.py](file:///w/a.py)"}
    assert "print(1)" in parts[3]["text"] and "file:///w/b.py" in parts[3]["text"]


@pytest.mark.parametrize(
    "blocks",
    [
        [AudioContentBlock(type="audio", data="AAAA", mime_type="audio/wav")],
        [ImageContentBlock(type="image", data="not base64!", mime_type="image/png")],
        [],
    ],
)
def test_prompts_we_cannot_send_are_refused(blocks: list[Any]) -> None:
    with pytest.raises(InvalidRequestError):
        prompt_parts(blocks, put)


def test_stop_reasons() -> None:
    assert stop_reason("cancelled", "end_turn", None).stop == "cancelled"
    assert stop_reason("completed", "end_turn", None).stop == "end_turn"
    assert stop_reason("completed", "tool_use", None).stop == "end_turn"
    assert stop_reason("completed", "max_tokens", None).stop == "max_tokens"
    assert stop_reason("completed", "refusal", None).stop == "refusal"
    assert stop_reason("completed", "content_filter", None).stop == "refusal"
    rounds = {"code": "agent.max_tool_rounds_exceeded", "message": "10 rounds"}
    assert stop_reason("failed", None, rounds).stop == "max_turn_requests"
    failed = stop_reason("failed", None, {"code": "model.overloaded", "message": "busy"})
    assert failed.stop is None and failed.failure == {"code": "model.overloaded", "message": "busy"}


def test_tool_kinds() -> None:
    assert tool_kind("read_file") == "read"
    assert tool_kind("write_file") == "edit"
    assert tool_kind("run_command") == "execute"
    assert tool_kind("grep") == "search"
    assert tool_kind("agent_delegate") == "other"


def event(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"runId": "run_1", "sessionId": "ses_1", "seq": 1, "type": kind, "payload": payload}


def outcome(run: RunUpdates) -> RunOutcome | None:
    return run.outcome


def test_run_events_become_updates_and_an_outcome() -> None:
    stored = {
        "seq": 5,
        "content": [
            {
                "type": "toolResult",
                "callId": "c1",
                "content": [{"type": "text", "text": "x = 1"}],
                "isError": False,
            }
        ],
    }
    run = RunUpdates(lambda seq: stored if seq == 5 else None, BLOBS.__getitem__, "/w")
    assert run.updates(event("run.created", {})) == []
    assert run.updates(event("model.requestCreated", {"round": 1})) == []
    [thought] = run.updates(event("model.delta", {"round": 1, "reasoning": "hm"}))
    [text] = run.updates(event("model.delta", {"round": 1, "text": "Hi"}))
    assert isinstance(thought, AgentThoughtChunk) and isinstance(text, AgentMessageChunk)
    assert thought.message_id == text.message_id == "run_1:1"
    # a sub-agent's deltas are not the session's
    assert run.updates(event("model.delta", {"round": 1, "text": "x", "agent": "c9"})) == []
    call = {"callId": "c1", "name": "read_file", "arguments": {"path": "a.py", "line": 3}}
    [start] = run.updates(event("tool.callRequested", call))
    assert isinstance(start, ToolCallStart)
    assert (start.kind, start.status, start.title) == ("read", "pending", "Read a.py (from line 3)")
    assert start.locations is not None
    assert (start.locations[0].path, start.locations[0].line) == ("/w/a.py", 3)
    [done] = run.updates(event("tool.resultStored", {"callId": "c1", "isError": False, "seq": 5}))
    assert isinstance(done, ToolCallProgress) and done.status == "completed"
    assert done.content is not None and done.content[0].content.text == "x = 1"
    assert run.updates(event("model.completed", {"stopReason": "max_tokens"})) == []
    assert outcome(run) is None
    run.updates(event("run.completed", {"status": "completed"}))
    final = outcome(run)
    assert final is not None and final.stop == "max_tokens"
    assert run.model_calls == 1


def test_what_the_editor_tools_showed_stays_in_the_final_update() -> None:
    """A write's diff replaces the result text; a terminal is left as it is (no content)."""
    diff = FileEditToolCallContent(type="diff", path="/w/a.py", old_text="a", new_text="b")
    shown: dict[str, list[Any]] = {"w1": [diff], "t1": []}
    stored = {
        "seq": 7,
        "content": [
            {"type": "toolResult", "callId": c, "content": [{"type": "text", "text": "ok"}]}
            for c in ("w1", "t1", "r1")
        ],
    }
    run = RunUpdates(lambda seq: stored, BLOBS.__getitem__, "/w", lambda c: shown.pop(c, None))
    updates = {
        c: run.updates(event("tool.resultStored", {"callId": c, "isError": False, "seq": 7}))[0]
        for c in ("w1", "t1", "r1")
    }
    assert all(isinstance(u, ToolCallProgress) for u in updates.values())
    assert updates["w1"].content == [diff]
    assert "content" not in updates["t1"].model_dump(exclude_unset=True)
    r1 = updates["r1"]
    assert isinstance(r1, ToolCallProgress) and r1.content is not None
    assert r1.content[0].content.text == "ok"
    assert shown == {}


def test_history_replays_messages_and_tool_calls() -> None:
    entries: list[dict[str, Any]] = [
        {"kind": "message", "id": "e1", "role": "user", "content": [{"type": "text", "text": "q"}]},
        {"kind": "pin", "id": "e2"},
        {
            "kind": "message",
            "id": "e3",
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "think"},
                {"type": "text", "text": "a"},
                {"type": "toolCall", "callId": "c1", "name": "grep", "arguments": {}},
            ],
        },
        {
            "kind": "message",
            "id": "e4",
            "role": "user",
            "content": [
                {"type": "toolResult", "callId": "c1", "content": [], "isError": True},
            ],
        },
    ]
    updates = history_updates(entries, BLOBS.__getitem__, "/w")
    assert [type(u) for u in updates] == [
        UserMessageChunk,
        AgentThoughtChunk,
        AgentMessageChunk,
        ToolCallStart,
        ToolCallProgress,
    ]
    assert [getattr(u, "message_id", None) for u in updates[:3]] == ["e1", "e3", "e3"]
    assert isinstance(updates[4], ToolCallProgress) and updates[4].status == "failed"
