"""What changed between a checkpoint and the workspace now, per file.

The two trees are compared top down, and a subtree with the same id on both sides is skipped
whole, so comparing a 50,000-file checkpoint with an unchanged workspace reads two root trees.
A change goes from the checkpoint to now: ``added`` exists now and not in the checkpoint.
Unified diffs (``difflib``) are made for files that are text on both sides (UTF-8, no NUL),
bounded: past ``max_bytes`` of diffs together, or for a file over :data:`MAX_DIFF_INPUT`,
``diff`` is ``null`` and the answer says ``truncated``.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sidecar.checkpoints.trees import DIR, LINK

if TYPE_CHECKING:
    from sidecar.checkpoints.capture import RootCapture
    from sidecar.store.blobs import BlobStore

__all__ = ["MAX_DIFF_INPUT", "Change", "changes", "compare", "file_changes"]

MAX_DIFF_INPUT = 1024 * 1024
"""Files larger than this (on either side) get no unified diff."""

State = tuple[str, str]
"""``(git mode, blob id)`` of a file."""
Read = Callable[[str], list[tuple[str, str, str]]]


@dataclass(frozen=True, slots=True)
class Change:
    root: str
    path: str
    before: State | None
    """In the checkpoint (``None``: absent, or not captured)."""
    after: State | None
    """Now (``None``: absent)."""
    not_captured: bool = False

    @property
    def kind(self) -> str:
        if self.before is None and not self.not_captured:
            return "added"
        return "deleted" if self.after is None else "modified"


def compare(
    read_a: Read, tree_a: str | None, read_b: Read, tree_b: str | None, prefix: str = ""
) -> Iterator[tuple[str, State | None, State | None]]:
    """Files that differ between two trees: ``(path, state in a, state in b)``."""
    if tree_a == tree_b:
        return
    a = {name: (mode, oid) for name, mode, oid in read_a(tree_a)} if tree_a else {}
    b = {name: (mode, oid) for name, mode, oid in read_b(tree_b)} if tree_b else {}
    for name in sorted(a.keys() | b.keys()):
        left, right = a.get(name), b.get(name)
        if left == right:
            continue
        path = prefix + name
        left_dir = left is not None and left[0] == DIR
        right_dir = right is not None and right[0] == DIR
        if left_dir or right_dir:
            yield from compare(
                read_a,
                left[1] if left_dir and left else None,
                read_b,
                right[1] if right_dir and right else None,
                path + "/",
            )
        if not left_dir or not right_dir:
            file_left = None if left_dir else left
            file_right = None if right_dir else right
            if file_left != file_right:
                yield path, file_left, file_right


def changes(
    record: dict[str, Any], now: list[RootCapture], read_stored: Read, read_now: Read
) -> list[Change]:
    """Every file that differs between the checkpoint ``record`` and the capture ``now``."""
    out: list[Change] = []
    current = {c.root: c for c in now}
    for root in record.get("roots", []):
        captured = current.get(root["root"])
        if captured is None:
            continue
        skipped = {n["path"] for n in root.get("notCaptured", [])}
        big_now = {n["path"]: n for n in captured.not_captured}
        for path, before, after in compare(read_stored, root["tree"], read_now, captured.tree):
            if path in skipped and before is None:
                if after is not None:
                    out.append(Change(root["root"], path, None, after, not_captured=True))
                continue
            if after is None and path in big_now:
                after = (big_now[path]["mode"], "")  # there, too large to hash: unknown
            out.append(Change(root["root"], path, before, after))
        for path, big in big_now.items():  # too large now, and unknown to the checkpoint
            if path in skipped:
                out.append(Change(root["root"], path, None, (big["mode"], ""), not_captured=True))
    return out


def file_changes(
    found: list[Change], blobs: BlobStore, max_bytes: int
) -> tuple[list[dict[str, Any]], bool]:
    """The wire ``FileChange`` of each change, with bounded unified diffs; and whether some
    diff was left out."""
    budget = max_bytes
    truncated = False
    out: list[dict[str, Any]] = []
    for change in found:
        before_data = _stored(blobs, change.before)
        after_data = _current(change)
        text = _texts(before_data, after_data)
        diff: str | None = None
        if text is not None:
            before_text, after_text = text
            diff = "".join(
                difflib.unified_diff(
                    before_text.splitlines(keepends=True),
                    after_text.splitlines(keepends=True),
                    f"a/{change.path}",
                    f"b/{change.path}",
                )
            )
            if len(diff.encode()) > budget:
                diff, truncated = None, True
            else:
                budget -= len(diff.encode())
        elif _too_large(before_data, after_data, change):
            truncated = True
        out.append(
            {
                "path": change.path,
                "root": change.root,
                "change": change.kind,
                "before": change.before[1] if change.before else None,
                "after": change.after[1] if change.after and change.after[1] else None,
                "beforeMode": change.before[0] if change.before else None,
                "afterMode": change.after[0] if change.after else None,
                "binary": text is None and not _too_large(before_data, after_data, change),
                "diff": diff,
                "notCaptured": change.not_captured,
            }
        )
    return out, truncated


def _too_large(before: bytes | None, after: bytes | None, change: Change) -> bool:
    return (before is None and change.before is not None) or (
        after is None and change.after is not None
    )


def _stored(blobs: BlobStore, state: State | None) -> bytes | None:
    if state is None or not state[1]:
        return b"" if state is None else None
    data = blobs.get(state[1])
    return data if len(data) <= MAX_DIFF_INPUT else None


def _current(change: Change) -> bytes | None:
    if change.after is None:
        return b""
    path = os.path.join(change.root, *change.path.split("/"))
    try:
        if change.after[0] == LINK:
            return os.fsencode(os.readlink(path))
        if os.lstat(path).st_size > MAX_DIFF_INPUT:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            return fh.read(MAX_DIFF_INPUT + 1)
    except OSError:
        return None


def _texts(before: bytes | None, after: bytes | None) -> tuple[str, str] | None:
    if before is None or after is None or b"\0" in before or b"\0" in after:
        return None
    try:
        return before.decode(), after.decode()
    except UnicodeDecodeError:
        return None
