"""Project instructions: which ``AGENTS.md``-style files a turn sees, and their text.

This module owns discovery of instruction files inside one workspace root and the per-turn
diff of that set.  It reads files, never writes or runs them.  The rules (Codex CLI's
``agents_md.rs`` for the chain, thndrs for nested scopes, caps and the diff):

Project root
    The nearest directory from ``cwd`` upward, never above the workspace root, that contains
    one of ``root_markers`` (default ``.git``; a file counts too, as in git worktrees and
    submodules); else the workspace root.  Directories between the workspace root and the
    project root contribute nothing.

One file per directory
    The first name of :attr:`InstructionNames.candidates` that exists as a non-directory
    entry: ``AGENTS.override.md``, ``AGENTS.md``, then the fallbacks (default ``CLAUDE.md``).
    A directory with a candidate's name is passed over.  When the chosen file is refused or
    unreadable the directory contributes nothing: there is no silent fall-through to a
    lower-priority name, because the user meant the file that is there.  An empty file is
    listed (``bytes`` 0); whether to render it is the assembler's choice.

Which files apply
    Every directory from the project root down to ``cwd`` applies, whatever its name or
    depth (the project root's file with the reason "project root", the others "on the path
    from the project root to the working directory").  Other directories below the project
    root are searched down to ``max_depth`` levels (the project root is level 0), skipping
    dot-directories and ``node_modules``, ``target``, ``dist``, ``build``, ``out``.  Such a
    nested file applies when a mentioned or pinned path (workspace-relative; absolute paths
    inside the workspace are accepted, paths outside it are ignored) is its scope directory
    or below it; otherwise it is listed with ``applies=False`` and a reason.  Mentioned paths
    are matched before pinned ones and the first match is named in the reason.

Order
    Files are sorted by depth below the project root, then by path components: the root
    first, deeper later, so that a deeper file, coming later in the prompt, takes precedence
    (Codex's "joined root first").  Diagnostics are sorted by path, then code.

Caps and hashes
    ``max_bytes`` applies to each file on its own (thndrs), not to the set (Codex shares
    one budget; the selection stage owns the set's budget).  ``bytes`` and ``hash`` (xxh3-128)
    are over the full file, read in a stream; the text is cut at ``max_bytes`` on a UTF-8
    character boundary (``truncated``, warning ``instructions.oversized``).  A leading
    byte-order mark is dropped from the text (not from the hash).

Refusals (errors; the file is skipped, never fatal)
    ``instructions.outside_workspace``: an instruction file that is a symlink resolving
    outside the workspace root, or a symlinked directory met while searching that does (its
    target is at most stat-ed, never listed or read), or a ``cwd`` outside the workspace
    (the workspace root is used instead).  Symlinked directories that stay inside the
    workspace are not followed either: their target is searched at its real location, and
    not following them rules out cycles.
    ``instructions.unreadable``: permission denied, not a regular file (FIFO, socket,
    device, directory behind a symlink) or not valid UTF-8 -- nothing is decoded with
    replacement characters.  ``instructions.unreadable_directory`` (warning): a directory
    that could not be listed.  ``instructions.bad_cwd``: ``cwd`` is not a directory.
    ``instructions.workspace_missing``: the workspace root is not a directory (empty scan).

Diff
    :func:`diff_instructions` compares ``path -> hash`` from the previous assembly with a
    scan: added, removed and changed by path and hash; ``unreadable`` and ``oversized`` are
    the paths of the scan's ``instructions.unreadable`` and ``instructions.oversized``
    diagnostics (a refused symlink stays in the scan's diagnostics only).

Not handled here: the global ``~/.codex/AGENTS.md`` and Claude Code's ``@path`` imports.
"""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from protocol.context import Diagnostic, InstructionFile, InstructionsDiff
from sidecar.paths import (
    CappedText,
    UnreadableFileError,
    is_within,
    read_capped_text,
    real_path,
    relative_posix,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_NAMES",
    "SKIPPED_DIRS",
    "InstructionNames",
    "InstructionScan",
    "InstructionText",
    "diff_instructions",
    "discover_instructions",
]

