"""What the editor tools share: a refusal, a confined target, the result and update contents,
and the disk as the fallback for a client without ``fs``.

A :class:`Refused` call is an error result the model reads (never a protocol error); a result
is a ``ToolExecuteResult`` in wire JSON; a write shows a ``diff`` and points at its first
changed line.  A target is its *resolved* path, the one the check passed: it is what the
editor is sent (a lexical path can climb out through a symlink the check resolved).  The disk
fallback reads and writes as the serve face's tools do, by descriptor from the root down, a
write through the same atomic writer (:func:`sidecar.beneath.write_atomic`: a hard link is
replaced, never written through).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TextContentBlock,
    ToolCallLocation,
)

from sidecar.beneath import write_atomic
from sidecar.paths import UnreadableFileError, read_capped_text
from sidecar.tools.bounds import DEFAULT_BOUNDS
from sidecar.tools.presentation import first_changed_line

__all__ = [
    "Refused",
    "Target",
    "changed_at",
    "diff",
    "read_disk",
    "result",
    "text_content",
    "write_disk",
]

#: Files read from disk (no editor fs) larger than this are refused, as sidecar.tools does.
MAX_FILE = DEFAULT_BOUNDS.max_file_bytes


class Refused(Exception):
    """A call that cannot run as asked; ``str()`` is what the model reads."""


@dataclass(frozen=True, slots=True)
class Target:
    shown: str
    """What the editor is sent and the model reads: the real path, as a string."""
    real: Path
    """The real path (every symlink and ``..`` resolved, confined to the roots)."""
    root: Path
    """The root holding it: where a descriptor walk to it starts."""


def text_content(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))


def result(text: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def changed_at(target: Target, old_text: str | None, new_text: str) -> list[ToolCallLocation]:
    """A write's location: the file, at its first changed line."""
    return [ToolCallLocation(path=target.shown, line=first_changed_line(old_text, new_text))]


def diff(target: Target, old_text: str | None, new_text: str) -> FileEditToolCallContent:
    return FileEditToolCallContent(
        type="diff", path=target.shown, old_text=old_text, new_text=new_text
    )


async def read_disk(target: Target) -> str:
    try:
        read = await anyio.to_thread.run_sync(
            lambda: read_capped_text(target.real, MAX_FILE, root=target.root)
        )
    except UnreadableFileError as exc:
        raise Refused(f"{target.shown} {exc}") from None
    if read.truncated:  # never edit or show a cut copy as if it were the file
        raise Refused(f"{target.shown} is over {MAX_FILE // (1 << 20)} MiB; not read")
    return read.text


def write_disk(target: Target, content: str) -> None:
    """``content`` written to the target atomically, by descriptor from its root down."""
    try:
        write_atomic(target.root, target.real, content.encode("utf-8"))
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise Refused(f"{target.shown}: {reason}") from None
