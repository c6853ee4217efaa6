"""Prompt-cache stability across turns (DESIGN.md §4 stage 6).

Turn 2 of a session must repeat turn 1's request byte for byte up to turn 1's last cache
breakpoint (the end of turn 1's user message), so the provider's cache written by turn 1 is
read by turn 2.  Checked on the lowered bodies, with the cache markers themselves removed
(they move every turn and are not part of the cached content).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol.context import AssembledPrompt, ContextAssembleParams
from protocol.sessions import SessionAppendParams
from sidecar.context.lower import lower
from sidecar.context.service import ContextService
from sidecar.context.tokens import Tokenizers
from sidecar.store import Store
from tests.bodies import unmarked

TOKENIZERS = Tokenizers.discover()
LONG = "The repository has a FastAPI service with handlers under src/api and tests. " * 60


def _msg(role: str, text: str) -> dict[str, Any]:
    return {"kind": "message", "role": role, "content": [{"type": "text", "text": text}]}


@pytest.fixture
def service() -> Iterator[tuple[ContextService, Store, str]]:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))

        async def make() -> str:
            session = await store.sessions.create(
                title="cache", workspace_roots=[], profile_id=None, meta=None
            )
            return session.session_id

        sid = anyio.run(make)
        _append(store, sid, [_msg("user", "Explain the layout. " + LONG), _msg("assistant", LONG)])
        try:
            yield ContextService(store, TOKENIZERS, home=Path(tmp) / "home"), store, sid
        finally:
            store.close()


def _append(store: Store, sid: str, entries: list[dict[str, Any]]) -> None:
    params = SessionAppendParams.model_validate(
        {"sessionId": sid, "entries": entries}, by_alias=True
    )
    anyio.run(lambda: store.sessions.append(sid, list(params.entries)))


def _canon(node: Any) -> bytes:
    return json.dumps(unmarked(node), sort_keys=True).encode()


def _turn(
    service: ContextService, store: Store, sid: str, text: str, target: str, provider: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    params = ContextAssembleParams.model_validate(
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": text}],
            "date": "2026-11-30",
            "profile": {
                "provider": provider,
                "model": "claude-sonnet-4-5" if provider == "anthropic" else "gpt-4o",
            },
            "tools": [
                {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                }
            ],
        },
        by_alias=True,
    )
    result = service.assemble(params)
    prompt = AssembledPrompt.model_validate(result, by_alias=True, by_name=False)
    return result, lower(prompt, target, read_blob=store.blobs.get)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("target", "provider"),
    [
        ("anthropic-messages", "anthropic"),
        ("openai-chat", "openai"),
        ("openai-responses", "openai"),
        ("gemini", "gemini"),
    ],
)
def test_next_turn_repeats_the_cached_prefix(
    service: tuple[ContextService, Store, str], target: str, provider: str
) -> None:
    svc, store, sid = service
    first, body1 = _turn(svc, store, sid, "Where are the handlers?", target, provider)
    _append(
        store,
        sid,
        [_msg("user", "Where are the handlers?"), _msg("assistant", "Under src/api. " + LONG)],
    )
    second, body2 = _turn(svc, store, sid, "Add a /version endpoint.", target, provider)

    # turn 1's last breakpoint is its user turn; turn 2 has one before its own new turn
    assert first["cacheBreakpoints"][-1]["messageIndex"] == len(first["messages"]) - 1
    before_new = [
        b
        for b in second["cacheBreakpoints"]
        if b.get("messageIndex") == len(second["messages"]) - 2
    ]
    assert before_new, second["cacheBreakpoints"]

    messages_key = {
        "anthropic-messages": "messages",
        "openai-chat": "messages",
        "openai-responses": "input",
        "gemini": "contents",
    }[target]
    n1 = len(body1[messages_key])
    for key in body1:
        if key == messages_key:
            assert _canon(body2[key][:n1]) == _canon(body1[key]), "message prefix changed"
        elif key not in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            assert _canon(body2[key]) == _canon(body1[key]), f"{key} changed between turns"


def test_anthropic_markers_follow_the_breakpoints(
    service: tuple[ContextService, Store, str],
) -> None:
    svc, store, sid = service
    result, body = _turn(
        svc, store, sid, "Where are the handlers?", "anthropic-messages", "anthropic"
    )
    points = result["cacheBreakpoints"]
    markers = json.dumps(body).count('"cache_control"')
    assert 1 <= markers <= 4 and markers == len(points)
    # a prefix under the model's minimum (1024 for Sonnet) gets no marker
    assert all(p["prefixTokens"] >= 1024 for p in points)
    locations = {p["location"] for p in points}
    assert ("cache_control" in body["tools"][-1]) == ("tools" in locations)
    assert ("cache_control" in body["system"][-1]) == ("system" in locations)
    assert "tools" not in locations  # one small tool: far below the minimum
    last = body["messages"][-1]["content"][-1]
    assert last["cache_control"]["type"] == "ephemeral"
