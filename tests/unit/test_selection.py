"""Selection cases the properties reach only by chance, each pinned down by name.

- a compaction summary that does not fit gives way to the history it stands for, and says so;
- a pin acts on a whole call/result group, rendered once and well-formed;
- an in-chat preset component never lands between a tool call and its result;
- the user turn is reserved before the transcript, ``historyWindow.maxTokens`` holds, and a
  group larger than the whole budget is ``blocked`` without ending the walk for older ones.

Lowered bodies are checked against the providers' SDK types (tests/unit/test_lower.py).
"""

from __future__ import annotations

from typing import Any

from protocol.context import AssembledPrompt
from sidecar.context.assemble import item_id
from sidecar.context.lower import lower
from tests.unit import test_lower as lowering
from tests.unit.selection_kit import TOOL, assemble_entries, call, msg, result, text


def _texts(prompt: dict[str, Any]) -> list[str]:
    return [p.get("text", "") for m in prompt["messages"] for p in m["content"]]


def _transcript_items(prompt: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in prompt["ledger"] if i["kind"] == "transcript"]


def _no_blobs(blob_id: str) -> bytes:
    raise AssertionError(f"no blob expected, asked for {blob_id}")


def _assert_lowered_pairs(prompt: dict[str, Any], call_ids: set[str]) -> None:
    """Both lowerings send each call as a structured call answered by its structured result."""
    typed = AssembledPrompt.model_validate(prompt)
    anthropic = lower(typed, "anthropic-messages", read_blob=_no_blobs)
    lowering.assert_sdk_valid(lowering.ANTHROPIC, anthropic)
    blocks = [(m["role"], b) for m in anthropic["messages"] for b in m["content"]]
    assert {b["id"] for _, b in blocks if b["type"] == "tool_use"} == call_ids
    assert {b["tool_use_id"] for _, b in blocks if b["type"] == "tool_result"} == call_ids
    assert not any("[tool call" in b.get("text", "") for _, b in blocks)
    assert not any("earlier tool call" in b.get("text", "") for _, b in blocks)

    chat = lower(typed, "openai-chat", read_blob=_no_blobs)
    lowering.assert_sdk_valid(lowering.OPENAI_CHAT, chat)
    messages = chat["messages"]
    seen: set[str] = set()
    for i, message in enumerate(messages):
        calls = {c["id"] for c in message.get("tool_calls") or []}
        if not calls:
            continue
        seen |= calls
        answers: set[str] = set()
        for after in messages[i + 1 :]:  # tool messages follow their assistant message directly
            if after["role"] != "tool":
                break
            answers.add(after["tool_call_id"])
        assert calls <= answers, (calls, answers)
    assert seen == call_ids


# --- a compaction summary that does not fit ----------------------------------------------------

ARCHIVED = [
    msg("user", [text("remember the number 42")]),
    msg("assistant", [text("noted")]),
    msg("user", [text("and the colour teal")]),
    msg("assistant", [text("noted too")]),
]


def test_a_summary_larger_than_the_budget_gives_way_to_the_archived_history() -> None:
    entries = [
        *ARCHIVED,
        {"kind": "compaction", "summary": "word " * 5000, "throughSeq": 4},
        msg("user", [text("latest question")]),
        msg("assistant", [text("latest answer")]),
    ]
    prompt, again = assemble_entries(entries, window=4000)
    assert prompt == again
    assert not any(s["category"] == "summary" for s in prompt["system"])
    summary = [i for i in prompt["ledger"] if i["kind"] == "summary"]
    assert len(summary) == 1 and summary[0]["visibility"] == "blocked"
    assert "archived history 1-4 is offered instead" in summary[0]["reason"]
    # nothing claims to be represented by a summary the model does not see
    assert not any(i["visibility"] == "summaryOnly" for i in prompt["ledger"])
    # the archived history is offered to the walk like any transcript: here it all fits
    texts = _texts(prompt)
    assert texts[:2] == ["remember the number 42", "noted"]
    assert texts[-3:] == ["latest question", "latest answer", "what now?"]
    archived = [i for i in _transcript_items(prompt) if i["fromSeq"] <= 4]
    assert [i["visibility"] for i in archived] == ["visible"] * 4
    assert [d["code"] for d in prompt["diagnostics"]] == ["context.summary_omitted"]
    assert prompt["diagnostics"][0]["severity"] == "warning"


