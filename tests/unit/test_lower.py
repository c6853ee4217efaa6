"""``sidecar.context.lower``: provider request bodies, validated against the providers' types.

Anthropic and OpenAI bodies are checked with the SDKs' request TypedDicts (test-only
dependencies); every lazily validated ``Iterable`` field is materialized, and the validated
value must equal the body, so an unknown key (silently dropped by a TypedDict) fails too.
Gemini has no SDK here: a strict pydantic model of the documented REST shape stands in.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
import struct
import zlib
from collections.abc import Iterable
from typing import Any, Literal

import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from protocol.context import AssembledPrompt
from sidecar.context.lower import LOWERINGS, lower
from sidecar.context.lower._common import CONTINUATION_NOTE
from sidecar.context.lower.anthropic_messages import MAX_CACHE_MARKERS
from sidecar.context.lower.gemini_schema import function_parameters, to_gemini_schema
from sidecar.context.lower.prompt import LoweringMemo, lowering_prompt
from sidecar.context.service import lower_result
from sidecar.store.blobs import git_blob_id

# --- fixtures: a realistic prompt --------------------------------------------------------------


def _png(width: int = 2, height: int = 1) -> bytes:
    """A real (decodable) RGB PNG."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


PNG = _png()
PNG_ID = git_blob_id(PNG)
PNG_B64 = base64.b64encode(PNG).decode("ascii")
BMP = b"BM" + b"\x00" * 60
BMP_ID = git_blob_id(BMP)
BLOBS = {PNG_ID: PNG, BMP_ID: BMP}

SYSTEM_TEXTS = [
    "You are a careful coding agent.",
    "<environment>\nworkspace: /repo\nmodel: claude-sonnet-4-5\ndate: 2026-01-05\n</environment>",
    "# AGENTS.md (scope .)\nRun `make test` before you finish.",
    "<available_skills>\n- pdf: read and fill PDF forms\n</available_skills>",
]
TEST_SOURCE = "def test_add():\n    assert add(2, 2) == 5\n"
USER_TURN = "Thanks. Also add a test for negative numbers."
EDIT_ARGS = {"path": "tests/test_math.py", "old": "== 5", "new": "== 4"}

READ_FILE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Workspace-relative path"},
        "range": {"$ref": "#/$defs/Range"},
    },
    "required": ["path"],
    "additionalProperties": False,
    "$defs": {
        "Range": {
            "type": "object",
            "title": "Range",
            "properties": {
                "start": {"type": "integer", "minimum": 1},
                "end": {"type": ["integer", "null"]},
            },
            "additionalProperties": False,
        }
    },
}
RUN_TESTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "RunTests",
    "properties": {"args": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}},
}
EDIT_FILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "old": {"type": "string"},
        "new": {"type": "string"},
    },
    "required": ["path", "old", "new"],
}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image(blob: str = PNG_ID, media_type: str = "image/png", alt: str | None = None) -> Any:
    part: dict[str, Any] = {"type": "image", "blob": blob, "media_type": media_type}
    if alt is not None:
        part["alt"] = alt
    return part


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "toolCall", "call_id": call_id, "name": name, "arguments": arguments}


def _result(call_id: str, content: list[Any], *, is_error: bool = False) -> dict[str, Any]:
    return {"type": "toolResult", "call_id": call_id, "content": content, "is_error": is_error}


def _reasoning(text: str, signature: str | None = None) -> dict[str, Any]:
    return {"type": "reasoning", "text": text, "signature": signature}


def _message(role: str, *content: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "content": list(content), "tokens": 10, "provenance": []}


def default_messages() -> list[dict[str, Any]]:
    return [
        _message(
            "user",
            _text("The test in tests/test_math.py fails, see the screenshot."),
            _image(alt="pytest output"),
        ),
        _message(
            "assistant",
            _reasoning("I should read the test first.", "sig-abc"),
            _text("Let me read the test and run it."),
            _call("call_1", "read_file", {"path": "tests/test_math.py"}),
            _call("call_2", "run_tests", {"args": ["-q", "tests/test_math.py"]}),
        ),
        _message(
            "user",
            _result("call_1", [_text(TEST_SOURCE)]),
            _result("call_2", [_text("1 failed"), _image()], is_error=True),
        ),
        _message(
            "assistant",
            _reasoning("The expected value is wrong."),  # unsigned
            _text("The assertion expects 5; it should be 4."),
        ),
        _message("assistant", _text("  \n"), _call("call_3", "edit_file", EDIT_ARGS)),
        _message("user", _result("call_3", [_text("patched 1 line")])),
        _message("user", _text(USER_TURN)),
    ]


def default_tools() -> list[dict[str, Any]]:
    return [
        {"name": "read_file", "description": "Read a file.", "parameters": READ_FILE_SCHEMA},
        {"name": "run_tests", "description": "Run pytest.", "parameters": RUN_TESTS_SCHEMA},
        {"name": "edit_file", "description": "Replace text.", "parameters": EDIT_FILE_SCHEMA},
        {"name": "list_files", "description": "List the workspace."},
    ]


def default_breakpoints() -> list[dict[str, Any]]:
    return [
        _breakpoint("tools", "1h"),
        _breakpoint("system", "1h"),
        _breakpoint("message", "5m", 2),
        _breakpoint("message", "5m", 5),
    ]


def _breakpoint(location: str, ttl: str | None, index: int | None = None) -> dict[str, Any]:
    return {
        "location": location,
        "message_index": index,
        "ttl": ttl,
        "prefix_tokens": 1000,
        "reason": "test",
    }


