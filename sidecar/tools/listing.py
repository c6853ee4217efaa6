"""list_dir and glob: what is in the workspace, ignoring what git ignores, bounded.

``list_dir`` shows a tree to a depth (2 by default), directories with a trailing ``/``;
``glob`` matches a pattern (``**`` crosses directories; a pattern without ``/`` matches a name
at any depth, as ripgrep's and git's globs do) and lists paths newest first, as Claude Code's
Glob does, so what was just edited comes first.  Both stop at ``bounds.entries`` and say so.
Both walk within a :class:`~sidecar.tools.deadline.Deadline` (the tool's own limit by default):
past it they raise ``tool.timeout`` saying how far the walk got and how to narrow it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pathspec

from sidecar.tools.bounds import DEFAULT_BOUNDS, Bounds, fit_lines
from sidecar.tools.deadline import LOOK_LIMIT_S, Deadline, DeadlinePassed
from sidecar.tools.errors import ToolError
from sidecar.tools.output import ToolOutput
from sidecar.tools.walk import walk

if TYPE_CHECKING:
    from pathlib import Path

    from sidecar.tools.confine import Workspace

__all__ = ["compile_glob", "glob_files", "list_dir", "place"]


def place(ws: Workspace, path: Path) -> str:
    """``path`` as a sentence names it (``.`` reads as a typo at the end of one)."""
    shown = ws.display(path)
    return "the workspace root" if shown == "." else shown


def list_dir(
    ws: Workspace,
    path: object = None,
    *,
    depth: int | None = None,
    limit: int | None = None,
    bounds: Bounds = DEFAULT_BOUNDS,
    deadline: Deadline | None = None,
) -> ToolOutput:
    """The entries under ``path`` to ``depth`` levels, as an indented tree."""
    root = ws.directory(path)
    levels = max(1, min(depth or 2, 16))
    cap = max(1, min(limit or bounds.entries, bounds.entries))
    lines: list[str] = []
    used = 0
    more = 0
    try:
        for entry in walk(root, max_depth=levels, deadline=deadline or Deadline(LOOK_LIMIT_S)):
            line = "  " * (entry.depth - 1) + os.path.basename(entry.rel)
            line += "/" if entry.is_dir else ""
            if len(lines) >= cap or used + len(line) > bounds.max_chars:
                more += 1
                continue
            lines.append(line)
            used += len(line) + 1
    except DeadlinePassed as passed:
        done = f"{len(lines) + more} entries seen under {place(ws, root)}, {levels} levels deep"
        hint = "List a subdirectory, a lower depth=, or find files with glob"
        raise passed.error("list_dir", done, hint) from None
    shown = ws.display(root)
    head = f"{shown}/" if shown != "." else "./"
    if not lines:
        lines.append("(empty, or everything here is ignored by .gitignore)")
    kept = fit_lines(lines, bounds.max_tokens)
    more += len(lines) - kept
    del lines[kept:]
    if more:
        lines.append(f"[{more} more entries not shown; list a subdirectory, lower depth, or glob]")
    return ToolOutput(
        text="\n".join([head, *lines]),
        truncated=bool(more),
        locations=((str(root), None),),
        meta={"path": shown, "entries": len(lines) + more if more else len(lines)},
    )


def compile_glob(pattern: str) -> pathspec.GitIgnoreSpec:
    """A gitignore-style matcher for ``pattern`` (how ripgrep's ``--glob`` reads one)."""
    try:
        return pathspec.GitIgnoreSpec.from_lines([pattern])
    except (ValueError, TypeError) as exc:
        raise ToolError("tool.bad_pattern", f"bad glob {pattern!r}: {exc}") from exc


def glob_files(
    ws: Workspace,
    pattern: object,
    path: object = None,
    *,
    limit: int | None = None,
    bounds: Bounds = DEFAULT_BOUNDS,
    deadline: Deadline | None = None,
) -> ToolOutput:
    """Files under ``path`` matching ``pattern``, newest first."""
    if not isinstance(pattern, str) or not pattern.strip() or "\x00" in pattern:
        raise ToolError("tool.bad_pattern", "pattern must be a non-empty glob such as '**/*.py'")
    root = ws.directory(path)
    spec = compile_glob(pattern.removeprefix("./"))
    found: list[tuple[float, str]] = []
    walked = 0
    try:
        for entry in walk(root, deadline=deadline or Deadline(LOOK_LIMIT_S)):
            walked += 1
            if entry.is_dir or not spec.match_file(entry.rel):
                continue
            try:
                mtime = os.lstat(entry.path).st_mtime
            except OSError:
                continue
            found.append((-mtime, entry.rel))
    except DeadlinePassed as passed:
        done = f"{walked} entries walked under {place(ws, root)}, {len(found)} of them matching"
        hint = "Glob from a subdirectory (path=) or with a narrower pattern"
        raise passed.error("glob", done, hint) from None
    found.sort()
    cap = max(1, min(limit or bounds.entries, bounds.entries))
    shown_root = ws.display(root)
    prefix = "" if shown_root == "." else f"{shown_root}/"
    lines: list[str] = []
    used = 0
    for _, rel in found[:cap]:
        line = prefix + rel
        if used + len(line) > bounds.max_chars:
            break
        lines.append(line)
        used += len(line) + 1
    del lines[fit_lines(lines, bounds.max_tokens) :]
    more = len(found) - len(lines)
    if not found:
        lines.append(f"no files match {pattern!r} (files ignored by .gitignore are not searched)")
    elif more:
        lines.append(f"[{len(found)} files match, {more} not shown; narrow the pattern or path]")
    return ToolOutput(
        text="\n".join(lines),
        truncated=more > 0,
        meta={"pattern": pattern, "matches": len(found)},
    )