def test_a_summary_that_no_longer_fits_is_a_candidate_and_the_newest_history_is_kept() -> None:
    filler = [
        msg("user" if i % 2 == 0 else "assistant", [text(f"turn {i} " + "word " * 120)])
        for i in range(24)
    ]
    entries = [
        *ARCHIVED,
        *filler,
        # the summary fits the whole budget but not what the harness and user turn leave
        {"kind": "compaction", "summary": "summary " * 2600, "throughSeq": 28},
        msg("user", [text("latest question")]),
    ]
    prompt, _ = assemble_entries(entries, window=4200, user_turn="word " * 400)
    summary = [i for i in prompt["ledger"] if i["kind"] == "summary"]
    assert summary[0]["visibility"] == "candidate", summary
    assert "offered instead" in summary[0]["reason"]
    assert not any(i["visibility"] == "summaryOnly" for i in prompt["ledger"])
    # the newest archived turns that fit are shown, the older ones are accounted as left out
    assert any(t.startswith("turn 23 ") for t in _texts(prompt))
    older = [i for i in _transcript_items(prompt) if i["visibility"] == "candidate"]
    assert older and older[-1]["fromSeq"] == 1
    assert [d["code"] for d in prompt["diagnostics"]] == ["context.summary_omitted"]


def test_a_summary_that_fits_stands_for_the_archived_history() -> None:
    entries = [
        *ARCHIVED,
        {"kind": "compaction", "summary": "42 and teal", "throughSeq": 4},
        msg("user", [text("latest question")]),
    ]
    prompt, _ = assemble_entries(entries, window=4000)
    assert prompt["system"][-1]["category"] == "summary"
    archived = [i for i in prompt["ledger"] if i["visibility"] == "summaryOnly"]
    assert [(i["fromSeq"], i["throughSeq"]) for i in archived] == [(1, 4)]
    assert "remember the number 42" not in _texts(prompt)
    assert prompt["diagnostics"] == []


def test_a_dropped_summary_gives_way_to_the_archived_history_too() -> None:
    summary_id = item_id("summary", "summary:5")  # the compaction is entry 5
    entries = [
        *ARCHIVED,
        {"kind": "compaction", "summary": "42 and teal", "throughSeq": 4},
        {"kind": "drop", "target": {"kind": "item", "itemId": summary_id}},
    ]
    prompt, _ = assemble_entries(entries, window=4000)
    summary = [i for i in prompt["ledger"] if i["kind"] == "summary"]
    assert [(i["itemId"], i["visibility"]) for i in summary] == [(summary_id, "dropped")]
    assert summary[0]["reason"] == (
        "dropped by a drop entry; the archived history 1-4 is offered instead"
    )
    assert _texts(prompt)[:4] == [
        "remember the number 42",
        "noted",
        "and the colour teal",
        "noted too",
    ]
    assert [d["code"] for d in prompt["diagnostics"]] == ["context.summary_omitted"]


# --- pins act on whole groups ------------------------------------------------------------------

TOOL_TURN = [
    msg("user", [text("look it up")]),
    msg("assistant", [text("looking"), call("c1"), call("c2")]),
    msg("user", [result("c1", "first answer")]),
    msg("user", [result("c2", "second answer")]),
    msg("assistant", [text("done")]),
]


def _pin(seq: int) -> dict[str, Any]:
    return {"kind": "pin", "target": {"kind": "range", "fromSeq": seq, "throughSeq": seq}}


def test_pinning_a_tool_result_pins_its_whole_group() -> None:
    for pinned in (3, 4, 2):  # a result, the other result, the call: the same group
        prompt, _ = assemble_entries([*TOOL_TURN, _pin(pinned)], window=4000, tools=[TOOL])
        items = [i for i in _transcript_items(prompt) if i["visibility"] == "pinned"]
        assert [(i["fromSeq"], i["throughSeq"]) for i in items] == [(2, 4)], pinned
        texts = _texts(prompt)
        assert not any("interrupted" in t or "earlier tool call" in t for t in texts), texts
        assert texts.count("looking") == 1
        roles = [m["role"] for m in prompt["messages"]]
        assert roles == ["user", "assistant", "user", "user", "assistant", "user"]
        _assert_lowered_pairs(prompt, {"c1", "c2"})