def make_prompt(
    *,
    system: list[str] | None = None,
    messages: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
    breakpoints: list[dict[str, Any]] | None = None,
) -> AssembledPrompt:
    """The default prompt, or one with the given parts replaced (breakpoints default to the
    default ones only with the default messages: they name message indexes)."""
    texts = SYSTEM_TEXTS if system is None else system
    if breakpoints is None and messages is None:
        breakpoints = default_breakpoints()
    return AssembledPrompt.model_validate(
        {
            "system": [
                {
                    "id": f"section.{index}",
                    "category": "instructions" if index == 2 else "system",
                    "title": f"section {index}",
                    "text": text,
                    "tokens": 20,
                    "hash": f"{index:032x}",
                    "provenance": {"kind": "fragment", "id": f"fragment.{index}"},
                }
                for index, text in enumerate(texts)
            ],
            "messages": default_messages() if messages is None else messages,
            "tools": default_tools() if tools is None else tools,
            "ledger": [],
            "dashboard": {
                "window": 200_000,
                "reserved_output": 8192,
                "available_input": 190_784,
                "used": 2000,
                "free": 188_784,
                "categories": {"system": 2000},
                "summary": "context 7 visible · 2.0k/190.8k tokens",
            },
            "cache_breakpoints": breakpoints if breakpoints is not None else [],
            "tokenizer": "cl100k_base",
            "model_limits": {
                "model": "claude-sonnet-4-5",
                "window": 200_000,
                "max_output": 8192,
                "source": "table",
            },
            "compaction": {
                "advised": False,
                "transcript_tokens": 1500,
                "threshold_tokens": 175_521,
            },
            "instructions_diff": {},
            "diagnostics": [],
            "through_seq": 12,
        }
    )


def read_blob(blob_id: str) -> bytes:
    return BLOBS[blob_id]


@pytest.fixture(scope="module")
def prompt() -> AssembledPrompt:
    return make_prompt()


# --- SDK validation ----------------------------------------------------------------------------

ANTHROPIC: TypeAdapter[Any] = TypeAdapter(MessageCreateParamsNonStreaming)
OPENAI_CHAT: TypeAdapter[Any] = TypeAdapter(CompletionCreateParamsNonStreaming)
OPENAI_RESPONSES: TypeAdapter[Any] = TypeAdapter(ResponseCreateParamsNonStreaming)


def materialize(value: object) -> object:
    """``value`` with every iterable (pydantic's lazy ``ValidatorIterator`` included) turned into
    a list, recursively, so each nested item is validated."""
    if isinstance(value, dict):
        return {key: materialize(item) for key, item in value.items()}
    if isinstance(value, str | bytes | bytearray | BaseModel):
        return value
    if isinstance(value, Iterable):
        return [materialize(item) for item in value]
    return value


def assert_sdk_valid(adapter: TypeAdapter[Any], body: dict[str, Any]) -> None:
    """Valid against the SDK type, with nothing dropped or coerced on the way."""
    validated = materialize(adapter.validate_python(body))
    assert validated == body


def test_materialize_catches_blocks_that_validate_python_lets_through() -> None:
    block = {"type": "txt", "text": "hi"}
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": [block]}],
    }
    validated = ANTHROPIC.validate_python(body)  # lazily validated: no error yet
    messages = list(validated["messages"])  # one level deep is not enough either:
    assert messages[0]["role"] == "user"  # the message passes, its content is still lazy
    with pytest.raises(ValidationError, match="txt"):
        materialize(messages)
    with pytest.raises(ValidationError, match="txt"):
        materialize(ANTHROPIC.validate_python(body))
    block["type"] = "text"
    assert_sdk_valid(ANTHROPIC, body)


def test_assert_sdk_valid_rejects_keys_the_typed_dict_drops() -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache": 1}]}],
    }
    with pytest.raises(AssertionError):
        assert_sdk_valid(ANTHROPIC, body)


# --- the entry point ---------------------------------------------------------------------------


@pytest.mark.parametrize("target", sorted(LOWERINGS))
def test_same_prompt_lowers_to_the_same_bytes(prompt: AssembledPrompt, target: Any) -> None:
    first = lower(prompt, target, read_blob=read_blob)
    again = lower(prompt, target, read_blob=read_blob)
    reparsed = AssembledPrompt.model_validate_json(prompt.model_dump_json(by_alias=True))
    third = lower(reparsed, target, read_blob=read_blob)
    assert json.dumps(first) == json.dumps(again) == json.dumps(third)
    assert first is not again


@pytest.mark.parametrize("target", sorted(LOWERINGS))
def test_what_lowering_validates_lowers_to_the_same_bytes_as_the_whole_prompt(
    prompt: AssembledPrompt, target: Any
) -> None:
    """``lower_result`` validates only the fields a lowering reads (``LoweringPrompt``): the
    body is the same, byte for byte, and the fields left out are not validated at all."""
    wire = prompt.model_dump(mode="json", by_alias=True, exclude_none=True)
    narrowed = lowering_prompt(wire)
    assert not hasattr(narrowed, "ledger") and not hasattr(narrowed.messages[0], "provenance")
    whole = lower(prompt, target, read_blob=read_blob)
    assert json.dumps(lower(narrowed, target, read_blob=read_blob)) == json.dumps(whole)
    assert json.dumps(lower_result(wire, target, read_blob, None)) == json.dumps(whole)
    unread = {**wire, "ledger": [{"not": "a ledger item"}], "dashboard": None}
    unread["messages"] = [{**m, "provenance": "unread"} for m in wire["messages"]]
    assert json.dumps(lower_result(unread, target, read_blob, None)) == json.dumps(whole)


@pytest.mark.parametrize("target", sorted(LOWERINGS))
def test_a_session_memo_validates_only_new_messages_and_lowers_to_the_same_bytes(
    prompt: AssembledPrompt, target: Any
) -> None:
    """A session's next prompt repeats its messages as the same dicts (its transcript groups'):
    with the session's memo, a dict lowered before is not validated again, and the body is
    the same, byte for byte."""
    wire = prompt.model_dump(mode="json", by_alias=True, exclude_none=True)
    whole = json.dumps(lower(prompt, target, read_blob=read_blob))
    memo: LoweringMemo = {}
    first = lowering_prompt(wire, memo)
    assert json.dumps(lower_result(wire, target, read_blob, None, memo)) == whole
    assert len(memo) == len(wire["messages"])
    # the next prompt: the same dicts, one of them twice, and a new one (an equal copy)
    old = wire["messages"]
    copied = copy.deepcopy(old[-1])
    following = {**wire, "messages": [*old, old[0], copied]}
    second = lowering_prompt(following, memo)
    assert all(a is b for a, b in zip(first.messages, second.messages[: len(old)], strict=True))
    assert second.messages[len(old)] is first.messages[0]
    assert second.messages[-1] is not first.messages[-1]  # validated: a dict it had not seen
    assert second.messages[-1] == first.messages[-1]
    expected = lower(lowering_prompt(following), target, read_blob=read_blob)
    assert json.dumps(lower_result(following, target, read_blob, None, memo)) == json.dumps(
        expected
    )
    # it keeps the last prompt's messages only
    lowering_prompt({**wire, "messages": [copied]}, memo)
    assert [kept for kept, _ in memo.values()] == [copied]


