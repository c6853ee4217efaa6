"""Properties of selection over random conversations (real store, real tokenizer).

For any conversation, budget, history window and user turn: a tool call is never separated
from its result, the budget is never exceeded, the user turn is always kept (or, when it alone
cannot fit after the harness, the answer is ``context.budget_exceeded``), a pin keeps its whole
group whenever that group fits, the history window bounds the unpinned transcript, the history
starts on a user turn, a compaction summary either stands for its archived history or gives
way to it, the dashboard adds up, and the same input gives a byte-identical prompt.

Each property reports the branches it reached (``hypothesis.event``; run with
``--hypothesis-show-statistics``), and explicit examples reach the rare ones every run.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from sidecar.context.limits import SAFETY_MARGIN
from sidecar.errors import InvalidRequestError
from tests.unit.selection_kit import MAX_OUTPUT, assemble_entries, msg, text

WORDS = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=400)
#: A user turn: usually short, sometimes squeezing the transcript, sometimes too big to fit.
USER_TURNS = st.one_of(
    st.just("what now?"),
    st.just("what now?"),
    st.integers(100, 2000).map(lambda n: "word " * n),
    st.integers(2500, 9000).map(lambda n: "word " * n),
)
#: The window of one test case: the generator sizes long texts and summaries against it.
WINDOWS = st.shared(st.integers(2200, 9000), key="window")


def _sized(window: int, word: str, size: str) -> st.SearchStrategy[str]:
    """Text of ``size`` against the case's input budget: ``short``; ``large`` (fits the whole
    budget, never what the harness leaves); ``tight`` (a little less than the whole budget, so it
    never fits what the harness leaves); ``over`` (larger than the whole budget: blocked)."""
    available = window - MAX_OUTPUT - SAFETY_MARGIN
    if size == "short":
        return WORDS
    if size == "large":
        return st.integers(available - 350, available - 50).map(lambda n: word * n)
    if size == "tight":
        return st.integers(20, 300).map(lambda k: word * (available - k))
    return st.integers(available + 100, available + 2000).map(lambda n: word * n)


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Message text: mostly short, now and then large (a pinned group may not fit what is
    left) or over the budget (a pinned or walked group is blocked)."""
    size = draw(st.sampled_from(["short"] * 5 + ["large", "over"]))
    return draw(_sized(draw(WINDOWS), "big ", size))


@st.composite
def summaries(draw: st.DrawFn) -> str:
    """Short (shown), tight (left as a candidate) or over the budget (blocked)."""
    size = draw(st.sampled_from(["short", "tight", "over"]))
    return draw(_sized(draw(WINDOWS), "sum ", size))


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    call = 0
    for _ in range(draw(st.integers(1, 25))):
        shape = draw(st.sampled_from(["user", "assistant", "tools", "tools", "note", "pin"]))
        seq = len(entries) + 1
        if shape == "user":
            entries.append(msg("user", [text(draw(texts()))]))
        elif shape == "assistant":
            entries.append(msg("assistant", [text(draw(texts()))]))
        elif shape == "tools":
            n = draw(st.integers(1, 3))
            ids = [f"c{call + i}" for i in range(n)]
            call += n
            entries.append(
                msg(
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
                    "content": [text(draw(texts()))],
                }
                for i in answered
            ]
            if split:
                entries += [msg("user", [r]) for r in results]
            elif results:
                entries.append(msg("user", results))
        elif shape == "note":
            entries.append({"kind": "note", "text": "n"})
        elif shape == "pin" and seq > 1:
            first = draw(st.integers(1, seq - 1))
            entries.append(
                {"kind": "pin", "target": {"kind": "range", "fromSeq": first, "throughSeq": first}}
            )
    if len(entries) > 2 and draw(st.sampled_from([True, True, False])):
        through = draw(st.integers(1, len(entries)))
        keep = draw(st.one_of(st.none(), st.integers(1, through)))
        entries.append(
            {
                "kind": "compaction",
                "summary": draw(summaries()),
                "throughSeq": through,
                **({"keepFromSeq": keep} if keep else {}),
            }
        )
    return entries


# --- oracles over the generated entries (seq = position + 1: all appended at once) -----------


def _shape(entries: list[dict[str, Any]], seq: int) -> str:
    entry = entries[seq - 1]
    if entry["kind"] != "message":
        return "other"
    types = {p["type"] for p in entry["content"]}
    if entry["role"] == "assistant":
        return "calls" if "toolCall" in types else "assistant"
    return "results" if "toolResult" in types else "user"


def _compacted(entries: list[dict[str, Any]]) -> bool:
    return bool(entries) and entries[-1]["kind"] == "compaction"


