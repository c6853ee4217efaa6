"""A root's stat cache and per-directory memo (see :mod:`sidecar.checkpoints.capture`)."""

from __future__ import annotations

import contextlib
import marshal
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sidecar.checkpoints.ignore import Rules
from sidecar.checkpoints.trees import Entry

if TYPE_CHECKING:
    from pathlib import Path


__all__ = ["CacheKey", "Memo", "StatCache"]

CacheKey = tuple[int, int, int, int, int]
"""A file's ``(mtime_ns, ctime_ns, size, inode, mode)``."""


@dataclass(slots=True)
class StatCache:
    """One root's stat cache: per directory (relative, ``""`` or ``a/b/``), per name, the
    stat key and blob id of each file hashed; and, in memory only, what makes an unchanged
    directory cheap: its names' ignore verdicts (for as long as the rules above it are the
    same), the trees it gave (by their entries), its ``.gitignore``'s rules."""

    epoch: int = 0
    entries: dict[str, dict[str, tuple[CacheKey, str, str]]] = field(default_factory=dict)
    """``{directory: {name: (stat key, blob id, git mode)}}``."""
    changed: bool = False
    verdicts: dict[str, tuple[tuple[str, ...], dict[str, bool]]] = field(default_factory=dict)
    trees: dict[tuple[Entry, ...], tuple[str, bytes]] = field(default_factory=dict)
    ignore_files: dict[str, tuple[CacheKey, Rules | None]] = field(default_factory=dict)
    dirs: dict[str, Memo] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, epoch: int) -> StatCache:
        try:
            raw: Any = marshal.loads(path.read_bytes())
            if raw["epoch"] == epoch and raw.get("format") == 3:
                return cls(epoch, raw["entries"])
        except (OSError, ValueError, EOFError, TypeError, KeyError, AttributeError):
            pass
        return cls(epoch)

    def save(self, path: Path) -> None:
        """Rewrite the cache file (atomic, not fsynced: a cache lost is rebuilt)."""
        if not self.changed:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        data = {"format": 3, "epoch": self.epoch, "entries": self.entries}
        with contextlib.suppress(OSError):
            tmp.write_bytes(marshal.dumps(data))
            os.replace(tmp, path)
            self.changed = False


@dataclass(slots=True)
class Memo:
    """What a directory gave at the last capture (in memory only)."""

    key: tuple[int, int, int]
    """The directory's ``(mtime_ns, ctime_ns, inode)``."""
    signature: tuple[str, ...]
    """The tokens of the rules that applied to it."""
    files: tuple[str, ...]
    """Its names that are not directories and not ignored, in listing order."""
    subdirs: tuple[str, ...]
    """Its subdirectories that are not ignored."""
    listed: int
    keys: list[CacheKey | None]
    """The stat key of each of ``files``."""
    file_entries: list[Entry]
    subs: list[Entry]
    made: tuple[str, bytes] | None
    """The tree's id and body."""
    whole: bool
    """Each of ``subdirs`` had its memo when this one was made."""
