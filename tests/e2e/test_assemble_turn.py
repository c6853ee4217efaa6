"""``context/assemble`` for a host that runs its own loop, over real stdio (issue 41).

- **Mid-turn**: the turn in progress (``turn``: the model's tool calls and their results)
  is assembled after the user message, never evicted, and the request ends on the results —
  lowered to Anthropic, the last message is the ``tool_result`` the model answers next (not
  an interruption note, as when results were passed as the user turn).  A turn whose results
  answer no call, or whose calls have no result, is ``params.invalid``.
- **Calibration**: the provider's count of the previous request (``previousUsage``) scales
  the budget for the model's family; the factor is kept in the store, so a restarted sidecar
  on the same store starts from it.

Mutations tried: ``assemble_live`` ignoring ``params.turn`` (the last message is the user
turn: red); ``available_input`` ignoring the count factor (the budget does not shrink: red).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sidecar.client import RpcError
from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def call(call_id: str, path: str) -> dict[str, Any]:
    return {"type": "toolCall", "callId": call_id, "name": "read_file", "arguments": {"path": path}}


def result(call_id: str, body: str) -> dict[str, Any]:
    return {"type": "toolResult", "callId": call_id, "content": [text(body)]}


TOOLS = [{"name": "read_file", "description": "read a file", "parameters": {"type": "object"}}]


async def _history(client: Any) -> str:
    created = await client.request("session/create", {})
    sid: str = created["sessionId"]
    entries = []
    for i in range(6):
        entries += [
            {"kind": "message", "role": "user", "content": [text(f"question {i}")]},
            {"kind": "message", "role": "assistant", "content": [text(f"answer {i} " * 40)]},
        ]
    await client.request("session/append", {"sessionId": sid, "entries": entries})
    return sid


async def test_a_host_assembles_a_request_that_ends_on_the_turns_tool_results(
    sidecars: SidecarFactory,
) -> None:
    client = await sidecars.start()
    sid = await _history(client)
    turn = [
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "read both", "signature": "sig-1"},
                call("c1", "a.py"),
                call("c2", "b.py"),
            ],
        },
        {"role": "user", "content": [result("c1", "print('a')"), result("c2", "print('b')")]},
    ]
    assembled = await client.request(
        "context/assemble",
        {
            "sessionId": sid,
            "userTurn": [text("fix a.py and b.py")],
            "turn": turn,
            "tools": TOOLS,
            "lowerTo": "anthropic-messages",
        },
    )
    messages = assembled["messages"]
    assert [m["role"] for m in messages[-3:]] == ["user", "assistant", "user"]
    assert messages[-3]["content"] == [text("fix a.py and b.py")]
    assert messages[-2]["content"][0]["type"] == "reasoning"  # the current loop's thinking
    assert [p["callId"] for p in messages[-1]["content"]] == ["c1", "c2"]
    assert all(m["provenance"][0]["kind"] == "userTurn" for m in messages[-3:])
    assert "interrupted" not in json.dumps(messages)
    body = assembled["body"]
    last = body["messages"][-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result", "tool_result"]
    assert body["messages"][-2]["content"][0] == {
        "type": "thinking",
        "thinking": "read both",
        "signature": "sig-1",
    }
    turn_tokens = sum(m["tokens"] for m in messages[-3:])
    assert assembled["dashboard"]["categories"]["userTurn"] == turn_tokens


@pytest.mark.parametrize(
    ("turn", "says"),
    [
        ([{"role": "user", "content": [result("c9", "x")]}], "answers no call"),
        ([{"role": "assistant", "content": [call("c1", "a.py")]}], "have no result"),
        (
            [
                {"role": "assistant", "content": [call("c1", "a.py")]},
                {"role": "assistant", "content": [text("done")]},
            ],
            "no result before this assistant message",
        ),
    ],
)
async def test_a_turn_with_unpaired_calls_or_results_is_refused(
    sidecars: SidecarFactory, turn: list[dict[str, Any]], says: str
) -> None:
    client = await sidecars.start()
    sid = await _history(client)
    with pytest.raises(RpcError) as err:
        await client.request(
            "context/assemble", {"sessionId": sid, "userTurn": [text("go")], "turn": turn}
        )
    assert err.value.code == -32602 and err.value.data_code == "params.invalid"
    assert says in json.dumps(err.value.data)


async def test_the_budget_follows_the_providers_count_across_a_restart(
    sidecars: SidecarFactory, store_dir: Path
) -> None:
    profile = {"model": "claude-sonnet-4-5"}
    client = await sidecars.start()
    sid = await _history(client)
    ask = {"sessionId": sid, "userTurn": [text("next?")], "profile": profile}
    first = await client.request("context/assemble", ask)
    dashboard = first["dashboard"]
    room = dashboard["window"] - dashboard["reservedOutput"] - 1024
    # until calibrated: Claude's margin
    assert dashboard["calibration"] == {"family": "Claude Sonnet 4.5", "factor": 1.25, "samples": 0}
    assert dashboard["availableInput"] == int(room / 1.25)
    # the provider counted 1.4x what we counted for that request
    reported = round(dashboard["used"] * 1.4)
    second = await client.request(
        "context/assemble", {**ask, "previousUsage": {"promptTokens": reported}}
    )
    calibration = second["dashboard"]["calibration"]
    assert calibration["samples"] == 1 and calibration["factor"] == pytest.approx(1.4 * 1.03, 1e-3)
    assert second["dashboard"]["availableInput"] == int(room / calibration["factor"])
    assert json.loads((store_dir / "calibration.json").read_text()) == {
        "Claude Sonnet 4.5": [pytest.approx(1.4, 1e-3)]
    }
    await client.close()
    again = await sidecars.start()
    third = await again.request("context/assemble", ask)
    assert third["dashboard"]["calibration"] == calibration