@pytest.mark.parametrize("target", sorted(LOWERINGS))
def test_bodies_do_not_share_state_with_the_prompt(prompt: AssembledPrompt, target: Any) -> None:
    before = prompt.model_dump()
    body = lower(prompt, target, read_blob=read_blob)
    json.loads(json.dumps(body))  # plain JSON
    _scramble(body)
    assert prompt.model_dump() == before


def _scramble(value: object) -> None:
    if isinstance(value, dict):
        for item in value.values():
            _scramble(item)
        value["scrambled"] = True
    elif isinstance(value, list):
        for item in value:
            _scramble(item)
        value.append("scrambled")


def test_max_output_defaults_to_the_model_limit(prompt: AssembledPrompt) -> None:
    assert lower(prompt, "anthropic-messages", read_blob=read_blob)["max_tokens"] == 8192
    assert (
        lower(prompt, "anthropic-messages", read_blob=read_blob, max_output=99)["max_tokens"] == 99
    )
    assert (
        lower(prompt, "openai-chat", read_blob=read_blob, max_output=7)["max_completion_tokens"]
        == 7
    )
    assert lower(prompt, "openai-responses", read_blob=read_blob)["max_output_tokens"] == 8192
    assert lower(prompt, "gemini", read_blob=read_blob, max_output=5)["generationConfig"] == {
        "maxOutputTokens": 5
    }
    assert lower(prompt, "system-as-user", read_blob=read_blob)["max_tokens"] == 8192


def test_unknown_target_is_rejected(prompt: AssembledPrompt) -> None:
    with pytest.raises(ValueError, match="unknown lowering target"):
        lower(prompt, "cohere", read_blob=read_blob)  # type: ignore[arg-type]


def test_each_blob_is_read_once_per_lowering(prompt: AssembledPrompt) -> None:
    reads: list[str] = []

    def counting(blob_id: str) -> bytes:
        reads.append(blob_id)
        return BLOBS[blob_id]

    lower(prompt, "anthropic-messages", read_blob=counting)
    assert reads == [PNG_ID]  # the PNG appears twice in the prompt


# --- anthropic-messages ------------------------------------------------------------------------


def _image_block() -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
    }


def test_anthropic_body_is_valid_for_the_sdk(prompt: AssembledPrompt) -> None:
    assert_sdk_valid(ANTHROPIC, lower(prompt, "anthropic-messages", read_blob=read_blob))


def test_anthropic_body(prompt: AssembledPrompt) -> None:
    body = lower(prompt, "anthropic-messages", read_blob=read_blob)
    assert list(body) == ["model", "max_tokens", "system", "messages", "tools"]
    assert body["model"] == "claude-sonnet-4-5"
    # one block per section; read back to back they are the joined system prompt
    assert [block["type"] for block in body["system"]] == ["text"] * 4
    assert "".join(block["text"] for block in body["system"]) == "\n\n".join(SYSTEM_TEXTS)
    assert body["system"][0]["text"] == SYSTEM_TEXTS[0] + "\n\n"
    assert body["system"][-1] == {
        "type": "text",
        "text": SYSTEM_TEXTS[-1],
        "cache_control": {"type": "ephemeral", "ttl": "1h"},
    }
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                _text("The test in tests/test_math.py fails, see the screenshot."),
                _image_block(),
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": "I should read the test first.",
                    "signature": "sig-abc",
                },
                _text("Let me read the test and run it."),
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "read_file",
                    "input": {"path": "tests/test_math.py"},
                },
                {
                    "type": "tool_use",
                    "id": "call_2",
                    "name": "run_tests",
                    "input": {"args": ["-q", "tests/test_math.py"]},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": [_text(TEST_SOURCE)],
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "call_2",
                    "content": [_text("1 failed"), _image_block()],
                    "is_error": True,
                    "cache_control": {"type": "ephemeral"},
                },
            ],
        },
        {
            # messages 3 and 4 merged; unsigned reasoning and blank text dropped
            "role": "assistant",
            "content": [
                _text("The assertion expects 5; it should be 4."),
                {"type": "tool_use", "id": "call_3", "name": "edit_file", "input": EDIT_ARGS},
            ],
        },
        {
            # messages 5 and 6 merged, the tool result first
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_3",
                    "content": [_text("patched 1 line")],
                    "is_error": False,
                    "cache_control": {"type": "ephemeral"},
                },
                _text(USER_TURN),
            ],
        },
    ]
    assert [tool["name"] for tool in body["tools"]] == [
        "read_file",
        "run_tests",
        "edit_file",
        "list_files",
    ]
    assert body["tools"][0] == {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": READ_FILE_SCHEMA,
    }
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert _count_markers(body) == 4


def _count_markers(value: object) -> int:
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(_count_markers(v) for v in value.values())
    if isinstance(value, list):
        return sum(_count_markers(v) for v in value)
    return 0