#: Per-file cap on the text sent to the model (Codex's ``project_doc_max_bytes``).
DEFAULT_MAX_BYTES = 32768
#: Directory names never searched for nested files (build output, dependencies).
SKIPPED_DIRS = frozenset({"node_modules", "target", "dist", "build", "out"})

_ROOT_REASON = "project root: always applies"
_PATH_REASON = "on the path from the project root to the working directory"


@dataclass(frozen=True, slots=True)
class InstructionNames:
    """The file names looked for in each directory, in priority order."""

    override: str = "AGENTS.override.md"
    primary: str = "AGENTS.md"
    fallbacks: tuple[str, ...] = ("CLAUDE.md",)

    def __post_init__(self) -> None:
        for name in self.candidates:
            if not name or name in (".", "..") or "/" in name or os.sep in name:
                raise ValueError(f"instruction file name {name!r} must be a plain file name")

    @property
    def candidates(self) -> tuple[str, ...]:
        """``override``, ``primary``, then ``fallbacks``, without repeats."""
        return tuple(dict.fromkeys((self.override, self.primary, *self.fallbacks)))


DEFAULT_NAMES = InstructionNames()


@dataclass(frozen=True, slots=True)
class InstructionText:
    """One instruction file, with the text that goes into the prompt."""

    info: InstructionFile
    text: str
    """Cut at ``max_bytes`` on a UTF-8 boundary when ``info.truncated``."""
    depth: int
    """0 for the project root's directory, +1 per level below it."""


@dataclass(frozen=True, slots=True)
class InstructionScan:
    project_root: Path
    files: list[InstructionText]
    """Root first, deeper later (a later file takes precedence)."""
    diagnostics: list[Diagnostic]


@dataclass(frozen=True, slots=True)
class _Scan:
    """What every step of one discovery needs."""

    root: Path
    """The workspace root, resolved."""
    project_root: Path
    names: InstructionNames
    max_bytes: int
    targets: tuple[tuple[str, str], ...]
    """(``mentioned`` | ``pinned``, normalized workspace-relative path)."""
    diagnostics: list[Diagnostic]

    def report(
        self, severity: Literal["warning", "error"], code: str, path: str, message: str
    ) -> None:
        self.diagnostics.append(
            Diagnostic(severity=severity, code=code, path=path, message=message)
        )


def discover_instructions(
    workspace_root: Path,
    cwd: Path | None = None,
    *,
    mentioned: Sequence[str] = (),
    pinned: Sequence[str] = (),
    names: InstructionNames = DEFAULT_NAMES,
    max_bytes: int = DEFAULT_MAX_BYTES,
    root_markers: Sequence[str] = (".git",),
    max_depth: int = 8,
) -> InstructionScan:
    """The instruction files of ``workspace_root`` for a turn run in ``cwd`` (see module doc).

    ``cwd`` may be absolute or relative to the workspace root; ``mentioned`` and ``pinned``
    are workspace-relative paths.  Never raises for anything found on disk."""
    if max_bytes < 0 or max_depth < 0:
        raise ValueError("max_bytes and max_depth must not be negative")
    diagnostics: list[Diagnostic] = []
    root = real_path(workspace_root)
    if not root.is_dir():
        message = f"workspace root {workspace_root} is not a directory"
        diagnostics.append(
            Diagnostic(
                severity="error", code="instructions.workspace_missing", path=".", message=message
            )
        )
        return InstructionScan(project_root=workspace_root, files=[], diagnostics=diagnostics)
    here = _working_directory(workspace_root, root, cwd, diagnostics)
    project_root = _project_root(root, here, root_markers)
    scan = _Scan(
        root=root,
        project_root=project_root,
        names=names,
        max_bytes=max_bytes,
        targets=_targets(workspace_root, root, mentioned, pinned),
        diagnostics=diagnostics,
    )
    on_path = _path_directories(project_root, here)
    directories = set(on_path) | set(_search(scan, max_depth))
    files: list[InstructionText] = []
    for directory in sorted(directories, key=lambda d: _depth_key(project_root, d)):
        found = _instruction_in(scan, directory, on_path=directory in on_path)
        if found is not None:
            files.append(found)
    diagnostics.sort(key=lambda d: (d.path, d.code, d.message))
    return InstructionScan(project_root=project_root, files=files, diagnostics=diagnostics)


