"""write_file and edit_file: change a file in the workspace, all or nothing.

``edit_file`` takes one or several exact-text replacements (Claude Code's Edit / MultiEdit):
each ``old_text`` must occur exactly once in the file as the previous edits left it, unless
``replace_all``; if any edit fails nothing is written, and the model is told which edit and
why.  Both read the file and write it by descriptor from its root down
(:mod:`sidecar.beneath`: a directory swapped for a symlink after the check is refused, never
followed), through a temporary file in the same directory renamed over the target (a crash
leaves the old file or the new one, never half of each; a hard link is replaced, not written
through), keeping the file's mode; the target must be a regular file or absent (a FIFO,
socket or device is refused before anything is opened, so nothing can block).

Decision: no Codex ``apply_patch`` format.  Exact-match edits work for every model family the
providers serve (GPT models included: OpenCode and Continue give them the same edit tool), are
checked before anything is written, and give the editor a clean before/after for its diff; a
second edit syntax would double the tool catalog's tokens for every model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar.beneath import write_atomic
from sidecar.paths import MissingFileError, UnreadableFileError, open_regular
from sidecar.tools.errors import ToolError
from sidecar.tools.output import ToolOutput

if TYPE_CHECKING:
    from sidecar.tools.confine import Workspace

__all__ = [
    "Change",
    "Edit",
    "apply_edits",
    "edit_file",
    "edited_text",
    "edits_of",
    "plan_write",
    "write_file",
]


@dataclass(frozen=True, slots=True)
class Edit:
    """One replacement: ``old_text`` (exact) becomes ``new_text``."""

    old_text: str
    new_text: str
    replace_all: bool = False


@dataclass(frozen=True, slots=True)
class Change:
    """A write worked out but not yet done: what an approval shows as a diff."""

    path: Path
    shown: str
    old_text: str | None
    """The file's text before, or None for a new file."""
    new_text: str
    root: Path
    """The root holding ``path``: where the write's descriptor walk starts."""


def plan_write(ws: Workspace, path: object, content: object) -> Change:
    """The change ``write_file`` would make (nothing written)."""
    if not isinstance(content, str):
        raise ToolError("tool.failed", "content must be a string")
    target = ws.regular_file(path, must_exist=False)
    root = ws.root_of(target)
    return Change(target, ws.display(target), _current(ws, root, target), content, root)


def apply_edits(ws: Workspace, path: object, edits: list[Edit]) -> Change:
    """The change ``edit_file`` would make (nothing written); refuses if any edit fails."""
    target = ws.regular_file(path)
    shown = ws.display(target)
    root = ws.root_of(target)
    old = _current(ws, root, target)
    if old is None:
        raise ToolError("tool.not_found", f"{shown} does not exist")
    return Change(target, shown, old, edited_text(old, shown, edits), root)


def edited_text(text: str, shown: str, edits: list[Edit]) -> str:
    """``text`` with ``edits`` applied in order; :class:`ToolError` (nothing applied) when
    one does not match exactly once (or, with ``replace_all``, at all)."""
    if not edits:
        raise ToolError("tool.failed", "no edits given")
    for n, edit in enumerate(edits, 1):
        which = f"edit {n} of {len(edits)}" if len(edits) > 1 else "the edit"
        if not edit.old_text:
            raise ToolError("tool.edit_no_match", f"{which}: old_text is empty")
        if edit.old_text == edit.new_text:
            raise ToolError("tool.failed", f"{which}: old_text and new_text are the same")
        count = text.count(edit.old_text)
        if count == 0:
            raise ToolError(
                "tool.edit_no_match",
                f"{which}: old_text was not found in {shown} (nothing written; read the file"
                " again and copy the text exactly, whitespace included)",
            )
        if count > 1 and not edit.replace_all:
            raise ToolError(
                "tool.edit_ambiguous",
                f"{which}: old_text occurs {count} times in {shown} (nothing written; add"
                " surrounding lines to make it unique, or set replace_all)",
            )
        text = text.replace(edit.old_text, edit.new_text)
    return text


def edits_of(arguments: dict[str, Any]) -> list[Edit]:
    """The edits an ``edit_file`` call asks for: its ``edits`` list, or its own
    ``old_text`` / ``new_text`` / ``replace_all``."""
    raw = arguments.get("edits")
    items = raw if isinstance(raw, list) and raw else [arguments]
    edits = []
    for n, item in enumerate(items, 1):
        old = item.get("old_text") if isinstance(item, dict) else None
        new = item.get("new_text") if isinstance(item, dict) else None
        if not isinstance(old, str) or not isinstance(new, str):
            where = f"edits[{n - 1}]" if items is raw else "the call"
            raise ToolError(
                "tool.failed",
                f"{where}: old_text and new_text must be strings (old_text non-empty)",
            )
        edits.append(Edit(old, new, isinstance(item, dict) and item.get("replace_all") is True))
    return edits


def write_file(ws: Workspace, path: object, content: object) -> ToolOutput:
    """Write ``content`` to ``path`` (created with its parents, or replaced)."""
    return commit(plan_write(ws, path, content))


def edit_file(ws: Workspace, path: object, edits: list[Edit]) -> ToolOutput:
    """Apply ``edits`` to ``path``, all or nothing."""
    return commit(apply_edits(ws, path, edits))


def commit(change: Change) -> ToolOutput:
    """Write a planned change to disk, atomically, by descriptor from its root down."""
    target = change.path
    try:
        write_atomic(change.root, target, change.new_text.encode("utf-8"))
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ToolError("tool.failed", f"{change.shown}: {reason}") from exc
    verb = "created" if change.old_text is None else "updated"
    lines = change.new_text.count("\n") + (
        not change.new_text.endswith("\n") and bool(change.new_text)
    )
    return ToolOutput(
        text=f"{verb} {change.shown} ({lines} lines)",
        locations=((str(target), None),),
        meta={"path": change.shown, "created": change.old_text is None},
    )


def _current(ws: Workspace, root: Path, target: Path) -> str | None:
    """The file's text now (``None``: there is none), read by descriptor from ``root``."""
    try:
        with open_regular(target, root=root) as handle:
            data = handle.read()
    except MissingFileError:
        return None
    except UnreadableFileError as exc:
        raise ToolError("tool.failed", f"{ws.display(target)} {exc}") from exc
    except OSError as exc:
        raise ToolError("tool.failed", f"{ws.display(target)}: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError("tool.binary", f"{ws.display(target)} is not UTF-8 text") from exc