def _marked(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """(where, cache_control) of every marker, in prefix order."""
    found: list[tuple[str, Any]] = []
    for tool in body.get("tools", []):
        if "cache_control" in tool:
            found.append((f"tool:{tool['name']}", tool["cache_control"]))
    for index, block in enumerate(body.get("system", [])):
        if "cache_control" in block:
            found.append((f"system:{index}", block["cache_control"]))
    for m_index, message in enumerate(body["messages"]):
        for b_index, block in enumerate(message["content"]):
            if "cache_control" in block:
                found.append((f"message:{m_index}.{b_index}", block["cache_control"]))
    return found


def test_anthropic_markers_are_trimmed_to_four_keeping_tools_system_and_the_latest() -> None:
    prompt = make_prompt(
        breakpoints=[
            _breakpoint("message", "5m", 0),
            _breakpoint("message", "5m", 2),
            _breakpoint("system", "1h"),
            _breakpoint("message", "5m", 5),
            _breakpoint("tools", "1h"),
            _breakpoint("message", "5m", 6),
        ]
    )
    body = lower(prompt, "anthropic-messages", read_blob=read_blob)
    assert_sdk_valid(ANTHROPIC, body)
    assert _count_markers(body) == MAX_CACHE_MARKERS == 4
    ephemeral = {"type": "ephemeral"}
    assert _marked(body) == [
        ("tool:list_files", {"type": "ephemeral", "ttl": "1h"}),
        ("system:3", {"type": "ephemeral", "ttl": "1h"}),
        ("message:4.0", ephemeral),  # message 5: the tool result
        ("message:4.1", ephemeral),  # message 6: the user turn
    ]


def test_anthropic_a_longer_ttl_never_follows_a_shorter_one() -> None:
    prompt = make_prompt(
        breakpoints=[
            _breakpoint("system", "5m"),
            _breakpoint("message", "1h", 2),
            _breakpoint("tools", "1h"),
        ]
    )
    body = lower(prompt, "anthropic-messages", read_blob=read_blob)
    assert _marked(body) == [
        ("tool:list_files", {"type": "ephemeral", "ttl": "1h"}),
        ("system:3", {"type": "ephemeral"}),
        ("message:2.1", {"type": "ephemeral"}),  # asked 1h after a 5m marker
    ]


def test_anthropic_null_ttl_places_no_marker_and_duplicates_count_once() -> None:
    prompt = make_prompt(
        breakpoints=[
            _breakpoint("tools", None),
            _breakpoint("system", None),
            _breakpoint("message", "5m", 6),
            _breakpoint("message", "1h", 6),
        ]
    )
    body = lower(prompt, "anthropic-messages", read_blob=read_blob)
    assert _marked(body) == [("message:4.1", {"type": "ephemeral", "ttl": "1h"})]


def test_anthropic_message_marker_skips_blocks_that_cannot_carry_one() -> None:
    # message 3 renders nothing (unsigned reasoning only): its marker falls back to message 2;
    # message 4 ends with a thinking block, which cannot carry a marker: its text does.
    messages = default_messages()
    messages[3] = _message("assistant", _reasoning("unsigned"))
    messages.insert(4, _message("assistant", _text("Patching."), _reasoning("signed", "sig-2")))
    prompt = make_prompt(
        messages=messages,
        breakpoints=[_breakpoint("message", "5m", 3), _breakpoint("message", "5m", 4)],
    )
    body = lower(prompt, "anthropic-messages", read_blob=read_blob)
    assert_sdk_valid(ANTHROPIC, body)
    assert _marked(body) == [
        ("message:2.1", {"type": "ephemeral"}),  # message 3 -> the last block of message 2
        ("message:3.0", {"type": "ephemeral"}),  # message 4 -> "Patching.", not the thinking
    ]
    assert body["messages"][3]["content"][1]["type"] == "thinking"


def test_anthropic_breakpoint_outside_the_messages_is_an_error() -> None:
    prompt = make_prompt(breakpoints=[_breakpoint("message", "5m", 7)])
    with pytest.raises(ValueError, match="message 7"):
        lower(prompt, "anthropic-messages", read_blob=read_blob)


def test_anthropic_without_tools_renders_tool_traffic_as_text() -> None:
    prompt = make_prompt(tools=[], breakpoints=[_breakpoint("tools", "1h")])
    body = lower(prompt, "anthropic-messages", read_blob=read_blob)
    assert_sdk_valid(ANTHROPIC, body)
    assert "tools" not in body
    types = {block["type"] for message in body["messages"] for block in message["content"]}
    assert types == {"text", "image", "thinking"}
    assert body["messages"][1]["content"][2] == _text(
        '[tool call: read_file {"path":"tests/test_math.py"}]'
    )
    assert body["messages"][2]["content"][1] == _text(
        "[tool: run_tests (error)]\n1 failed\n\n[image: image/png]"
    )
    assert _count_markers(body) == 0


def test_anthropic_unpaired_calls_and_results_become_text() -> None:
    messages = [
        _message("user", _result("call_0", [_text("stale output")]), _text("Go on.")),
        _message("assistant", _call("call_1", "run_tests", {})),
        _message("user", _text("Never mind, stop.")),
        _message("assistant", _text("Stopped.")),
        _message("user", _result("call_1", [_text("late")]), _text(USER_TURN)),
    ]
    body = lower(make_prompt(messages=messages), "anthropic-messages", read_blob=read_blob)
    assert_sdk_valid(ANTHROPIC, body)
    assert body["messages"] == [
        {"role": "user", "content": [_text("[tool: unknown]\nstale output"), _text("Go on.")]},
        {"role": "assistant", "content": [_text("[tool call: run_tests {}]")]},
        {"role": "user", "content": [_text("Never mind, stop.")]},
        {"role": "assistant", "content": [_text("Stopped.")]},
        {"role": "user", "content": [_text("[tool: run_tests]\nlate"), _text(USER_TURN)]},
    ]


def test_anthropic_window_opening_on_an_assistant_turn_gets_a_user_turn_first() -> None:
    messages = [_message("assistant", _text("Earlier answer.")), _message("user", _text("Next?"))]
    body = lower(make_prompt(messages=messages), "anthropic-messages", read_blob=read_blob)
    assert_sdk_valid(ANTHROPIC, body)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][0]["content"] == [_text(CONTINUATION_NOTE)]


def test_anthropic_tool_ids_are_made_safe_on_both_sides() -> None:
    messages = [
        _message("user", _text("Run it.")),
        _message("assistant", _call("functions.run:0", "run_tests", {})),
        _message("user", _result("functions.run:0", [_text("ok")]), _text(USER_TURN)),
    ]
    body = lower(make_prompt(messages=messages), "anthropic-messages", read_blob=read_blob)
    assert_sdk_valid(ANTHROPIC, body)
    assert body["messages"][1]["content"][0]["id"] == "functions_run_0"
    assert body["messages"][2]["content"][0]["tool_use_id"] == "functions_run_0"


