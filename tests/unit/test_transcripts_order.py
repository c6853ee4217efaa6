"""Claude Code logs whose lines are not in the order of the conversation: newer versions write
a parallel call's result before the line of the call itself (a real session of
leolin84200704/posthog-impact-dashboard does).  The reader follows ``parentUuid``; a log
written in order reads as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from protocol.entries import ToolCallPart, ToolResultPart
from sidecar.transcripts.claude_code import parent_order
from sidecar.transcripts.read import TranscriptError, read_transcript
from tests.unit.test_transcripts_formats import cc, reply, write_jsonl


def result(uuid: str, parent: str, ts: str, call: str) -> dict[str, Any]:
    content = [{"type": "tool_result", "tool_use_id": call, "content": f"out of {call}"}]
    return cc("user", uuid, parent, ts, message={"role": "user", "content": content})


def use(call: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": call}}


def parallel_calls(late_result_first: bool) -> list[dict[str, Any]]:
    """One request making two calls over two lines; the second call's result written before
    the second call's line when ``late_result_first``."""
    head = [
        cc("user", "u1", None, "00:00.000", message={"role": "user", "content": "read both"}),
        reply("a1", "u1", "00:01.000", "r1", use("t1"), 20),
        result("u2", "a1", "00:01.010", "t1"),
    ]
    second_call = reply("a2", "u2", "00:01.020", "r1", use("t2"), 40)
    second_result = result("u3", "a2", "00:01.030", "t2")
    tail = [reply("a3", "u3", "00:02.000", "r2", {"type": "text", "text": "Both read."}, 5)]
    middle = [second_result, second_call] if late_result_first else [second_call, second_result]
    return head + middle + tail


def test_a_result_written_before_its_call_is_read_after_it(tmp_path: Path) -> None:
    ordered = read_transcript(write_jsonl(tmp_path / "ordered.jsonl", parallel_calls(False)))
    late = read_transcript(write_jsonl(tmp_path / "late.jsonl", parallel_calls(True)))
    assert late.messages == ordered.messages
    assert [(r.usage, r.context_end) for r in late.requests] == [
        (r.usage, r.context_end) for r in ordered.requests
    ]
    calls = [p.call_id for m in late.messages for p in m.content if isinstance(p, ToolCallPart)]
    results = [p.call_id for m in late.messages for p in m.content if isinstance(p, ToolResultPart)]
    assert calls == ["t1", "t2"] and results == ["t1", "t2"]


def test_a_result_whose_call_is_never_written_still_names_its_line(tmp_path: Path) -> None:
    rows = parallel_calls(True)
    del rows[4]  # the second call's line: its result (line 4) has no call anywhere
    try:
        read_transcript(write_jsonl(tmp_path / "orphan.jsonl", rows))
    except TranscriptError as error:
        assert error.line == 4 and "without its call" in error.message
    else:
        raise AssertionError("an orphan result was read")


def test_parent_order_moves_only_lines_written_before_their_parent() -> None:
    def line(n: int, uuid: str | None, parent: str | None) -> tuple[int, dict[str, Any]]:
        return (n, {"uuid": uuid, "parentUuid": parent} if uuid else {"type": "summary"})

    lines = [
        line(1, "a", None),
        line(2, "d", "c"),  # before its parent c
        line(3, "e", "d"),  # before d's parent too
        line(4, "f", "c"),  # c's second child: after the first and the first's own
        line(5, None, None),
        line(6, "b", "a"),
        line(7, "c", "b"),
        line(8, "x", "gone"),  # a parent never written: stays
        line(9, "y", "z"),  # a cycle of two: both stay, in file order
        line(10, "z", "y"),
    ]
    assert [n for n, _ in parent_order(lines)] == [1, 5, 6, 7, 2, 3, 4, 8, 9, 10]
