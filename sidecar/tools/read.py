"""read_file: a text file, line-numbered (``cat -n`` form), a window of it at a time.

The defaults are Claude Code's (REFERENCES.md §H): 2,000 lines from ``offset`` (1-based),
lines longer than 2,000 characters cut, and the whole result within the token bound.  Binary
files (a NUL byte in the first 8 KiB, or not UTF-8) and files over ``max_file_bytes`` are
refused with a reason.  When the window ends before the file does, the last line says which
``offset`` continues.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sidecar.paths import UnreadableFileError, open_regular
from sidecar.tools.bounds import DEFAULT_BOUNDS, Bounds, cut_line, fit_lines
from sidecar.tools.errors import ToolError
from sidecar.tools.output import ToolOutput

if TYPE_CHECKING:
    from pathlib import Path

    from sidecar.tools.confine import Workspace

__all__ = ["number_lines", "read_file"]

_SNIFF = 8192


def read_file(
    ws: Workspace,
    path: object,
    *,
    offset: int | None = None,
    limit: int | None = None,
    bounds: Bounds = DEFAULT_BOUNDS,
) -> ToolOutput:
    """Lines ``offset .. offset+limit-1`` of ``path``, numbered, within ``bounds``."""
    target = ws.regular_file(path)
    shown = ws.display(target)
    data = _read_bytes(target, ws.root_of(target), shown, bounds)
    if b"\x00" in data[:_SNIFF]:
        raise ToolError("tool.binary", f"{shown} is a binary file ({len(data)} bytes); not read")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            "tool.binary", f"{shown} is not UTF-8 text (invalid byte at offset {exc.start})"
        ) from exc
    window = number_lines(text, shown, offset=offset, limit=limit, bounds=bounds)
    meta = {**window.meta, "bytes": len(data)}
    return ToolOutput(window.text, window.truncated, ((str(target), window.meta["from"]),), meta)


def number_lines(
    text: str,
    shown: str,
    *,
    offset: int | None = None,
    limit: int | None = None,
    bounds: Bounds = DEFAULT_BOUNDS,
) -> ToolOutput:
    """``text`` (the file ``shown``) as ``read_file`` returns it: a numbered, bounded window."""
    lines = text.removeprefix("\ufeff").splitlines()
    total = len(lines)
    start = max(1, offset or 1)
    count = max(1, limit) if limit else bounds.read_lines
    if total and start > total:
        raise ToolError("tool.failed", f"{shown} has {total} lines; offset {start} is past the end")
    width = len(str(min(total, start + count - 1))) if total else 1
    out: list[str] = []
    used = 0
    end = start - 1
    budget = bounds.max_chars
    for number in range(start, min(total, start + count - 1) + 1):
        line = f"{number:>{width}}\t{cut_line(lines[number - 1], bounds.line_chars)}"
        if used + len(line) + 1 > budget and out:
            break
        out.append(line)
        used += len(line) + 1
        end = number
    kept = fit_lines(out, bounds.max_tokens)
    if kept < len(out):
        del out[max(1, kept) :]
        end = start + len(out) - 1
    truncated = end < total
    if not total:
        out.append(f"({shown} is empty)")
    elif truncated:
        out.append(
            f"[lines {start}-{end} of {total} shown; read on with offset={end + 1}"
            f" (or grep for what you need)]"
        )
    return ToolOutput(
        text="\n".join(out),
        truncated=truncated,
        meta={"path": shown, "lines": total, "from": start, "to": end},
    )


def _read_bytes(target: Path, root: Path, shown: str, bounds: Bounds) -> bytes:
    try:
        with open_regular(target, root=root) as handle:  # by descriptor from the root down
            data = handle.read(bounds.max_file_bytes + 1)
    except UnreadableFileError as exc:
        raise ToolError("tool.not_a_file", f"{shown} {exc}") from exc
    except OSError as exc:
        raise ToolError("tool.failed", f"{shown} cannot be read: {exc.strerror or exc}") from exc
    if len(data) > bounds.max_file_bytes:
        raise ToolError(
            "tool.too_large",
            f"{shown} is over {bounds.max_file_bytes // (1024 * 1024)} MiB; not read"
            " (grep it for what you need)",
        )
    return data