def _spans(entries: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """The candidate transcript: everything, or the kept tail and what follows a compaction."""
    head = len(entries)
    if not _compacted(entries):
        return [(1, head)]
    last = entries[-1]
    through, keep = last["throughSeq"], last.get("keepFromSeq")
    spans = [(keep, through)] if keep is not None else []
    return [*spans, (through + 1, head)] if through < head else spans


def _archived_to(entries: list[dict[str, Any]]) -> int:
    last = entries[-1]
    keep = last.get("keepFromSeq")
    return int(keep - 1 if keep is not None else last["throughSeq"])


def _group_of(entries: list[dict[str, Any]], seq: int) -> tuple[int, int] | None:
    """The generator writes results right after their call: a result's group starts at the
    call before it (when that call is in the same span), a call's group takes its results."""
    span = next(((a, b) for a, b in _spans(entries) if a <= seq <= b), None)
    shape = _shape(entries, seq)
    if span is None or shape == "other":
        return None
    first = seq
    if shape == "results":
        while first > span[0] and _shape(entries, first - 1) == "results":
            first -= 1
        if first == span[0] or _shape(entries, first - 1) != "calls":
            return seq, seq
        first -= 1
    elif shape != "calls":
        return seq, seq
    last = first
    while last < span[1] and _shape(entries, last + 1) == "results":
        last += 1
    return first, last


def _msg_seq(message: dict[str, Any]) -> int | None:
    seq = message["provenance"][0].get("fromSeq")
    return int(seq) if seq is not None else None


def _users_kept(message: dict[str, Any]) -> bool:
    """The one message of the user's earlier messages the window hides (keepUserMessages):
    shown before the window, inside an explicit cap."""
    return str(message["provenance"][0].get("id", "")).startswith("userMessages:")


def _check_pairs(messages: list[dict[str, Any]]) -> None:
    open_calls: set[str] = set()
    for message in messages:
        calls = {p["callId"] for p in message["content"] if p["type"] == "toolCall"}
        results = {p["callId"] for p in message["content"] if p["type"] == "toolResult"}
        if message["role"] == "assistant":
            assert not open_calls, f"calls {open_calls} left without results"
            open_calls = set(calls)
        else:
            assert results <= open_calls, f"results {results - open_calls} without their call"
            open_calls -= results
    assert not open_calls, f"calls {open_calls} left without results"


# --- the properties ----------------------------------------------------------------------------


def _check_budget_exceeded(
    exc: InvalidRequestError, entries: list[dict[str, Any]], window: int
) -> None:
    """Refused only because the user turn alone does not fit after the harness: what the
    transcript, pins or summary take never counts against it."""
    assert exc.code == "context.budget_exceeded"
    details = exc.details
    assert details is not None
    assert details["userTurnTokens"] > details["remaining"]
    short, _ = assemble_entries(entries, window=window)
    harness = sum(i["tokens"] for i in short["ledger"] if i["kind"] in ("harness", "tool"))
    assert details["availableInput"] == short["dashboard"]["availableInput"]
    assert details["remaining"] == details["availableInput"] - harness


def _check_pins(entries: list[dict[str, Any]], prompt: dict[str, Any]) -> None:
    """A pin keeps its whole group, shown once, whenever the group fits what is left after
    the harness, the user turn and earlier pins; otherwise the ledger says it did not fit."""
    available = prompt["dashboard"]["availableInput"]
    ledger = prompt["ledger"]
    targets = {e["target"]["fromSeq"] for e in entries if e["kind"] == "pin"}
    for seq in sorted(targets):
        group = _group_of(entries, seq)
        if group is None:
            continue
        index, item = next(
            (i, it)
            for i, it in enumerate(ledger)
            if it["kind"] == "transcript" and (it.get("fromSeq"), it.get("throughSeq")) == group
        )
        if item["visibility"] == "pinned":
            event("pin: group kept" + (" (a tool exchange)" if group[0] != group[1] else ""))
            shown = [_msg_seq(m) for m in prompt["messages"]]
            for member in range(group[0], group[1] + 1):
                assert shown.count(member) == (_shape(entries, member) != "other")
            continue
        used_before = sum(
            i["tokens"] for i in ledger[:index] if i["visibility"] in ("visible", "pinned")
        )
        if item["visibility"] == "blocked":
            event("pin: group larger than the budget")
            assert item["tokens"] > available
            continue
        event("pin: group did not fit")
        assert item["visibility"] == "candidate", item
        left = re.search(r"\((\d+) left\)", item["reason"])
        assert left is not None, item
        assert int(left.group(1)) == available - used_before
        assert item["tokens"] > available - used_before


def _check_summary(entries: list[dict[str, Any]], prompt: dict[str, Any]) -> None:
    """A summary is shown and stands for its archived history, or gives way to it: the
    archived messages are then shown or accounted as left out, and a diagnostic says so."""
    ledger = prompt["ledger"]
    summary = [i for i in ledger if i["kind"] == "summary"]
    archived = [i for i in ledger if i["visibility"] == "summaryOnly"]
    omitted = [d for d in prompt["diagnostics"] if d["code"] == "context.summary_omitted"]
    if not _compacted(entries):
        assert not summary and not archived and not omitted
        return
    archived_to = _archived_to(entries)
    assert len(summary) == 1
    if summary[0]["visibility"] == "visible":
        event("summary: shown")
        assert not omitted
        if archived_to >= 1:
            assert [(i["fromSeq"], i["throughSeq"]) for i in archived] == [(1, archived_to)]
        assert all(
            (_msg_seq(m) or archived_to + 1) > archived_to
            for m in prompt["messages"]
            if not _users_kept(m)  # the user's archived messages, verbatim
        )
        return
    event(f"summary: {summary[0]['visibility']}, archived history offered instead")
    assert not archived
    if archived_to < 1:
        return
    assert summary[0]["reason"].endswith(f"the archived history 1-{archived_to} is offered instead")
    assert len(omitted) == 1
    shown = {_msg_seq(m) for m in prompt["messages"]}
    accounted = [
        (i["fromSeq"], i["throughSeq"])
        for i in ledger
        if i["kind"] == "transcript" and i["visibility"] != "visible" and "fromSeq" in i
    ]
    for seq in range(1, archived_to + 1):
        if _shape(entries, seq) != "other" and seq not in shown:
            assert any(a <= seq <= b for a, b in accounted), f"archived seq {seq} lost silently"


def _check_window(
    prompt: dict[str, Any], max_messages: int | None, max_tokens: int | None
) -> list[dict[str, Any]]:
    """The history window bounds the transcript outside pinned groups (pins are on top of
    it), and when it cut the transcript, the ledger names its start (the first unpinned
    message shown, or past the head when nothing is), how far it moves (a quarter of the cap
    that cut), and accounts for everything before it; returns that unpinned transcript."""
    pinned = [
        (i["fromSeq"], i["throughSeq"]) for i in prompt["ledger"] if i["visibility"] == "pinned"
    ]
    unpinned = [
        m
        for m in prompt["messages"][:-1]
        if not any(a <= (_msg_seq(m) or 0) <= b for a, b in pinned)
    ]
    if pinned and (max_messages is not None or max_tokens is not None):
        event("window: holds beside a pin")
    if max_messages is not None:  # the user's earlier messages inside the cap
        assert len(unpinned) <= max_messages
    if max_tokens is not None:
        assert sum(m["tokens"] for m in unpinned) <= max_tokens
    if unpinned and _users_kept(unpinned[0]):
        event("window: the user's earlier messages kept inside the cap")
        unpinned = unpinned[1:]
    cuts = [
        (item, found)
        for item in prompt["ledger"]
        if (
            found := re.search(
                r"older than the window start at seq (\d+); the window moves "
                r"in ~([\d,]+) (tokens|messages)$",
                item["reason"],
            )
        )
    ]
    assert len(cuts) <= 1
    for item, found in cuts:
        start, step, unit = (
            int(found.group(1)),
            int(found.group(2).replace(",", "")),
            found.group(3),
        )
        cause = item["reason"].split(":")[0]
        event(f"window: {'budget' if 'budget' in cause else unit + ' cap'} cut the transcript")
        # a cap's part for the window: the cap, less what it keeps for the user's messages
        users = re.search(r", and (\d+)(?: message)? for the user's earlier messages\)$", cause)
        kept = int(users.group(1)) if users else 0
        if users:
            cause = cause[: users.start()] + ")"
        assert item["visibility"] == "candidate" and item["throughSeq"] == start - 1
        if unpinned:
            assert _msg_seq(unpinned[0]) == start
        else:
            event("window: everything unpinned is outside it")
        part_messages, part_tokens = (max_messages or 0) - kept, (max_tokens or 0) - kept
        if cause == f"outside the history window ({part_messages} messages)":
            assert unit == "messages" and step == max(int(part_messages * 0.25), 1)
        elif cause == f"outside the history window ({part_tokens} tokens)":
            assert unit == "tokens" and step == max(int(part_tokens * 0.25), 1)
        else:
            assert cause == "older than what fits in the budget" and unit == "tokens"
    for item in prompt["ledger"]:
        if item["visibility"] == "masked":
            event("masking: an old tool result is masked")
            assert item["fromSeq"] == item["throughSeq"]
    return unpinned


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=conversations(),
    window=WINDOWS,
    max_messages=st.one_of(st.none(), st.integers(1, 12)),
    max_tokens=st.one_of(st.none(), st.integers(50, 3000)),
    user_turn=USER_TURNS,
)
# the user turn alone is too big for what the harness leaves
@example(
    entries=[msg("user", [text("hi")])],
    window=2200,
    max_messages=None,
    max_tokens=None,
    user_turn="word " * 5000,
)
# a pinned tool exchange, a pinned message too big for what the user turn leaves, and one
# larger than the whole budget
@example(
    entries=[
        msg("user", [text("hi")]),
        msg("assistant", [{"type": "toolCall", "callId": "c0", "name": "t", "arguments": {}}]),
        msg("user", [{"type": "toolResult", "callId": "c0", "content": [text("r")]}]),
        msg("user", [text("big " * 1500)]),
        msg("user", [text("huge " * 2000)]),
        {"kind": "pin", "target": {"kind": "range", "fromSeq": 3, "throughSeq": 3}},
        {"kind": "pin", "target": {"kind": "range", "fromSeq": 4, "throughSeq": 4}},
        {"kind": "pin", "target": {"kind": "range", "fromSeq": 5, "throughSeq": 5}},
        msg("assistant", [text("ok")]),
    ],
    window=3000,
    max_messages=1,
    max_tokens=None,
    user_turn="word " * 600,
)
# summaries that do not fit: larger than the budget, and larger than what is left
@example(
    entries=[
        *[msg("user" if i % 2 == 0 else "assistant", [text(f"m{i}")]) for i in range(5)],
        {"kind": "compaction", "summary": "sum " * 9000, "throughSeq": 3},
    ],
    window=4000,
    max_messages=None,
    max_tokens=100,
    user_turn="what now?",
)
@example(
    entries=[
        *[msg("user" if i % 2 == 0 else "assistant", [text(f"m{i}")]) for i in range(5)],
        {"kind": "compaction", "summary": "sum " * 2500, "throughSeq": 4, "keepFromSeq": 3},
    ],
    window=4000,
    max_messages=None,
    max_tokens=None,
    user_turn="word " * 600,
)
# old tool results masked (their tool output is over what masking protects, by batches)
@example(
    entries=[
        msg("user", [text("read them all")]),
        *(
            m
            for i in range(6)
            for m in (
                msg(
                    "assistant",
                    [{"type": "toolCall", "callId": f"c{i}", "name": "t", "arguments": {}}],
                ),
                msg(
                    "user",
                    [{"type": "toolResult", "callId": f"c{i}", "content": [text("big " * 600)]}],
                ),
            )
        ),
        msg("assistant", [text("done")]),
    ],
    window=4000,
    max_messages=None,
    max_tokens=None,
    user_turn="what now?",
)
def test_selection_properties(
    entries: list[dict[str, Any]],
    window: int,
    max_messages: int | None,
    max_tokens: int | None,
    user_turn: str,
) -> None:
    try:
        first, second = assemble_entries(
            entries,
            window=window,
            max_messages=max_messages,
            max_tokens=max_tokens,
            user_turn=user_turn,
        )
    except InvalidRequestError as exc:
        event("user turn: budget exceeded")
        _check_budget_exceeded(exc, entries, window)
        return
    event("user turn: kept")
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
    # the user turn is always there, last, and said to be
    assert messages[-1]["provenance"][0]["kind"] == "userTurn"
    assert messages[-1]["content"] == [text(user_turn)]
    assert any(i["kind"] == "userTurn" and i["visibility"] == "visible" for i in first["ledger"])
    # a tool call is never split from its result
    _check_pairs(messages[:-1])
    _check_pins(entries, first)
    _check_summary(entries, first)
    unpinned = _check_window(first, max_messages, max_tokens)
    # the history outside pinned groups starts on a user turn
    if unpinned:
        assert unpinned[0]["role"] == "user"
        assert not any(p["type"] == "toolResult" for p in unpinned[0]["content"])


def test_a_pinned_range_survives_a_tight_budget() -> None:
    filler = [
        msg("user" if i % 2 == 0 else "assistant", [{"type": "text", "text": "word " * 300}])
        for i in range(30)
    ]
    entries = [
        msg("user", [{"type": "text", "text": "remember the number 42"}]),
        msg("assistant", [{"type": "text", "text": "noted"}]),
        *filler,
        {"kind": "pin", "target": {"kind": "range", "fromSeq": 1, "throughSeq": 2}},
    ]
    first, _ = assemble_entries(entries, window=4000)
    texts = [p.get("text", "") for m in first["messages"] for p in m["content"]]
    assert "remember the number 42" in texts
    assert any(i["visibility"] == "pinned" and i.get("fromSeq") == 1 for i in first["ledger"])
    assert any(
        i["visibility"] == "candidate" and i["kind"] == "transcript" for i in first["ledger"]
    )
