"""Reading a session log of any known agent into a :class:`Transcript`: the format named, or
sniffed from the content (a JSON document is an OpenCode export; a JSONL log is told by its
first lines).  Every failure is a :class:`TranscriptError` naming the file and the line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sidecar.transcripts import claude_code, codex, opencode, pi
from sidecar.transcripts.lines import glued_lines, read_jsonl, read_text
from sidecar.transcripts.model import FORMATS, Transcript, TranscriptError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["TranscriptError", "read_transcript", "sniff"]


def sniff(path: Path, text: str) -> str:
    """The format of a log, from its content."""
    stripped = text.lstrip()
    if stripped.startswith("{") and "\n" in stripped.rstrip() and stripped.rstrip().endswith("}"):
        head = stripped.split("\n", 1)[0].strip()
        if not (head.startswith("{") and head.endswith("}")):
            return "opencode"  # a pretty-printed document, not one object a line
    lines = read_jsonl(path, text)
    for _, obj in lines[:20]:
        if pi.looks_like(obj):
            return "pi"
        if obj.get("type") in ("session_meta", "response_item", "event_msg", "turn_context"):
            return "codex"
        if claude_code.looks_like(obj):
            return "claude-code"
        if "info" in obj and "messages" in obj:
            return "opencode"
    raise TranscriptError(
        str(path), lines[0][0], "not a log of a known agent (claude-code, codex, pi, opencode)"
    )


def read_transcript(path: Path, format: str | None = None) -> Transcript:
    """The transcript in ``path``; ``format`` one of ``claude-code``, ``codex``, ``pi``,
    ``opencode``, or None to tell it from the content."""
    if format is not None and format not in FORMATS:
        raise TranscriptError(
            str(path), 0, f"unknown format {format!r} (one of {', '.join(FORMATS)})"
        )
    text = read_text(path)
    fmt = format or sniff(path, text)
    transcript = _parse(path, text, fmt)
    if not transcript.messages and not transcript.requests:
        raise TranscriptError(str(path), 0, f"no {fmt} conversation in this file")
    return transcript


def _parse(path: Path, text: str, fmt: str) -> Transcript:
    try:
        if fmt == "opencode":
            return opencode.parse(path, text)
        lines = read_jsonl(path, text)
        parser = {"pi": pi.parse, "claude-code": claude_code.parse, "codex": codex.parse}[fmt]
        transcript = parser(path, lines)
        transcript.warnings[:0] = glued_lines(lines)
        return transcript
    except TranscriptError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # A shape no parser expected (a field of the wrong type): still an error that names
        # the file, never a traceback.
        raise TranscriptError(
            str(path), 0, f"unexpected {fmt} content ({type(exc).__name__}: {exc})"
        ) from None