def diff_instructions(previous: Mapping[str, str], current: InstructionScan) -> InstructionsDiff:
    """How ``current`` differs from ``previous`` (path -> hash of the last assembly)."""
    now = {f.info.path: f.info.hash for f in current.files}
    return InstructionsDiff(
        added=sorted(now.keys() - previous.keys()),
        removed=sorted(previous.keys() - now.keys()),
        changed=sorted(p for p in now.keys() & previous.keys() if now[p] != previous[p]),
        unreadable=_diagnostic_paths(current, "instructions.unreadable"),
        oversized=_diagnostic_paths(current, "instructions.oversized"),
    )


# --- where to look ---------------------------------------------------------------------------


def _working_directory(
    workspace_root: Path, root: Path, cwd: Path | None, diagnostics: list[Diagnostic]
) -> Path:
    if cwd is None:
        return root
    resolved = real_path(cwd if cwd.is_absolute() else workspace_root / cwd)
    if not is_within(resolved, root):
        message = (
            f"working directory {cwd} resolves outside the workspace root; "
            "the workspace root is used instead"
        )
        code = "instructions.outside_workspace"
    elif not resolved.is_dir():
        message = f"working directory {cwd} is not a directory; the workspace root is used"
        code = "instructions.bad_cwd"
    else:
        return resolved
    diagnostics.append(Diagnostic(severity="error", code=code, path=str(cwd), message=message))
    return root


def _project_root(root: Path, cwd: Path, markers: Sequence[str]) -> Path:
    for directory in (cwd, *cwd.parents):
        if any(os.path.lexists(directory / marker) for marker in markers):
            return directory
        if directory == root:
            break
    return root


def _path_directories(project_root: Path, cwd: Path) -> list[Path]:
    directories = [project_root]
    for part in cwd.relative_to(project_root).parts:
        directories.append(directories[-1] / part)
    return directories


def _search(scan: _Scan, max_depth: int) -> list[Path]:
    """Directories below the project root, down to ``max_depth`` levels (the root is 0)."""
    found = [scan.project_root]
    stack = [(scan.project_root, 0)]
    while stack:
        directory, depth = stack.pop()
        if depth >= max_depth:
            continue
        for child in _subdirectories(scan, directory):
            found.append(child)
            stack.append((child, depth + 1))
    return found


def _subdirectories(scan: _Scan, directory: Path) -> list[Path]:
    try:
        with os.scandir(directory) as entries:
            candidates = sorted(
                (e for e in entries if not e.name.startswith(".") and e.name not in SKIPPED_DIRS),
                key=lambda e: e.name,
            )
    except OSError as exc:
        scan.report(
            "warning",
            "instructions.unreadable_directory",
            relative_posix(directory, scan.root),
            f"directory could not be listed ({exc.strerror or exc}); not searched",
        )
        return []
    children: list[Path] = []
    for entry in candidates:
        child = Path(entry.path)
        try:
            if entry.is_symlink():
                _check_linked_directory(scan, child)
            elif entry.is_dir(follow_symlinks=False):
                children.append(child)
        except OSError:
            continue  # vanished while listing
    return children