def test_anthropic_unsupported_images_and_blank_sections_become_text_or_vanish() -> None:
    messages = [_message("user", _image(BMP_ID, "image/bmp", alt="a diagram"), _text("What?"))]
    prompt = make_prompt(
        system=["Be brief.", "   ", "", "Be kind."],
        messages=messages,
        breakpoints=[_breakpoint("system", "1h")],
    )
    body = lower(prompt, "anthropic-messages", read_blob=read_blob)
    assert_sdk_valid(ANTHROPIC, body)
    assert body["system"] == [
        _text("Be brief.\n\n"),
        {"type": "text", "text": "Be kind.", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
    ]
    assert body["messages"][0]["content"][0] == _text("[image: image/bmp] a diagram")


def test_anthropic_empty_system_and_tools_are_omitted() -> None:
    prompt = make_prompt(system=[], tools=[], messages=[_message("user", _text("Hi"))])
    body = lower(prompt, "anthropic-messages", read_blob=read_blob)
    assert_sdk_valid(ANTHROPIC, body)
    assert list(body) == ["model", "max_tokens", "messages"]


# --- openai-chat -------------------------------------------------------------------------------


def test_openai_chat_body_is_valid_for_the_sdk(prompt: AssembledPrompt) -> None:
    assert_sdk_valid(OPENAI_CHAT, lower(prompt, "openai-chat", read_blob=read_blob))


def test_openai_chat_body(prompt: AssembledPrompt) -> None:
    body = lower(prompt, "openai-chat", read_blob=read_blob)
    assert list(body) == ["model", "max_completion_tokens", "messages", "tools"]
    messages = body["messages"]
    assert [(m["role"], m.get("tool_call_id")) for m in messages] == [
        ("system", None),
        ("user", None),
        ("assistant", None),
        ("tool", "call_1"),
        ("tool", "call_2"),
        ("assistant", None),
        ("tool", "call_3"),
        ("user", None),
    ]
    assert messages[0] == {"role": "system", "content": "\n\n".join(SYSTEM_TEXTS)}
    assert messages[1]["content"] == [
        _text("The test in tests/test_math.py fails, see the screenshot."),
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
    ]
    assert messages[2] == {
        "role": "assistant",
        "content": "Let me read the test and run it.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path":"tests/test_math.py"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {
                    "name": "run_tests",
                    "arguments": '{"args":["-q","tests/test_math.py"]}',
                },
            },
        ],
    }
    assert messages[3]["content"] == TEST_SOURCE
    assert messages[4]["content"] == "[tool error]\n1 failed\n\n[image: image/png]"
    assert messages[5]["content"] == "The assertion expects 5; it should be 4."
    assert json.loads(messages[5]["tool_calls"][0]["function"]["arguments"]) == EDIT_ARGS
    assert messages[7] == {"role": "user", "content": USER_TURN}
    assert "I should read" not in json.dumps(body)  # reasoning dropped
    assert body["tools"][2] == {
        "type": "function",
        "function": {
            "name": "edit_file",
            "description": "Replace text.",
            "parameters": EDIT_FILE_SCHEMA,
        },
    }


def test_openai_chat_omits_empty_tools_and_system() -> None:
    prompt = make_prompt(system=[], tools=[])
    body = lower(prompt, "openai-chat", read_blob=read_blob)
    assert_sdk_valid(OPENAI_CHAT, body)
    assert "tools" not in body
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert all("tool_calls" not in m for m in body["messages"])


def test_openai_chat_assistant_turn_of_only_tool_calls_has_no_content() -> None:
    messages = [
        _message("user", _text("Run it.")),
        _message("assistant", _call("c1", "run_tests", {})),
        _message("user", _result("c1", [_text("ok")]), _text(USER_TURN)),
    ]
    body = lower(make_prompt(messages=messages), "openai-chat", read_blob=read_blob)
    assert_sdk_valid(OPENAI_CHAT, body)
    assert body["messages"][2] == {
        "role": "assistant",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "run_tests", "arguments": "{}"}}
        ],
    }
    assert body["messages"][3:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": USER_TURN},
    ]


# --- openai-responses --------------------------------------------------------------------------


def test_openai_responses_body_is_valid_for_the_sdk(prompt: AssembledPrompt) -> None:
    assert_sdk_valid(OPENAI_RESPONSES, lower(prompt, "openai-responses", read_blob=read_blob))


def test_openai_responses_body(prompt: AssembledPrompt) -> None:
    body = lower(prompt, "openai-responses", read_blob=read_blob)
    assert list(body) == ["model", "max_output_tokens", "instructions", "input", "tools"]
    assert body["instructions"] == "\n\n".join(SYSTEM_TEXTS)
    data_url = f"data:image/png;base64,{PNG_B64}"
    image = {"type": "input_image", "image_url": data_url, "detail": "auto"}
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": "The test in tests/test_math.py fails, see the screenshot.",
                },
                image,
            ],
        },
        {"type": "message", "role": "assistant", "content": "Let me read the test and run it."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "read_file",
            "arguments": '{"path":"tests/test_math.py"}',
        },
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "run_tests",
            "arguments": '{"args":["-q","tests/test_math.py"]}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": TEST_SOURCE},
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": [
                {"type": "input_text", "text": "[tool error]"},
                {"type": "input_text", "text": "1 failed"},
                image,
            ],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": "The assertion expects 5; it should be 4.",
        },
        {
            "type": "function_call",
            "call_id": "call_3",
            "name": "edit_file",
            "arguments": json.dumps(EDIT_ARGS, separators=(",", ":")),
        },
        {"type": "function_call_output", "call_id": "call_3", "output": "patched 1 line"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": USER_TURN}]},
    ]
    assert body["tools"][3] == {
        "type": "function",
        "name": "list_files",
        "description": "List the workspace.",
        "parameters": {"type": "object", "properties": {}},
        "strict": False,
    }


def test_openai_responses_omits_empty_tools_and_instructions() -> None:
    prompt = make_prompt(system=[], tools=[])
    body = lower(prompt, "openai-responses", read_blob=read_blob)
    assert_sdk_valid(OPENAI_RESPONSES, body)
    assert list(body) == ["model", "max_output_tokens", "input"]
    assert {item["type"] for item in body["input"]} == {"message"}


# --- gemini ------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class GeminiBlob(_Strict):
    mimeType: str
    data: str

    @model_validator(mode="after")
    def _base64(self) -> GeminiBlob:
        base64.b64decode(self.data, validate=True)
        return self


