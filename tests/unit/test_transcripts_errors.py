"""A log that cannot be read is a :class:`TranscriptError` naming the file and the line —
never another exception; odd but readable logs are read, with what was skipped said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protocol.entries import TextPart
from sidecar.transcripts.read import TranscriptError, read_transcript
from sidecar.transcripts.thread import CONTINUED_RESULT_NOTE

REAL = Path(__file__).resolve().parents[1] / "data" / "transcripts" / "real"
PI = REAL / "pi-mono" / "large-session.jsonl"
CLAUDE = REAL / "claude-code-viewer" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"


def first_lines(path: Path, n: int) -> list[str]:
    return path.read_text().splitlines()[:n]


def error_of(path: Path, fmt: str | None = None) -> TranscriptError:
    with pytest.raises(TranscriptError) as caught:
        read_transcript(path, fmt)
    return caught.value


@pytest.mark.parametrize("source", [PI, CLAUDE], ids=["pi", "claude-code"])
@pytest.mark.parametrize("bad_at", [2, 5, 9])
def test_bad_json_names_its_line(tmp_path: Path, source: Path, bad_at: int) -> None:
    rows = first_lines(source, 12)
    rows[bad_at - 1] = rows[bad_at - 1][:-7] + "#oops}"
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(rows) + "\n")
    error = error_of(path)
    assert error.line == bad_at
    assert str(error).startswith(f"{path}:{bad_at}: bad JSON")


@pytest.mark.parametrize("source", [PI, CLAUDE], ids=["pi", "claude-code"])
def test_a_truncated_last_line_is_called_truncated(tmp_path: Path, source: Path) -> None:
    rows = first_lines(source, 10)
    path = tmp_path / "cut.jsonl"
    path.write_text("\n".join(rows[:9]) + "\n" + rows[9][: len(rows[9]) // 2])
    error = error_of(path)
    assert error.line == 10 and "truncated" in error.message


def test_a_bad_line_in_the_middle_is_not_called_truncated(tmp_path: Path) -> None:
    rows = first_lines(PI, 6)
    rows[5] = rows[5][:40]
    path = tmp_path / "mid.jsonl"
    path.write_text("\n".join(rows) + "\n")  # the cut line ends with a newline: not a cut-off write
    assert "bad JSON" in error_of(path).message


def test_a_tool_result_without_its_call_names_its_line(tmp_path: Path) -> None:
    rows = first_lines(PI, 12)
    orphan = {
        "type": "message",
        "timestamp": "2025-11-20T23:40:00.000Z",
        "message": {
            "role": "toolResult",
            "toolCallId": "toolu_nobody",
            "toolName": "read",
            "content": [],
            "isError": False,
        },
    }
    rows.insert(7, json.dumps(orphan))
    path = tmp_path / "orphan.jsonl"
    path.write_text("\n".join(rows) + "\n")
    error = error_of(path)
    assert (
        error.line == 8 and "toolu_nobody" in error.message and "without its call" in error.message
    )


def _orphan_result(row: str) -> str:
    line = json.loads(row)
    line["type"] = "user"
    line["message"] = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "?"}],
    }
    return json.dumps(line)


def test_a_claude_code_result_without_its_call_names_its_line(tmp_path: Path) -> None:
    rows = first_lines(CLAUDE, 6)  # line 4 is the log's first tool call, 5 its result
    rows[5] = _orphan_result(rows[5])
    path = tmp_path / "cc.jsonl"
    path.write_text("\n".join(rows) + "\n")
    assert error_of(path).line == 6


def test_a_continued_claude_code_log_reads_its_first_results_as_notes(tmp_path: Path) -> None:
    """A log that continues an earlier session opens with the results of calls made in the
    previous file (a real Claude Code log does): before any call of its own, such a result is
    read as a note with its content, and a warning names the line; after a call, the same
    line is an error (above).  Mutation tried: the continued case removed — red."""
    rows = first_lines(CLAUDE, 12)
    rows[2] = _orphan_result(rows[2])  # before the log's first tool call (line 4)
    path = tmp_path / "continued.jsonl"
    path.write_text("\n".join(rows) + "\n")
    transcript = read_transcript(path)
    assert any("line 3" in w and "continued session" in w for w in transcript.warnings)
    texts = [p.text for m in transcript.messages for p in m.content if isinstance(p, TextPart)]
    assert CONTINUED_RESULT_NOTE in texts and "?" in texts


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('{"hello": 1}\n', "not a log of a known agent"),
        ("", "empty"),
        ("[1, 2]\n", "not a JSON object"),
        ("\n\n", "empty"),
    ],
)
def test_unknown_or_empty_content(tmp_path: Path, content: str, words: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(content)
    assert words in error_of(path).message


def test_a_format_named_wrongly_is_an_error_not_an_empty_session(tmp_path: Path) -> None:
    assert "no claude-code conversation" in error_of(PI, "claude-code").message
    assert error_of(PI, "codex").line == 1
    assert error_of(PI, "opencode").line == 2  # the second object of a JSONL file
    assert "unknown format" in error_of(PI, "cursor").message


def test_a_truncated_opencode_export_names_the_line(tmp_path: Path) -> None:
    text = (
        Path(__file__).resolve().parents[1] / "data" / "transcripts" / "opencode-export.json"
    ).read_text()
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    error = error_of(path, "opencode")
    assert "truncated" in error.message and error.line == text[: len(text) // 2].count("\n") + 1


def test_unreadable_files(tmp_path: Path) -> None:
    assert error_of(tmp_path / "missing.jsonl").message == "no such file"
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    assert "not UTF-8" in error_of(binary).message


def test_wrong_shapes_are_errors_not_tracebacks(tmp_path: Path) -> None:
    header = first_lines(PI, 1)[0]
    path = tmp_path / "shape.jsonl"
    path.write_text(
        header + "\n" + json.dumps({"type": "message", "message": "not an object"}) + "\n"
    )
    assert error_of(path).line == 2
    path.write_text(
        header
        + "\n"
        + json.dumps(
            {"type": "message", "message": {"role": "assistant", "content": 5, "usage": []}}
        )
        + "\n"
    )
    read_transcript(path)  # odd but readable: an assistant message of nothing, its request kept


def test_a_field_of_the_wrong_type_names_its_line(tmp_path: Path) -> None:
    rows = first_lines(CLAUDE, 4)
    line = json.loads(rows[2])
    line["message"]["content"] = [{"type": "redacted_thinking", "data": 5}]
    rows[2] = json.dumps(line)
    path = tmp_path / "typed.jsonl"
    path.write_text("\n".join(rows) + "\n")
    error = error_of(path)
    assert error.line == 3 and "unexpected content" in error.message


@pytest.mark.parametrize("source", [PI, CLAUDE], ids=["pi", "claude-code"])
def test_two_entries_written_on_one_line_are_both_read(tmp_path: Path, source: Path) -> None:
    # Two appends that raced leave two whole objects on one line (real pi logs of
    # badlogic/pi-mono have such a line): both are read, the line is named in a warning.
    rows = first_lines(source, 12)
    whole = tmp_path / "whole.jsonl"
    whole.write_text("\n".join(rows) + "\n")
    glued = tmp_path / "glued.jsonl"
    glued.write_text("\n".join([*rows[:5], rows[5] + rows[6], *rows[7:]]) + "\n")
    expected, got = read_transcript(whole), read_transcript(glued)
    assert got.messages == expected.messages
    assert [r.usage for r in got.requests] == [r.usage for r in expected.requests]
    assert got.warnings[0] == "line 6: 2 entries written on one line (each read)"
    assert not any("one line" in w for w in expected.warnings)


@pytest.mark.parametrize("tail", ["#oops", "[1]", '{"type": "mess'])
def test_an_object_then_anything_but_whole_objects_is_still_bad_json(
    tmp_path: Path, tail: str
) -> None:
    rows = first_lines(PI, 6)
    rows[3] = rows[3] + tail
    path = tmp_path / "junk.jsonl"
    path.write_text("\n".join(rows) + "\n")
    error = error_of(path)
    assert error.line == 4 and "bad JSON" in error.message
