"""Where a built-in tool may look and write: the session's roots, checked on real paths.

A path the model gives is refused before anything is opened when it is not a string, holds a
NUL byte or is absurdly long; otherwise it is taken relative to the first root (absolute paths
as they are), every symlink and ``..`` resolved (:func:`os.path.realpath`), and kept only when
the *resolved* path is a root or below one — compared by path components, so a sibling
``/work/app-secrets`` is not inside ``/work/app``.  File-type checks (``lstat`` on the
resolved path, which never opens and so never blocks) refuse FIFOs, sockets and devices before
a read or a write could hang on them.

The check is on paths; what the tools then open is opened by descriptor from the root that
holds the path (:meth:`Workspace.root_of`, :mod:`sidecar.beneath`), so a directory swapped
for a symlink after the check is refused rather than followed.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from sidecar.paths import file_kind, is_within, real_path
from sidecar.tools.errors import ToolError

__all__ = ["MAX_PATH_CHARS", "Workspace"]

MAX_PATH_CHARS = 4096
"""Longer paths are refused (PATH_MAX on Linux; nothing legitimate is longer)."""


@dataclass(frozen=True, slots=True)
class Workspace:
    """The roots a session's tools are confined to (the first is the working directory)."""

    roots: tuple[Path, ...]

    @classmethod
    def of(cls, roots: list[str] | tuple[str, ...]) -> Workspace:
        if not roots:
            raise ValueError("a workspace needs at least one root")
        return cls(tuple(real_path(Path(root)) for root in roots))

    @property
    def cwd(self) -> Path:
        return self.roots[0]

    def resolve(self, raw: object, *, what: str = "path") -> Path:
        """The real path ``raw`` names, inside a root; :class:`ToolError` says why not."""
        if raw is None or raw == "":
            return self.cwd
        if not isinstance(raw, str):
            raise ToolError("tool.path_invalid", f"{what} must be a string")
        if "\x00" in raw:
            raise ToolError("tool.path_invalid", f"{what} contains a NUL byte")
        if len(raw) > MAX_PATH_CHARS:
            raise ToolError(
                "tool.path_invalid",
                f"{what} is {len(raw)} characters long (at most {MAX_PATH_CHARS})",
            )
        given = Path(os.path.expanduser(raw)) if raw.startswith("~") else Path(raw)
        try:
            resolved = real_path(given if given.is_absolute() else self.cwd / given)
        except (OSError, ValueError) as exc:
            raise ToolError(
                "tool.path_invalid", f"{what} {raw!r} cannot be resolved: {exc}"
            ) from exc
        if not any(is_within(resolved, root) for root in self.roots):
            roots = ", ".join(str(root) for root in self.roots)
            raise ToolError(
                "tool.path_outside_roots",
                f"{raw!r} resolves to {resolved}, outside the workspace ({roots})",
            )
        return resolved

    def root_of(self, path: Path) -> Path:
        """The (first) root holding resolved ``path``: where a descriptor walk to it starts."""
        for root in self.roots:
            if is_within(path, root):
                return root
        raise ToolError("tool.path_outside_roots", f"{path} is outside the workspace")

    def display(self, path: Path) -> str:
        """``path`` relative to the root holding it (``/``-separated), for the model."""
        for root in self.roots:
            if is_within(path, root):
                rel = path.relative_to(root).as_posix()
                return rel if root == self.cwd else f"{root}/{rel}" if rel != "." else str(root)
        return str(path)

    def regular_file(self, raw: object, *, must_exist: bool = True) -> Path:
        """A resolved path that is a regular file (or, with ``must_exist=False``, absent)."""
        path = self.resolve(raw)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            if must_exist:
                raise ToolError("tool.not_found", f"{self.display(path)} does not exist") from None
            return path
        except OSError as exc:
            raise ToolError("tool.failed", f"{self.display(path)}: {exc.strerror or exc}") from exc
        if not stat.S_ISREG(mode):
            raise ToolError(
                "tool.not_a_file", f"{self.display(path)} is {file_kind(mode)}, not a regular file"
            )
        return path

    def directory(self, raw: object) -> Path:
        """A resolved path that is a directory."""
        path = self.resolve(raw)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            raise ToolError("tool.not_found", f"{self.display(path)} does not exist") from None
        except OSError as exc:
            raise ToolError("tool.failed", f"{self.display(path)}: {exc.strerror or exc}") from exc
        if not stat.S_ISDIR(mode):
            raise ToolError(
                "tool.not_a_directory",
                f"{self.display(path)} is {file_kind(mode)}, not a directory",
            )
        return path