class GeminiFunctionCall(_Strict):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")
    args: dict[str, Any] | None = None


class GeminiFunctionResponse(_Strict):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")
    response: dict[str, Any]


class GeminiPart(_Strict):
    text: str | None = Field(default=None, min_length=1)
    inlineData: GeminiBlob | None = None
    functionCall: GeminiFunctionCall | None = None
    functionResponse: GeminiFunctionResponse | None = None

    @model_validator(mode="after")
    def _one_field(self) -> GeminiPart:
        set_fields = [name for name in type(self).model_fields if getattr(self, name) is not None]
        assert len(set_fields) == 1, f"a Part holds exactly one field, got {set_fields}"
        return self


class GeminiContent(_Strict):
    role: Literal["user", "model"] | None = None
    parts: list[GeminiPart] = Field(min_length=1)


class GeminiSchema(_Strict):
    type: Literal["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"] | None = None
    format: str | None = None
    description: str | None = None
    nullable: bool | None = None
    enum: list[str] | None = None
    properties: dict[str, GeminiSchema] | None = None
    required: list[str] | None = None
    propertyOrdering: list[str] | None = None
    minProperties: int | None = None
    maxProperties: int | None = None
    items: GeminiSchema | None = None
    minItems: int | None = None
    maxItems: int | None = None
    minLength: int | None = None
    maxLength: int | None = None
    pattern: str | None = None
    minimum: float | int | None = None
    maximum: float | int | None = None
    anyOf: list[GeminiSchema] | None = None

    @model_validator(mode="after")
    def _rules(self) -> GeminiSchema:
        if self.properties is not None or self.required is not None:
            assert self.type == "OBJECT", "properties/required: only allowed for OBJECT type"
        if self.properties is not None:
            assert self.properties, "properties: should be non-empty for OBJECT type"
        if self.required is not None:
            assert set(self.required) <= set(self.properties or {}), "required: not a property"
        if self.items is not None:
            assert self.type == "ARRAY", "items: only allowed for ARRAY type"
        return self


class GeminiFunctionDeclaration(_Strict):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")
    description: str | None = None
    parameters: GeminiSchema | None = None

    @model_validator(mode="after")
    def _object_parameters(self) -> GeminiFunctionDeclaration:
        assert self.parameters is None or self.parameters.type == "OBJECT"
        return self


class GeminiTool(_Strict):
    functionDeclarations: list[GeminiFunctionDeclaration] = Field(min_length=1)


class GeminiGenerationConfig(_Strict):
    maxOutputTokens: int = Field(ge=1)


class GeminiGenerateContentRequest(_Strict):
    """The ``generateContent`` REST body, as far as lowering uses it."""

    contents: list[GeminiContent] = Field(min_length=1)
    systemInstruction: GeminiContent | None = None
    tools: list[GeminiTool] | None = None
    generationConfig: GeminiGenerationConfig | None = None

    @model_validator(mode="after")
    def _alternating_from_user(self) -> GeminiGenerateContentRequest:
        roles = [content.role for content in self.contents]
        assert roles[0] == "user", roles
        assert all(a != b for a, b in itertools.pairwise(roles)), roles
        return self


def assert_gemini_valid(body: dict[str, Any]) -> None:
    validated = GeminiGenerateContentRequest.model_validate(body)
    assert validated.model_dump(exclude_none=True) == body


def test_the_gemini_model_is_strict_enough_to_fail() -> None:
    good = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    assert_gemini_valid(good)
    for bad in (
        {"contents": [{"role": "user", "parts": [{"text": "hi", "thought": True}]}]},
        {"contents": [{"role": "user", "parts": [{"text": ""}]}]},
        {"contents": [{"role": "model", "parts": [{"text": "hi"}]}]},
        {"contents": [{"role": "user", "parts": [{"text": "a"}]}] * 2},
        {
            "contents": good["contents"],
            "tools": [
                {
                    "functionDeclarations": [
                        {"name": "f", "parameters": {"type": "OBJECT", "properties": {}}}
                    ]
                }
            ],
        },
        {
            "contents": good["contents"],
            "tools": [
                {
                    "functionDeclarations": [
                        {
                            "name": "f",
                            "parameters": {
                                "type": "OBJECT",
                                "properties": {"a": {"type": "STRING"}},
                                "additionalProperties": False,
                            },
                        }
                    ]
                }
            ],
        },
    ):
        with pytest.raises(ValidationError):
            GeminiGenerateContentRequest.model_validate(bad)


def test_gemini_body_is_valid(prompt: AssembledPrompt) -> None:
    assert_gemini_valid(lower(prompt, "gemini", read_blob=read_blob))


def test_gemini_body(prompt: AssembledPrompt) -> None:
    body = lower(prompt, "gemini", read_blob=read_blob)
    assert list(body) == ["systemInstruction", "contents", "tools", "generationConfig"]
    assert "model" not in body
    assert body["systemInstruction"] == {"parts": [{"text": "\n\n".join(SYSTEM_TEXTS)}]}
    inline = {"inlineData": {"mimeType": "image/png", "data": PNG_B64}}
    assert body["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "The test in tests/test_math.py fails, see the screenshot."},
                inline,
            ],
        },
        {
            "role": "model",
            "parts": [
                {"text": "Let me read the test and run it."},
                {"functionCall": {"name": "read_file", "args": {"path": "tests/test_math.py"}}},
                {
                    "functionCall": {
                        "name": "run_tests",
                        "args": {"args": ["-q", "tests/test_math.py"]},
                    }
                },
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "read_file", "response": {"output": TEST_SOURCE}}},
                {
                    "functionResponse": {
                        "name": "run_tests",
                        "response": {"error": "1 failed\n\n[image: image/png]"},
                    }
                },
                inline,
            ],
        },
        {
            "role": "model",
            "parts": [
                {"text": "The assertion expects 5; it should be 4."},
                {"functionCall": {"name": "edit_file", "args": EDIT_ARGS}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "edit_file",
                        "response": {"output": "patched 1 line"},
                    }
                },
                {"text": USER_TURN},
            ],
        },
    ]
    declarations = body["tools"][0]["functionDeclarations"]
    assert declarations[0] == {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {
            "type": "OBJECT",
            "properties": {
                "path": {"type": "STRING", "description": "Workspace-relative path"},
                "range": {
                    "type": "OBJECT",
                    "properties": {
                        "start": {"type": "INTEGER", "minimum": 1},
                        "end": {"type": "INTEGER", "nullable": True},
                    },
                },
            },
            "required": ["path"],
        },
    }
    assert declarations[1]["parameters"] == {
        "type": "OBJECT",
        "properties": {"args": {"type": "ARRAY", "items": {"type": "STRING"}}},
    }
    assert declarations[3] == {"name": "list_files", "description": "List the workspace."}