def _check_linked_directory(scan: _Scan, link: Path) -> None:
    target = real_path(link)
    if not is_within(target, scan.root) and target.is_dir():
        scan.report(
            "error",
            "instructions.outside_workspace",
            relative_posix(link, scan.root),
            "symlinked directory resolves outside the workspace root; not followed",
        )


def _targets(
    workspace_root: Path, root: Path, mentioned: Sequence[str], pinned: Sequence[str]
) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for kind, paths in (("mentioned", mentioned), ("pinned", pinned)):
        for raw in paths:
            normalized = _workspace_relative(workspace_root, root, raw)
            if normalized is not None:
                out.append((kind, normalized))
    return tuple(out)


def _workspace_relative(workspace_root: Path, root: Path, raw: str) -> str | None:
    if not raw:
        return None
    path = posixpath.normpath(raw)
    if posixpath.isabs(path):
        for base in (root, workspace_root.absolute()):
            if is_within(Path(path), base):
                return relative_posix(Path(path), base)
        return None
    if path == ".." or path.startswith("../"):
        return None
    return path


def _depth_key(project_root: Path, directory: Path) -> tuple[int, tuple[str, ...]]:
    parts = directory.relative_to(project_root).parts
    return len(parts), parts


# --- one directory ---------------------------------------------------------------------------


def _instruction_in(scan: _Scan, directory: Path, *, on_path: bool) -> InstructionText | None:
    chosen = _choose_file(scan, directory)
    if chosen is None:
        return None
    path, content = chosen
    rel = relative_posix(path, scan.root)
    scope = relative_posix(directory, scan.root)
    if content.truncated:
        scan.report(
            "warning",
            "instructions.oversized",
            rel,
            f"file is {content.size} bytes, over the {scan.max_bytes}-byte cap; "
            f"the text is cut at {len(content.text.encode())} bytes on a UTF-8 boundary",
        )
    applies, reason = _applies(scan, scope, directory, on_path=on_path)
    info = InstructionFile(
        path=rel,
        scope=scope,
        hash=content.hash,
        bytes=content.size,
        truncated=content.truncated,
        applies=applies,
        reason=reason,
    )
    depth = len(directory.relative_to(scan.project_root).parts)
    return InstructionText(info=info, text=content.text, depth=depth)


def _choose_file(scan: _Scan, directory: Path) -> tuple[Path, CappedText] | None:
    """The directory's first candidate and its content; ``None`` (maybe with a diagnostic)
    when there is none or it is refused or unreadable."""
    for name in scan.names.candidates:
        path = directory / name
        rel = relative_posix(path, scan.root)
        try:
            mode = os.lstat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            scan.report("error", "instructions.unreadable", rel, f"cannot be read: {exc}")
            return None
        target = path
        if stat.S_ISLNK(mode):
            target = real_path(path)
            if not is_within(target, scan.root):
                scan.report(
                    "error",
                    "instructions.outside_workspace",
                    rel,
                    "symlink resolves outside the workspace root; refused, not read",
                )
                return None
            if target.is_dir():
                continue
        elif stat.S_ISDIR(mode):
            continue
        try:
            return path, read_capped_text(target, scan.max_bytes, root=scan.root)
        except UnreadableFileError as exc:
            scan.report("error", "instructions.unreadable", rel, f"file {exc}; skipped")
            return None
    return None


def _applies(scan: _Scan, scope: str, directory: Path, *, on_path: bool) -> tuple[bool, str]:
    if directory == scan.project_root:
        return True, _ROOT_REASON
    if on_path:
        return True, _PATH_REASON
    for kind, target in scan.targets:
        if scope == "." or target == scope or target.startswith(scope + "/"):
            return True, f"nested: {kind} path {target} is inside its scope"
    return False, f"nested: applies only when a mentioned or pinned path is under {scope}/"


def _diagnostic_paths(scan: InstructionScan, code: str) -> list[str]:
    return sorted({d.path for d in scan.diagnostics if d.code == code})
