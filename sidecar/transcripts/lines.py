"""Reading a log's lines: JSON per line with the line number kept, so every error names the
file and the line; timestamps (ISO-8601 text or epoch numbers) to epoch seconds."""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sidecar.transcripts.model import TranscriptError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = ["Line", "at_line", "epoch", "glued_lines", "read_json", "read_jsonl", "read_text"]

#: One parsed line of a JSONL log: its 1-based number and its object.
Line = tuple[int, dict[str, Any]]

_DECODER = json.JSONDecoder()


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TranscriptError(str(path), 0, "no such file") from None
    except UnicodeDecodeError as exc:
        raise TranscriptError(str(path), 0, f"not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise TranscriptError(str(path), 0, exc.strerror or str(exc)) from None


def read_jsonl(path: Path, text: str | None = None) -> list[Line]:
    """Every non-blank line as an object.  A line that is not JSON is an error naming it; the
    last line cut off mid-object (a log read while the agent wrote it) is called truncated.
    A line of whole objects written one after the other without a newline between them (two
    appends that raced: real pi logs have them) is read as those objects, each a
    :data:`Line` of that line's number (:func:`glued_lines` names them)."""
    text = read_text(path) if text is None else text
    raw = text.split("\n")
    out: list[Line] = []
    for number, line in enumerate(raw, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            glued = _glued(line) if exc.msg == "Extra data" else None
            if glued is not None:
                out.extend((number, obj) for obj in glued)
                continue
            last = all(not rest.strip() for rest in raw[number:])
            if last and not text.endswith("\n"):
                raise TranscriptError(
                    str(path), number, "truncated: the last line is cut off mid-object"
                ) from None
            raise TranscriptError(str(path), number, f"bad JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise TranscriptError(str(path), number, "not a JSON object")
        out.append((number, value))
    if not out:
        raise TranscriptError(str(path), 0, "empty: no line to read")
    return out


def _glued(line: str) -> list[dict[str, Any]] | None:
    """The objects of a line of several whole JSON objects in a row, or None when the line is
    anything else (junk after an object, a part cut off, a value that is not an object)."""
    out: list[dict[str, Any]] = []
    pos = len(line) - len(line.lstrip())
    while pos < len(line):
        try:
            value, end = _DECODER.raw_decode(line, pos)
        except json.JSONDecodeError:
            return None
        if not isinstance(value, dict):
            return None
        out.append(value)
        pos = end + len(line[end:]) - len(line[end:].lstrip())
    return out if len(out) > 1 else None


def glued_lines(lines: list[Line]) -> list[str]:
    """A warning per line that held several objects (read as each), for a transcript's
    warnings."""
    numbers = [number for number, _ in lines]
    return [
        f"line {n}: {numbers.count(n)} entries written on one line (each read)"
        for n in sorted({n for i, n in enumerate(numbers) if i and numbers[i - 1] == n})
    ]


def read_json(path: Path, text: str | None = None) -> Any:
    """A whole-file JSON document (an OpenCode export); errors name the line."""
    text = read_text(path) if text is None else text
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            raise TranscriptError(
                str(path), exc.lineno, "truncated: the document ends early"
            ) from None
        raise TranscriptError(str(path), exc.lineno, f"bad JSON ({exc.msg})") from None


def epoch(value: object) -> float | None:
    """Epoch seconds from ISO-8601 text or an epoch number (milliseconds when that large)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) / 1000 if value > 1e11 else float(value)
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


@contextmanager
def at_line(path: str, number: int) -> Iterator[None]:
    """Reading line ``number``: a shape no parser expected (a field of the wrong type, a part
    the store's models refuse) is an error naming that line, never a traceback."""
    try:
        yield
    except TranscriptError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else ""
        raise TranscriptError(
            path, number, f"unexpected content ({type(exc).__name__}: {message})"
        ) from None