def test_gemini_function_response_name_comes_from_the_matching_call() -> None:
    # two calls to different tools; results answer them in the opposite order
    messages = [
        _message("user", _text("Look around.")),
        _message(
            "assistant",
            _call("a", "read_file", {"path": "x"}),
            _call("b", "list_files", {}),
        ),
        _message("user", _result("b", [_text("x\ny")]), _result("a", [_text("X")])),
        _message("user", _text(USER_TURN)),
    ]
    body = lower(make_prompt(messages=messages), "gemini", read_blob=read_blob)
    assert_gemini_valid(body)
    responses = [part["functionResponse"] for part in body["contents"][2]["parts"][:2]]
    assert responses == [
        {"name": "list_files", "response": {"output": "x\ny"}},
        {"name": "read_file", "response": {"output": "X"}},
    ]
    assert body["contents"][2]["parts"][2] == {"text": USER_TURN}


def test_gemini_window_opening_on_a_model_turn_gets_a_user_turn_first() -> None:
    messages = [_message("assistant", _text("Earlier answer.")), _message("user", _text("Next?"))]
    body = lower(make_prompt(messages=messages, system=[]), "gemini", read_blob=read_blob)
    assert_gemini_valid(body)
    assert "systemInstruction" not in body
    assert body["contents"][0] == {"role": "user", "parts": [{"text": CONTINUATION_NOTE}]}


