"""Old reasoning is masked like old tool output (issue 41; ``sidecar/context/masking.py``).

A thinking model's session: each turn an assistant message with reasoning and a call, its
result, and an answer with reasoning.  Assembled through ``context/assemble``'s path:

- every assistant message at or before the masked boundary (older than the newest masked
  result) is shown without its reasoning; those after the oldest result shown whole keep
  theirs;
- the turn in progress keeps its reasoning (the provider needs the signed thinking of the
  current tool loop);
- its group's ledger item says the reasoning was left out; a message that was only
  reasoning keeps a one-line note.

Mutation tried: ``old_reasoning = False`` in ``mask_group`` (reasoning never masked): red.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from sidecar.context.masking import REASONING_NOTE
from sidecar.context.service import ContextService
from sidecar.store import Store
from tests.unit.selection_kit import TOKENIZERS, append_entries, assemble_live, new_session, text


def _thinking(words: int, tag: str) -> dict[str, Any]:
    return {"type": "reasoning", "text": f"thinking {tag} " + "hmm " * words, "signature": tag}


def _turn(i: int) -> list[dict[str, Any]]:
    return [
        {"kind": "message", "role": "user", "content": [text(f"question {i}")]},
        {
            "kind": "message",
            "role": "assistant",
            "content": [
                _thinking(300, f"t{i}a"),
                {"type": "toolCall", "callId": f"c{i}", "name": "t", "arguments": {}},
            ],
        },
        {
            "kind": "message",
            "role": "user",
            "content": [{"type": "toolResult", "callId": f"c{i}", "content": [text("out " * 400)]}],
        },
        {"kind": "message", "role": "assistant", "content": [_thinking(200, f"t{i}b")]},
    ]


def _seq(message: dict[str, Any]) -> int | None:
    provenance = message["provenance"][0]
    return provenance.get("fromSeq") if provenance["kind"] == "transcript" else None


def test_old_reasoning_is_left_out_with_old_tool_output_and_the_current_loop_keeps_its_own() -> (
    None
):
    profile = {
        "model": "test-model",
        "window": 60_000,
        "maxOutput": 256,
        "masking": {"protectTokens": 1_000, "batchTokens": 2_000},
    }
    turn = [
        {"role": "assistant", "content": [_thinking(50, "now"), *_turn(99)[1]["content"][1:]]},
        {"role": "user", "content": _turn(99)[2]["content"]},
    ]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        try:
            sid = new_session(store)
            for i in range(12):
                append_entries(store, sid, _turn(i))
            service = ContextService(store, TOKENIZERS, home=Path(tmp) / "home")
            prompt = assemble_live(service, sid, [text("go on")], turn, profile)
        finally:
            store.close()
    masked = [i["fromSeq"] for i in prompt["ledger"] if i["visibility"] == "masked"]
    assert masked, "nothing was masked: the test checks nothing"
    # the boundary lies between the newest masked result and the oldest one shown whole
    newest_masked = max(masked)
    shown_whole = min(
        _seq(m) or 0
        for m in prompt["messages"]
        if (_seq(m) or 0) > newest_masked and m["content"][0]["type"] == "toolResult"
    )
    old = new = 0
    for message in prompt["messages"]:
        seq = _seq(message)
        if seq is None or message["role"] != "assistant":
            continue
        kinds = [p["type"] for p in message["content"]]
        if seq < newest_masked:
            old += 1
            assert "reasoning" not in kinds, seq
            if kinds == ["text"]:
                assert message["content"][0]["text"] == REASONING_NOTE
        elif seq > shown_whole:
            new += 1
            assert kinds[0] == "reasoning", seq
    assert old >= 4 and new >= 2
    current = prompt["messages"][-2]
    assert current["content"][0] == {**_thinking(50, "now"), "redacted": False}
    notes = [i for i in prompt["ledger"] if "older reasoning left out" in i["reason"]]
    assert len(notes) >= old


def test_the_newest_turns_results_are_shown_whole_with_keep_turns() -> None:
    """``masking.keepTurns``: the results of the newest user turns are never masked, however
    small ``protectTokens`` is.  Mutation tried: ``keep_turns`` ignored in ``plan_masking``
    (the newest turns' results masked with the rest): red."""
    masking = {"protectTokens": 500, "batchTokens": 500}
    profile = {"model": "test-model", "window": 60_000, "maxOutput": 256, "masking": masking}
    shown: dict[int, set[int]] = {}
    for keep in (0, 3):
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(Path(tmp))
            try:
                sid = new_session(store)
                for i in range(8):
                    append_entries(store, sid, _turn(i))
                service = ContextService(store, TOKENIZERS, home=Path(tmp) / "home")
                prompt = assemble_live(
                    service,
                    sid,
                    [text("go on")],
                    [],
                    {**profile, "masking": {**masking, "keepTurns": keep}},
                )
            finally:
                store.close()
        masked = {i["fromSeq"] for i in prompt["ledger"] if i["visibility"] == "masked"}
        shown[keep] = {seq for seq in range(3, 33, 4) if seq not in masked}  # result seqs
    assert 23 not in shown[0] and 19 not in shown[0]  # the newest ~500-1,000 tokens only
    assert {23, 27, 31} <= shown[3]  # the newest three turns' results, whole
