"""The cache shape of a body as sent (``sidecar.context.sent``): units are bytes in the body's
own key order, markers are read from the body, tokens are counted on each block's JSON."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from sidecar.context.cache_accounting import predict_for
from sidecar.context.sent import block_tokens, count_marked_prefixes, sent_shape
from sidecar.context.tokens import IMAGE_TOKENS, Tokenizers

TOKENIZER = Tokenizers.discover().get("cl100k_base")
WORDS = "the store keeps one file per session and appends only " * 120


def _anthropic(arguments: dict[str, Any], *, marked: int = -1) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "Write the notes. " + WORDS}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Writing."},
                {"type": "tool_use", "id": "t1", "name": "write", "input": arguments},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
        },
        {"role": "user", "content": [{"type": "text", "text": "next"}]},
    ]
    messages[marked]["content"] = copy.deepcopy(messages[marked]["content"])
    if isinstance(messages[marked]["content"], list):
        messages[marked]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1000,
        "system": [
            {"type": "text", "text": "You are a coder. " + WORDS},
            {"type": "text", "text": "<environment/>", "cache_control": {"type": "ephemeral"}},
        ],
        "messages": messages,
        "tools": [{"name": "write", "description": "Write.", "input_schema": {"type": "object"}}],
    }


def test_units_are_the_bytes_sent_and_key_order_is_a_change() -> None:
    before = sent_shape(
        "anthropic-messages", _anthropic({"path": "a", "content": "x"}), "m", TOKENIZER
    )
    same = sent_shape(
        "anthropic-messages", _anthropic({"path": "a", "content": "x"}), "m", TOKENIZER
    )
    swapped = sent_shape(
        "anthropic-messages", _anthropic({"content": "x", "path": "a"}), "m", TOKENIZER
    )
    assert (before.tools, before.system, len(before.units)) == (1, 2, 8)  # a unit per block
    assert predict_for("anthropic", before, same)["firstChange"] is None
    # the same arguments in another key order are other bytes: the provider sees them so
    assert predict_for("anthropic", before, swapped)["firstChange"] == "message 1, block 1"


def test_markers_come_from_the_body_and_are_not_part_of_a_unit() -> None:
    body = _anthropic({"path": "a"}, marked=2)
    moved = _anthropic({"path": "a"}, marked=3)
    shape = sent_shape("anthropic-messages", body, "m", TOKENIZER)
    later = sent_shape("anthropic-messages", moved, "m", TOKENIZER)
    assert [(m.unit, m.ttl) for m in shape.markers] == [(2, "5m"), (6, "5m")]
    assert shape.units == later.units  # a moved cache_control changes no unit
    predicted = predict_for("anthropic", shape, later)
    assert predicted["firstChange"] is None
    assert predicted["readTokens"] == shape.tokens_through()[6]  # the entry at message 2


def test_tokens_are_counted_on_each_blocks_json_and_images_flat() -> None:
    block = {"type": "text", "text": "hello world", "cache_control": {"type": "ephemeral"}}
    data, tokens = block_tokens(TOKENIZER, block)
    assert data == b'{"type":"text","text":"hello world"}'
    assert tokens == TOKENIZER.count(data.decode())
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "A" * 9000},
    }
    _, image_tokens = block_tokens(TOKENIZER, image)
    assert IMAGE_TOKENS <= image_tokens < IMAGE_TOKENS + 40  # not 9,000 characters of base64
    url = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "B" * 9000}}
    assert block_tokens(TOKENIZER, url)[1] < IMAGE_TOKENS + 40


@pytest.mark.parametrize(
    ("target", "body", "tools", "system", "units"),
    [
        (
            "openai-chat",
            {
                "model": "gpt-4.1",
                "messages": [
                    {"role": "system", "content": "s"},
                    {"role": "user", "content": "u"},
                ],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
                "prompt_cache_key": "ses_1",
            },
            1,
            0,
            3,
        ),
        (
            "openai-responses",
            {"model": "gpt-4.1", "instructions": "s", "input": [{"role": "user", "content": "u"}]},
            0,
            1,
            2,
        ),
        (
            "gemini",
            {
                "systemInstruction": {"parts": [{"text": "s"}]},
                "contents": [{"role": "user", "parts": [{"text": "u"}, {"text": "v"}]}],
                "tools": [{"functionDeclarations": [{"name": "f"}, {"name": "g"}]}],
            },
            2,
            1,
            4,
        ),
    ],
)
def test_every_target_is_cut_where_its_provider_caches(
    target: str, body: dict[str, Any], tools: int, system: int, units: int
) -> None:
    shape = sent_shape(target, body, "gemini-2.5-flash", TOKENIZER)
    assert (shape.tools, shape.system, len(shape.units)) == (tools, system, units)
    # what is not a unit (the model, the cache key, limits) changes nothing
    other = json.loads(json.dumps(body))
    other["prompt_cache_key"] = "ses_2"
    assert sent_shape(target, other, "gemini-2.5-flash", TOKENIZER).units == shape.units


def test_marked_breakpoints_get_the_prefix_as_sent() -> None:
    shape = sent_shape("anthropic-messages", _anthropic({"path": "a"}), "m", TOKENIZER)
    points: list[dict[str, Any]] = [
        {"location": "system", "ttl": "5m", "prefixTokens": 1},
        {"location": "message", "messageIndex": 3, "ttl": "5m", "prefixTokens": 2},
    ]
    count_marked_prefixes(points, shape)
    through = shape.tokens_through()
    assert [p["prefixTokens"] for p in points] == [through[2], through[-1]]


@pytest.mark.parametrize(
    "target", ["anthropic-messages", "openai-chat", "openai-responses", "gemini"]
)
def test_a_sessions_blocks_are_encoded_once_and_a_reused_one_is_the_same_bytes(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session's next body, lowered from the same validated parts, holds the same string
    objects: its blocks of strings are taken from the session's memo, not encoded and hashed
    again, and give the same units as a body computed without it — also when a block's text
    is replaced, its keys reordered, or a marker moves onto it."""
    from sidecar.context import sent

    texts = [f"message {i}: " + WORDS[: 40 + i] for i in range(6)]

    def body(order: list[int], *, swap: int = -1, marked: int = -1) -> dict[str, Any]:
        if target == "gemini":
            contents = [{"role": "user", "parts": [{"text": texts[i]}]} for i in order]
            return {"contents": contents}
        if target == "openai-responses":
            return {"input": [{"role": "user", "content": texts[i]} for i in order]}
        if target == "openai-chat":
            return {"messages": [{"role": "user", "content": texts[i]} for i in order]}
        messages = []
        for n, i in enumerate(order):
            block: dict[str, Any] = {"type": "text", "text": texts[i]}
            if n == swap:
                block = {"text": texts[i], "type": "text"}
            if n == marked:
                block["cache_control"] = {"type": "ephemeral"}
            messages.append({"role": "user", "content": [block]})
        return {"messages": messages}

    encoded: list[bytes] = []
    real = sent.block_tokens

    def counting(tokenizer: Any, block: Any) -> tuple[bytes, int]:
        data, tokens = real(tokenizer, block)
        encoded.append(data)
        return data, tokens

    monkeypatch.setattr(sent, "block_tokens", counting)
    memo: sent.SentBlocks = {}
    first = sent_shape(target, body([0, 1, 2, 3]), "m", TOKENIZER, memo)
    assert len(encoded) == 4
    encoded.clear()
    grown = sent_shape(target, body([0, 1, 2, 3, 4]), "m", TOKENIZER, memo)
    assert len(encoded) == 1  # only the new block
    assert grown.units[:4] == first.units[:4]
    assert len(memo) == 5  # the last body's blocks, no more

    texts[2] = "".join(["message 2: ", WORDS[:42]])  # equal text, another object
    texts[3] = "message 3 changed"
    variants = [
        ([0, 1, 2, 3, 4], {}),
        ([0, 1, 2, 3, 4, 5], {"swap": 1}),
        ([0, 1, 2, 3, 4, 5], {"marked": 4}),
        ([5, 4, 3, 2, 1, 0], {}),
    ]
    for order, options in variants:
        if target != "anthropic-messages" and options:
            continue
        made = body(order, **options)
        with_memo = sent_shape(target, made, "m", TOKENIZER, memo)
        plain = sent_shape(target, made, "m", TOKENIZER)
        assert with_memo.units == plain.units
        assert with_memo.markers == plain.markers
    assert len(memo) == 6  # the last body's blocks only