def test_gemini_without_tools_has_no_function_parts() -> None:
    body = lower(make_prompt(tools=[]), "gemini", read_blob=read_blob)
    assert_gemini_valid(body)
    assert "tools" not in body
    assert "functionCall" not in json.dumps(body)
    assert "functionResponse" not in json.dumps(body)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            {"type": "object", "properties": {"a": {"const": 3}}, "additionalProperties": True},
            {"type": "OBJECT", "properties": {"a": {"type": "STRING", "enum": ["3"]}}},
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
            },
            {
                "type": "OBJECT",
                "properties": {"a": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}},
            },
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            },
            {"type": "OBJECT", "properties": {"a": {"type": "STRING", "nullable": True}}},
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"enum": ["x", None], "format": "uri"}},
                "required": ["a", "ghost"],
            },
            {
                "type": "OBJECT",
                "properties": {"a": {"type": "STRING", "nullable": True, "enum": ["x"]}},
                "required": ["a"],
            },
        ),
        (
            {
                "allOf": [
                    {"$ref": "#/definitions/Base"},
                    {"properties": {"b": {"type": "number", "format": "double"}}},
                ],
                "definitions": {
                    "Base": {"type": "object", "properties": {"a": {"type": "boolean"}}}
                },
            },
            {
                "type": "OBJECT",
                "properties": {
                    "a": {"type": "BOOLEAN"},
                    "b": {"type": "NUMBER", "format": "double"},
                },
            },
        ),
        (
            {
                "type": "object",
                "properties": {"node": {"$ref": "#/$defs/Node"}},
                "$defs": {
                    "Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}
                },
            },
            {
                "type": "OBJECT",
                "properties": {
                    "node": {"type": "OBJECT", "properties": {"child": {"type": "OBJECT"}}}
                },
            },
        ),
        (
            {"type": "string", "properties": {"x": {}}, "items": {}, "minLength": 1},
            {"type": "STRING", "minLength": 1},
        ),
    ],
)
def test_gemini_schema_conversion(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    original = copy.deepcopy(schema)
    assert to_gemini_schema(schema) == expected
    assert schema == original
    GeminiSchema.model_validate(expected)


def test_gemini_parameters_are_omitted_for_a_tool_without_arguments() -> None:
    assert function_parameters({"type": "object", "properties": {}}) is None
    assert function_parameters({"type": "object", "additionalProperties": False}) is None
    assert function_parameters({"properties": {"a": {"type": "string"}}}) == {
        "type": "OBJECT",
        "properties": {"a": {"type": "STRING"}},
    }


# --- system-as-user ----------------------------------------------------------------------------


def test_system_as_user_body(prompt: AssembledPrompt) -> None:
    body = lower(prompt, "system-as-user", read_blob=read_blob)
    assert_sdk_valid(ANTHROPIC, body)  # Anthropic-compatible form
    assert list(body) == ["model", "max_tokens", "messages"]
    assert body["messages"] == [
        {
            "role": "user",
            "content": "\n\n".join(
                [
                    *SYSTEM_TEXTS,
                    "The test in tests/test_math.py fails, see the screenshot.",
                    "[image: image/png] pytest output",
                ]
            ),
        },
        {
            "role": "assistant",
            "content": "Let me read the test and run it.\n\n"
            '[tool call: read_file {"path":"tests/test_math.py"}]\n\n'
            '[tool call: run_tests {"args":["-q","tests/test_math.py"]}]',
        },
        {
            "role": "user",
            "content": f"[tool: read_file]\n{TEST_SOURCE}\n\n"
            "[tool: run_tests (error)]\n1 failed\n\n[image: image/png]",
        },
        {
            "role": "assistant",
            "content": "The assertion expects 5; it should be 4.\n\n"
            f"[tool call: edit_file {json.dumps(EDIT_ARGS, separators=(',', ':'))}]",
        },
        {"role": "user", "content": f"[tool: edit_file]\npatched 1 line\n\n{USER_TURN}"},
    ]


def test_system_as_user_system_prompt_stands_alone_before_an_assistant_turn() -> None:
    messages = [_message("assistant", _text("Earlier answer.")), _message("user", _text("Next?"))]
    body = lower(make_prompt(messages=messages), "system-as-user", read_blob=read_blob)
    assert_sdk_valid(ANTHROPIC, body)
    assert body["messages"] == [
        {"role": "user", "content": "\n\n".join(SYSTEM_TEXTS)},
        {"role": "assistant", "content": "Earlier answer."},
        {"role": "user", "content": "Next?"},
    ]
    body = lower(make_prompt(messages=messages, system=[]), "system-as-user", read_blob=read_blob)
    assert body["messages"][0] == {"role": "user", "content": CONTINUATION_NOTE}


def test_system_as_user_never_reads_blobs(prompt: AssembledPrompt) -> None:
    def refuse(blob_id: str) -> bytes:
        raise AssertionError(f"read {blob_id}")

    body = lower(prompt, "system-as-user", read_blob=refuse)
    assert all(isinstance(m["content"], str) for m in body["messages"])


# --- every target: alternation and merging -----------------------------------------------------


def _roles(target: str, body: dict[str, Any]) -> list[str]:
    if target == "gemini":
        return [content["role"] for content in body["contents"]]
    if target == "openai-responses":
        return [item["role"] for item in body["input"] if item["type"] == "message"]
    return [m["role"] for m in body["messages"] if m["role"] in ("user", "assistant")]


@pytest.mark.parametrize("target", ["anthropic-messages", "gemini", "system-as-user"])
def test_consecutive_same_role_messages_are_merged(target: Any) -> None:
    messages = [
        _message("user", _text("one")),
        _message("user", _text("two")),
        _message("assistant", _text("three")),
        _message("assistant", _reasoning("hidden")),
        _message("assistant", _text("four")),
        _message("user", _text("five")),
    ]
    body = lower(make_prompt(messages=messages, system=[]), target, read_blob=read_blob)
    roles = _roles(target, body)
    assert roles == (
        ["user", "model", "user"] if target == "gemini" else ["user", "assistant", "user"]
    )
    assert "one" in json.dumps(body) and "four" in json.dumps(body)
    assert "hidden" not in json.dumps(body)


def _results_after_text() -> AssembledPrompt:
    return make_prompt(
        messages=[
            _message("user", _text("Run it.")),
            _message("assistant", _call("c1", "run_tests", {})),
            _message("user", _text("Here is the output:"), _result("c1", [_text("ok")])),
        ]
    )


def test_tool_results_open_their_user_turn_even_when_text_came_first() -> None:
    prompt = _results_after_text()
    anthropic = lower(prompt, "anthropic-messages", read_blob=read_blob)
    assert [b["type"] for b in anthropic["messages"][2]["content"]] == ["tool_result", "text"]
    chat = lower(prompt, "openai-chat", read_blob=read_blob)
    assert [m["role"] for m in chat["messages"]] == ["system", "user", "assistant", "tool", "user"]
    responses = lower(prompt, "openai-responses", read_blob=read_blob)
    assert [item["type"] for item in responses["input"]][-2:] == ["function_call_output", "message"]
    gemini = lower(prompt, "gemini", read_blob=read_blob)
    assert list(gemini["contents"][2]["parts"][0]) == ["functionResponse"]
    assert gemini["contents"][2]["parts"][1] == {"text": "Here is the output:"}


UNPAIRED_MESSAGES = [
    _message("user", _result("call_0", [_text("stale output")]), _text("Go on.")),
    _message("assistant", _call("call_1", "run_tests", {})),
    _message("user", _text("Never mind, stop.")),
    _message("assistant", _text("Stopped.")),
    _message("user", _result("call_1", [_text("late")]), _text(USER_TURN)),
]


@pytest.mark.parametrize(
    ("target", "structured"),
    [
        ("anthropic-messages", ("tool_use", "tool_result")),
        ("openai-chat", ("tool_calls", '"tool"')),
        ("openai-responses", ("function_call",)),
        ("gemini", ("functionCall", "functionResponse")),
    ],
)
def test_unpaired_tool_traffic_is_text_for_every_target(
    target: Any, structured: tuple[str, ...]
) -> None:
    for prompt in (make_prompt(messages=UNPAIRED_MESSAGES), _results_after_text()):
        body = lower(prompt, target, read_blob=read_blob)
        if target == "anthropic-messages":
            assert_sdk_valid(ANTHROPIC, body)
        elif target == "openai-chat":
            assert_sdk_valid(OPENAI_CHAT, body)
        elif target == "openai-responses":
            assert_sdk_valid(OPENAI_RESPONSES, body)
        else:
            assert_gemini_valid(body)
    dumped = json.dumps(lower(make_prompt(messages=UNPAIRED_MESSAGES), target, read_blob=read_blob))
    assert "[tool call: run_tests {}]" in dumped
    assert "[tool: unknown]\\nstale output" in dumped
    assert "[tool: run_tests]\\nlate" in dumped
    assert not any(marker in dumped for marker in structured)


def test_a_call_id_pairs_once() -> None:
    messages = [
        _message("user", _text("Run it twice.")),
        _message("assistant", _call("c1", "run_tests", {}), _call("c1", "run_tests", {"n": 2})),
        _message("user", _result("c1", [_text("first")]), _result("c1", [_text("again")])),
    ]
    body = lower(make_prompt(messages=messages), "anthropic-messages", read_blob=read_blob)
    assert_sdk_valid(ANTHROPIC, body)
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "run_tests", "input": {}},
        _text('[tool call: run_tests {"n":2}]'),
    ]
    assert body["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "c1",
            "content": [_text("first")],
            "is_error": False,
        },
        _text("[tool: run_tests]\nagain"),
    ]


def test_openai_bodies_carry_the_prompt_cache_key(prompt: AssembledPrompt) -> None:
    for target, adapter in (("openai-chat", OPENAI_CHAT), ("openai-responses", OPENAI_RESPONSES)):
        body = lower(prompt, target, read_blob=read_blob, cache_key="ses_0123")  # type: ignore[arg-type]
        assert body["prompt_cache_key"] == "ses_0123"
        assert_sdk_valid(adapter, body)
        assert "prompt_cache_key" not in lower(prompt, target, read_blob=read_blob)  # type: ignore[arg-type]
    for target in ("anthropic-messages", "gemini", "system-as-user"):
        body = lower(prompt, target, read_blob=read_blob, cache_key="ses_0123")  # type: ignore[arg-type]
        assert body == lower(prompt, target, read_blob=read_blob)  # type: ignore[arg-type]
