"""Files of the workspace a turn reads besides instructions and skills: the workspace's prompt
fragment overrides and the files pinned in the session.

Both are confined to the workspace (a path whose real location escapes is refused and
reported in ``diagnostics``, never read) and read once, at capture: what they held is frozen
with the turn (``sidecar.context.capture``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.inputs import ContextItem
from sidecar.context.fragments import FRAGMENT_IDS, WORKSPACE_DIR
from sidecar.paths import UnreadableFileError, is_within, read_capped_text, real_path

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

__all__ = ["PINNED_FILE_MAX_BYTES", "fragment_overrides", "pinned_files"]

#: Largest pinned file read into the prompt (bigger ones are cut and say so).
PINNED_FILE_MAX_BYTES = 256 * 1024


def fragment_overrides(root: Path | None, diagnostics: list[dict[str, Any]]) -> dict[str, str]:
    """The workspace's prompt fragment overrides (``<root>/.context-sidecar/fragments/<id>.md``),
    confined to the workspace."""
    if root is None:
        return {}
    out: dict[str, str] = {}
    real_root = real_path(root)
    for fragment_id in FRAGMENT_IDS:
        written = root / WORKSPACE_DIR / f"{fragment_id}.md"
        path = real_path(written)
        if not is_within(path, real_root):
            if os.path.lexists(written):
                diagnostics.append(
                    {
                        "severity": "error",
                        "code": ErrorCode.PATH_OUTSIDE_WORKSPACE,
                        "path": f"{WORKSPACE_DIR}/{fragment_id}.md",
                        "message": "fragment override resolves outside the workspace; "
                        "refused, not read",
                    }
                )
            continue
        if not path.is_file():
            continue
        try:
            out[fragment_id] = read_capped_text(path, 64 * 1024, root=real_root).text.strip()
        except (UnreadableFileError, OSError):
            continue
    return out


def pinned_files(
    pinned: dict[str, dict[str, Any]],
    root: Path | None,
    put: Callable[[bytes], str],
    diagnostics: list[dict[str, Any]],
) -> list[ContextItem]:
    """The files pinned in the session, read once (confined to the workspace, capped), each
    stored with ``put``."""
    out: list[ContextItem] = []
    if root is None:
        return out
    real_root = real_path(root)
    for target in (t for _, t in sorted(pinned.items()) if t["kind"] == "file"):
        rel = target["locator"]
        path = real_path(root / rel)
        if rel.startswith("/") or not is_within(path, real_root):
            diagnostics.append(
                {
                    "severity": "error",
                    "code": "context.path_outside_workspace",
                    "path": rel,
                    "message": "pinned file is outside the workspace",
                }
            )
            continue
        try:
            capped = read_capped_text(path, PINNED_FILE_MAX_BYTES, root=real_root)
        except (UnreadableFileError, OSError) as exc:
            diagnostics.append(
                {
                    "severity": "warning",
                    "code": "context.pinned_unreadable",
                    "path": rel,
                    "message": str(exc),
                }
            )
            continue
        note = "\n[cut at 256 KiB]" if capped.truncated else ""
        text = capped.text + note
        out.append(
            ContextItem(
                kind="file",
                path=rel,
                preview=text[:500] or None,
                blob=put(text.encode()),
            )
        )
    return out
