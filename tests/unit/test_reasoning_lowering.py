"""What each lowering sends back of the reasoning and signatures history keeps.

- ``openai-responses``: the Responses API's own reasoning items (id, summary, encrypted
  content) in their place, followed by what they led to; anyone else's reasoning dropped;
- ``anthropic-messages``: signed ``thinking`` and ``redacted_thinking`` blocks, in order,
  unchanged; unsigned reasoning and other providers' dropped;
- ``gemini``: a call's ``thoughtSignature`` on its ``functionCall`` part;
- every target: the same history lowers to the same bytes, twice and after a round trip;
  the bodies validate against the SDKs' request types.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from protocol.context import AssembledPrompt
from sidecar.context.lower import LOWERINGS, lower
from tests.unit.test_lower import (
    ANTHROPIC,
    OPENAI_RESPONSES,
    _call,
    _message,
    _result,
    _text,
    assert_sdk_valid,
    default_tools,
    make_prompt,
    read_blob,
)

ENCRYPTED = "gAAAAABoX1-encrypted-reasoning-of-the-first-round=="
OPENAI_REASONING = {
    "type": "reasoning",
    "text": "Read both.\n\nIn parallel.",
    "provider": "openai-responses",
    "id": "rs_68a1",
    "data": ENCRYPTED,
    "summary": ["Read both.", "In parallel."],
}
SIGNED = {"type": "reasoning", "text": "Read both files.", "signature": "EqQBsig=="}
REDACTED = {
    "type": "reasoning",
    "text": "",
    "provider": "anthropic",
    "data": "EmwKAhgBEgy-redacted",
    "redacted": True,
}
UNSIGNED = {"type": "reasoning", "text": "Hmm."}


def _prompt(*assistant: dict[str, Any]) -> AssembledPrompt:
    return make_prompt(
        messages=[
            _message("user", _text("Read a.py and b.py")),
            _message("assistant", *assistant),
            _message(
                "user",
                _result("c_a", [_text("A")]),
                _result("c_b", [_text("B")]),
            ),
        ],
        tools=default_tools(),
    )


READ_A = _call("c_a", "read_file", {"path": "a.py"})
READ_B = _call("c_b", "read_file", {"path": "b.py"})


def test_responses_sends_its_reasoning_items_back_in_place() -> None:
    prompt = _prompt(UNSIGNED, SIGNED, REDACTED, OPENAI_REASONING, READ_A, READ_B)
    body = lower(prompt, "openai-responses", read_blob=read_blob)
    assert [item["type"] for item in body["input"]] == [
        "message",
        "reasoning",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert body["input"][1] == {
        "type": "reasoning",
        "id": "rs_68a1",
        "summary": [
            {"type": "summary_text", "text": "Read both."},
            {"type": "summary_text", "text": "In parallel."},
        ],
        "encrypted_content": ENCRYPTED,
    }
    assert_sdk_valid(OPENAI_RESPONSES, body)


def test_responses_drops_reasoning_it_cannot_take_back() -> None:
    no_data = {k: v for k, v in OPENAI_REASONING.items() if k != "data"}
    body = lower(_prompt(no_data, READ_A, READ_B), "openai-responses", read_blob=read_blob)
    assert "reasoning" not in [item["type"] for item in body["input"]]
    # a reasoning item with nothing after it in its turn: the API wants what it led to
    trailing = make_prompt(
        messages=[_message("user", _text("Hi")), _message("assistant", OPENAI_REASONING)]
    )
    body = lower(trailing, "openai-responses", read_blob=read_blob)
    assert [item["type"] for item in body["input"]] == ["message"]


def test_anthropic_keeps_signed_and_redacted_thinking_in_order() -> None:
    prompt = _prompt(UNSIGNED, SIGNED, OPENAI_REASONING, REDACTED, READ_A, READ_B)
    body = lower(prompt, "anthropic-messages", read_blob=read_blob)
    assistant = body["messages"][1]["content"]
    assert assistant[:2] == [
        {"type": "thinking", "thinking": "Read both files.", "signature": "EqQBsig=="},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy-redacted"},
    ]
    assert [block["type"] for block in assistant[2:]] == ["tool_use", "tool_use"]
    assert all("cache_control" not in block for block in assistant[:2])
    assert_sdk_valid(ANTHROPIC, body)


def test_gemini_sends_a_calls_signature_with_it() -> None:
    signed = {**READ_A, "signature": "CiQB0e2Kb-signature"}
    body = lower(_prompt(SIGNED, signed, READ_B), "gemini", read_blob=read_blob)
    model_turn = body["contents"][1]
    assert model_turn == {
        "role": "model",
        "parts": [
            {
                "functionCall": {"name": "read_file", "args": {"path": "a.py"}},
                "thoughtSignature": "CiQB0e2Kb-signature",
            },
            {"functionCall": {"name": "read_file", "args": {"path": "b.py"}}},
        ],
    }


@pytest.mark.parametrize("target", sorted(LOWERINGS))
def test_kept_reasoning_lowers_to_the_same_bytes_every_time(target: Any) -> None:
    signed_call = {**READ_A, "signature": "CiQB0e2Kb-signature"}
    prompt = _prompt(UNSIGNED, SIGNED, REDACTED, OPENAI_REASONING, signed_call, READ_B)
    first = json.dumps(lower(prompt, target, read_blob=read_blob))
    again = json.dumps(lower(prompt, target, read_blob=read_blob))
    reparsed = AssembledPrompt.model_validate_json(prompt.model_dump_json(by_alias=True))
    assert first == again == json.dumps(lower(reparsed, target, read_blob=read_blob))
