"""Properties of selection over random conversations (real store, real tokenizer).

For any conversation and budget: a tool call is never separated from its result, the budget
is never exceeded, the user turn and (fitting) pins are always kept, the history starts on a
user turn, the dashboard adds up, and the same input gives a byte-identical prompt.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from protocol.context import ContextAssembleParams
from protocol.entries import EntryInput
from protocol.sessions import SessionAppendParams
from sidecar.context.service import ContextService
from sidecar.context.tokens import Tokenizers
from sidecar.errors import InvalidRequestError
from sidecar.store import Store

TOKENIZERS = Tokenizers.discover()
WORDS = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=400)


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    call = 0
    for _ in range(draw(st.integers(1, 25))):
        shape = draw(st.sampled_from(["user", "assistant", "tools", "tools", "note", "pin"]))
        seq = len(entries) + 1
        if shape == "user":
            entries.append(_msg("user", [{"type": "text", "text": draw(WORDS)}]))
        elif shape == "assistant":
            entries.append(_msg("assistant", [{"type": "text", "text": draw(WORDS)}]))
        elif shape == "tools":
            n = draw(st.integers(1, 3))
            ids = [f"c{call + i}" for i in range(n)]
            call += n
            entries.append(
                _msg(
                    "assistant",
                    [
                        {
                            "type": "toolCall",
                            "callId": i,
                            "name": "t",
                            "arguments": {"q": draw(WORDS)},
                        }
                        for i in ids
                    ],
                )
            )
            answered = draw(st.lists(st.sampled_from(ids), unique=True, max_size=n))
            split = draw(st.booleans())
            results = [
                {
                    "type": "toolResult",
                    "callId": i,
                    "content": [{"type": "text", "text": draw(WORDS)}],
                }
                for i in answered
            ]
            if split:
                entries += [_msg("user", [r]) for r in results]
            elif results:
                entries.append(_msg("user", results))
        elif shape == "note":
            entries.append({"kind": "note", "text": "n"})
        elif shape == "pin" and seq > 1:
            first = draw(st.integers(1, seq - 1))
            entries.append(
                {"kind": "pin", "target": {"kind": "range", "fromSeq": first, "throughSeq": first}}
            )
    if draw(st.booleans()) and len(entries) > 4:
        through = draw(st.integers(1, len(entries)))
        keep = draw(st.one_of(st.none(), st.integers(1, through)))
        entries.append(
            {
                "kind": "compaction",
                "summary": draw(WORDS),
                "throughSeq": through,
                **({"keepFromSeq": keep} if keep else {}),
            }
        )
    return entries


def _msg(role: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": "message", "role": role, "content": content}


def _assemble(
    entries: list[dict[str, Any]],
    window: int,
    max_messages: int | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        try:
            typed: list[EntryInput] = []
            if entries:
                params = SessionAppendParams.model_validate(
                    {"sessionId": "ses_x", "entries": entries}, by_alias=True
                )
                typed = list(params.entries)

            async def build() -> str:
                session = await store.sessions.create(
                    title="p", workspace_roots=[], profile_id=None, meta=None
                )
                if typed:
                    await store.sessions.append(session.session_id, typed)
                return session.session_id

            sid = anyio.run(build)
            service = ContextService(store, TOKENIZERS, home=Path(tmp) / "home")
            request = ContextAssembleParams.model_validate(
                {
                    "sessionId": sid,
                    "userTurn": [{"type": "text", "text": "what now?"}],
                    "date": "2026-11-30",
                    "profile": {
                        "model": "test-model",
                        "window": window,
                        "maxOutput": 256,
                        "historyWindow": {"maxMessages": max_messages},
                    },
                },
                by_alias=True,
            )
            first = service.assemble(request)
            second = service.assemble(request)
            return first, second
        finally:
            store.close()


def _check_pairs(messages: list[dict[str, Any]]) -> None:
    open_calls: set[str] = set()
    for msg in messages:
        calls = {p["callId"] for p in msg["content"] if p["type"] == "toolCall"}
        results = {p["callId"] for p in msg["content"] if p["type"] == "toolResult"}
        if msg["role"] == "assistant":
            assert not open_calls, f"calls {open_calls} left without results"
            open_calls = set(calls)
        else:
            assert results <= open_calls, f"results {results - open_calls} without their call"
            open_calls -= results
    assert not open_calls, f"calls {open_calls} left without results"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=conversations(),
    window=st.integers(2200, 9000),
    max_messages=st.one_of(st.none(), st.integers(1, 12)),
)
def test_selection_properties(
    entries: list[dict[str, Any]], window: int, max_messages: int | None
) -> None:
    try:
        first, second = _assemble(entries, window, max_messages)
    except InvalidRequestError as exc:  # only when the harness + user turn cannot fit at all
        assert exc.code == "context.budget_exceeded"
        event("budget exceeded")
        return
    for item in first["ledger"]:
        if item["kind"] == "transcript":
            event(f"transcript item {item['visibility']}")
        if "interrupted" in item["reason"]:
            event("interrupted group")
    # deterministic: byte-identical
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    dashboard = first["dashboard"]
    # never over budget, and the categories add up
    assert dashboard["used"] <= dashboard["availableInput"]
    assert sum(dashboard["categories"].values()) == dashboard["used"]
    accounted = (
        sum(s["tokens"] for s in first["system"])
        + sum(m["tokens"] for m in first["messages"])
        + dashboard["categories"]["tools"]
    )
    assert accounted == dashboard["used"]
    messages = first["messages"]
    # the user turn is always there, last
    assert messages[-1]["provenance"][0]["kind"] == "userTurn"
    transcript = messages[:-1]
    # a tool call is never split from its result
    _check_pairs(transcript)
    # history starts on a user turn (pinned groups excepted)
    if transcript and transcript[0]["provenance"][0]["kind"] != "pin":
        first_msg = transcript[0]
        pinned_first = any(
            item["visibility"] == "pinned"
            and item.get("fromSeq") == first_msg["provenance"][0].get("fromSeq")
            for item in first["ledger"]
        )
        if not pinned_first:
            assert first_msg["role"] == "user"
            assert any(p["type"] != "toolResult" for p in first_msg["content"])
    # pins that fit are kept
    for item in first["ledger"]:
        if item["kind"] == "transcript" and item["visibility"] == "candidate":
            assert "pinned" not in item["reason"]
    # the history window holds (pinned groups aside)
    if max_messages is not None:
        pinned_seqs = {
            (i.get("fromSeq"), i.get("throughSeq"))
            for i in first["ledger"]
            if i["visibility"] == "pinned"
        }
        unpinned = [
            m
            for m in transcript
            if (m["provenance"][0].get("fromSeq"), m["provenance"][0].get("throughSeq"))
            not in pinned_seqs
        ]
        assert len(unpinned) <= max_messages or any(
            i["visibility"] == "pinned" for i in first["ledger"]
        )


def test_a_pinned_range_survives_a_tight_budget() -> None:
    filler = [
        _msg("user" if i % 2 == 0 else "assistant", [{"type": "text", "text": "word " * 300}])
        for i in range(30)
    ]
    entries = [
        _msg("user", [{"type": "text", "text": "remember the number 42"}]),
        _msg("assistant", [{"type": "text", "text": "noted"}]),
        *filler,
        {"kind": "pin", "target": {"kind": "range", "fromSeq": 1, "throughSeq": 2}},
    ]
    first, _ = _assemble(entries, 4000, None)
    texts = [p.get("text", "") for m in first["messages"] for p in m["content"]]
    assert "remember the number 42" in texts
    assert any(i["visibility"] == "pinned" and i.get("fromSeq") == 1 for i in first["ledger"])
    assert any(
        i["visibility"] == "candidate" and i["kind"] == "transcript" for i in first["ledger"]
    )