def test_a_pinned_group_survives_a_tight_budget_whole() -> None:
    filler = [msg("user" if i % 2 == 0 else "assistant", [text("word " * 300)]) for i in range(20)]
    prompt, _ = assemble_entries([*TOOL_TURN, *filler, _pin(3)], window=4000, tools=[TOOL])
    pinned = [i for i in _transcript_items(prompt) if i["visibility"] == "pinned"]
    assert [(i["fromSeq"], i["throughSeq"]) for i in pinned] == [(2, 4)]
    assert "first answer" in str(prompt["messages"]) and "second answer" in str(prompt["messages"])
    _assert_lowered_pairs(prompt, {"c1", "c2"})


# --- in-chat components land on group boundaries -----------------------------------------------


def _component(depth: int) -> dict[str, Any]:
    return {
        "identifier": "reminder",
        "role": "system",
        "position": "inChat",
        "depth": depth,
        "content": "Keep answers short.",
    }


def test_an_in_chat_component_never_splits_a_call_from_its_result() -> None:
    note = "[system note] Keep answers short."
    # depth 2 and 3 fall inside the call/result group (messages 2-4): it moves before the call
    for depth, at in ((1, 4), (2, 1), (3, 1), (4, 1), (5, 0), (9, 0)):
        prompt, _ = assemble_entries(
            TOOL_TURN, window=4000, tools=[TOOL], components=[_component(depth)]
        )
        texts = [m["content"][0].get("text") for m in prompt["messages"]]
        assert texts.index(note) == at, (depth, texts)
        _assert_lowered_pairs(prompt, {"c1", "c2"})


def test_an_in_chat_component_at_depth_zero_sits_before_the_user_turn() -> None:
    prompt, _ = assemble_entries(TOOL_TURN, window=4000, tools=[TOOL], components=[_component(0)])
    texts = [m["content"][0].get("text") for m in prompt["messages"]]
    assert texts[-2:] == ["[system note] Keep answers short.", "what now?"]


# --- the priorities selection lives by ---------------------------------------------------------


def test_the_user_turn_is_reserved_before_the_transcript() -> None:
    """Many small groups would fill the budget to the last token: a user turn offered after
    them would not fit (mutation: offer the user turn after the transcript).  A tiny quantum
    makes the window fill the room to the last group (a held window leaves slack that would
    let the mutation through)."""
    history = [
        msg("user" if i % 2 == 0 else "assistant", [text(f"message {i} " + "word " * 20)])
        for i in range(200)
    ]
    prompt, _ = assemble_entries(
        history, window=6000, user_turn="long question " * 300, quantum=0.001
    )
    last = prompt["messages"][-1]
    assert last["provenance"][0]["kind"] == "userTurn"
    assert any(i["visibility"] == "candidate" for i in _transcript_items(prompt))
    assert prompt["dashboard"]["used"] <= prompt["dashboard"]["availableInput"]


def test_history_window_max_tokens_bounds_the_transcript() -> None:
    history = [
        msg("user" if i % 2 == 0 else "assistant", [text(f"message {i} " + "word " * 20)])
        for i in range(30)
    ]
    prompt, _ = assemble_entries(history, window=60_000, max_tokens=200, keep_user_messages=False)
    shown = sum(m["tokens"] for m in prompt["messages"][:-1])
    assert 0 < shown <= 200
    assert prompt["dashboard"]["categories"]["transcript"] == shown
    left = [i for i in _transcript_items(prompt) if i["visibility"] == "candidate"]
    start = prompt["messages"][0]["provenance"][0]["fromSeq"]
    assert left and left[-1]["reason"] == (
        f"outside the history window (200 tokens): older than the window start at seq {start}; "
        "the window moves in ~50 tokens"
    )
    assert (left[-1]["fromSeq"], left[-1]["throughSeq"]) == (1, start - 1)


def test_a_group_larger_than_the_budget_is_blocked_and_older_ones_still_fit() -> None:
    history = [
        msg("user", [text("before the paste")]),
        msg("assistant", [text("ok")]),
        msg("user", [text("paste " * 6000)]),
        msg("assistant", [text("too long to read")]),
        msg("user", [text("after the paste")]),
    ]
    prompt, _ = assemble_entries(history, window=4000)
    blocked = [i for i in _transcript_items(prompt) if i["visibility"] == "blocked"]
    assert [(i["fromSeq"], i["reason"][:27]) for i in blocked] == [
        (3, "larger than the whole input")
    ]
    assert _texts(prompt) == [
        "before the paste",
        "ok",
        "too long to read",
        "after the paste",
        "what now?",
    ]
