"""grep: a regex over the workspace, grouped by file, bounded, with ripgrep when it is there.

Back ends, decided and measured (``bench`` suite ``tools``): ripgrep (the ``rg`` the
``ripgrep`` wheel installs beside the interpreter, else on PATH) is spawned with
``--json --hidden --no-require-git`` and ``.git`` excluded, so it skips exactly what
:mod:`sidecar.tools.walk` skips; without it the same walk feeds Python's ``re`` — same rules,
same output, slower on big trees.  Both read every match (the totals are exact) but keep only
what the bounds show: ``grep_files`` files, ``grep_lines_per_file`` lines in each, the whole
within ``max_tokens``; the last line says what was left and how to narrow it.

Modes: ``files`` (paths with their match counts), ``content`` (matching lines with
``context`` lines around them, ``N:`` for a match and ``N-`` for context, as grep prints them),
``count`` (the total only).

Bounded in time and size whatever the files are (:mod:`sidecar.tools.deadline`): a single
target that is not a regular file (a FIFO, a socket, a device) is refused before anything
opens it (ripgrep skips such files inside a directory by itself); ripgrep's output is read as
it comes, the call's deadline checked per event and ripgrep killed when it passes even if it
prints nothing (:mod:`sidecar.tools.ripgrep`); at most :data:`MAX_RG_OUTPUT_BYTES` of its
output are read (a file growing without end), and then the result says its totals are
partial.  A call that runs out of time raises ``tool.timeout`` saying what was found so far
and how to narrow it.

ripgrep starts *in* the directory held by a descriptor (opened from the root down,
:mod:`sidecar.beneath`; on Linux its working directory is ``/proc/self/fd/N``), and the
fallback opens every file by descriptor from the root down: a directory swapped for a symlink
after the check is refused, not followed.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sidecar import beneath
from sidecar.paths import UnreadableFileError, file_kind, open_regular
from sidecar.tools.bounds import DEFAULT_BOUNDS, Bounds, cut_line, fit_lines
from sidecar.tools.deadline import LOOK_LIMIT_S, Deadline, DeadlinePassed
from sidecar.tools.errors import ToolError
from sidecar.tools.listing import compile_glob, place
from sidecar.tools.output import ToolOutput
from sidecar.tools.ripgrep import run_ripgrep
from sidecar.tools.walk import walk

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sidecar.tools.confine import Workspace

__all__ = ["MAX_RG_OUTPUT_BYTES", "Backend", "GrepMode", "grep", "ripgrep_path"]

GrepMode = Literal["files", "content", "count"]
Backend = Literal["auto", "rg", "python"]

MAX_RG_OUTPUT_BYTES = 32 * 1024 * 1024
"""ripgrep's JSON output read at most (about 100,000 matching lines): past it the search stops
and its totals are partial."""
_MAX_FILE_BYTES = 8 * 1024 * 1024  # the fallback skips bigger files, as rg skips binaries


@dataclass(slots=True)
class _File:
    rel: str
    matches: int = 0
    lines: list[tuple[int, str, bool]] = field(default_factory=list)  # (number, text, is_match)
    shown: int = 0  # matches kept in ``lines``
    last_shown: int = 0  # line number of the last match kept


def ripgrep_path() -> str | None:
    """The ``rg`` binary: the wheel's beside this interpreter first, then PATH."""
    beside = Path(sys.executable).parent / ("rg.exe" if os.name == "nt" else "rg")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def grep(
    ws: Workspace,
    pattern: object,
    path: object = None,
    *,
    glob: str | None = None,
    ignore_case: bool = False,
    context: int = 0,
    mode: GrepMode = "content",
    bounds: Bounds = DEFAULT_BOUNDS,
    backend: Backend = "auto",
    deadline: Deadline | None = None,
) -> ToolOutput:
    """Lines matching ``pattern`` under ``path`` (a directory or one regular file), within
    ``deadline`` (by default the tool's own limit, :data:`LOOK_LIMIT_S`)."""
    if not isinstance(pattern, str) or not pattern or "\x00" in pattern:
        raise ToolError("tool.bad_pattern", "pattern must be a non-empty regular expression")
    if glob is not None and (not isinstance(glob, str) or "\x00" in glob):
        raise ToolError("tool.bad_pattern", "glob must be a string such as '*.py'")
    target = _target(ws, path)
    context = max(0, min(int(context or 0), 10))
    rg = ripgrep_path() if backend in ("auto", "rg") else None
    if backend == "rg" and rg is None:
        raise ToolError("tool.failed", "ripgrep (rg) is not installed")
    cap = bounds.grep_lines_per_file if mode == "content" else 0
    query = _Query(target, pattern, glob, ignore_case, context, cap, ws.root_of(target))
    found = _Found()
    try:
        if rg is not None:
            _with_rg(rg, query, found, deadline or Deadline(LOOK_LIMIT_S))
        else:
            _with_python(ws, query, found, deadline or Deadline(LOOK_LIMIT_S))
    except DeadlinePassed as passed:
        raise passed.error("grep", found.so_far(ws, target), _NARROW) from None
    files = list(found.files.values())  # the walk's order; ripgrep's is its threads'
    if rg is not None:
        files.sort(key=lambda f: f.rel)
    return _render(ws, target, pattern, files, mode, bounds, partial=found.cut)


_NARROW = (
    "Narrow it: path= a smaller directory or one file, glob= such as '*.py', or a more"
    " specific pattern"
)


def _target(ws: Workspace, path: object) -> Path:
    """The directory or regular file to search: anything else (a FIFO, whose open would
    wait for a writer; a device; a socket) is refused before it is opened."""
    target = ws.resolve(path)
    try:
        mode = os.stat(target).st_mode  # resolved already: stat never opens, never blocks
    except FileNotFoundError:
        raise ToolError("tool.not_found", f"{ws.display(target)} does not exist") from None
    except OSError as exc:
        raise ToolError("tool.failed", f"{ws.display(target)}: {exc.strerror or exc}") from exc
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise ToolError(
            "tool.not_a_file",
            f"{ws.display(target)} is {file_kind(mode)}: grep searches a directory or a"
            " regular file",
        )
    return target


def _rel_base(target: Path) -> Path:
    return target if target.is_dir() else target.parent


@dataclass(frozen=True, slots=True)
class _Query:
    """One grep as both back ends run it."""

    target: Path
    pattern: str
    glob: str | None
    ignore_case: bool
    context: int
    cap: int  # matching lines kept per file (0: counts only)
    root: Path  # the root holding ``target``: where descriptor walks start


@dataclass(slots=True)
class _Found:
    """What a search has found so far (also when it is stopped half-way)."""

    files: dict[str, _File] = field(default_factory=dict)
    searched: int | None = None
    """Files searched to the end (the walk's count; ripgrep names only files that match)."""
    reading: str | None = None
    """The file being searched when the search stopped, if it was in one with matches."""
    cut: bool = False
    """Stopped at :data:`MAX_RG_OUTPUT_BYTES`: the totals are partial."""

    def so_far(self, ws: Workspace, target: Path) -> str:
        matches = sum(f.matches for f in self.files.values())
        done = (
            f"{matches} match{'es' if matches != 1 else ''} in {len(self.files)} file"
            f"{'s' if len(self.files) != 1 else ''} found so far in {place(ws, target)}"
        )
        if self.searched is not None:
            done += f" ({self.searched} file{'s' if self.searched != 1 else ''} searched)"
        if self.reading is not None:
            done += f"; it was still reading {self.reading} (a file that keeps growing?)"
        elif not matches:
            done += " (a huge tree, or an ignore file that is a pipe?)"
        return done


def _with_rg(rg: str, q: _Query, found: _Found, deadline: Deadline) -> None:
    target, pattern, glob, context, cap = q.target, q.pattern, q.glob, q.context, q.cap
    args = [
        rg,
        "--json",
        "--hidden",
        "--no-require-git",
        "--glob",
        "!.git",
        "--no-config",
        "--max-columns",
        "4000",
        "--max-columns-preview",
    ]
    if q.ignore_case:
        args.append("--ignore-case")
    if context:
        args += ["--context", str(context)]
    if glob:
        args += ["--glob", glob]
    if target.is_dir():
        args += ["--regexp", pattern, "--", "."]
        cwd = target
    else:
        args += ["--regexp", pattern, "--", target.name]
        cwd = target.parent

    def take(raw: bytes) -> None:
        _take_rg_event(raw, found, cap, context)

    try:
        dir_fd = beneath.open_dir(q.root, cwd)
    except (OSError, ValueError) as exc:
        raise ToolError("tool.failed", f"grep: {cwd} cannot be opened: {exc}") from exc
    try:
        end = run_ripgrep(  # in the directory checked, held open (pass_fds: rg keeps it)
            args,
            beneath.start_dir(dir_fd, cwd),
            _rg_env(),
            on_line=take,
            deadline=deadline,
            max_bytes=MAX_RG_OUTPUT_BYTES,
            pass_fds=(dir_fd,),
        )
    finally:
        os.close(dir_fd)
    found.cut = end.cut
    if end.returncode == 2 and not found.files:
        message = end.stderr.decode("utf-8", "replace").strip()
        code = "tool.bad_pattern" if "regex" in message.lower() else "tool.failed"
        raise ToolError(code, f"grep: {' '.join(message.split()) or 'ripgrep failed'}")


def _rg_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIPGREP_")}
    env["LC_ALL"] = "C.UTF-8"
    return env


def _take_rg_event(raw: bytes, found: _Found, cap: int, context: int) -> None:
    event = json.loads(raw)
    kind = event.get("type")
    if kind == "begin":
        found.reading = _text(event["data"]["path"]).removeprefix("./")
        return
    if kind == "end":
        found.reading = None
        return
    if kind not in ("match", "context"):
        return
    data = event["data"]
    name = _text(data["path"]).removeprefix("./")
    files = found.files
    entry = files.get(name)
    if entry is None:
        entry = files[name] = _File(name)
    number = int(data["line_number"])
    if kind == "match":
        entry.matches += 1
        keep = entry.shown < cap
        if keep:
            entry.shown += 1
            entry.last_shown = number
    else:  # context: before a shown match, or trailing the last one shown
        keep = entry.shown < cap or number <= entry.last_shown + context
    if keep:
        entry.lines.append((number, _text(data["lines"]).rstrip("\r\n"), kind == "match"))


def _text(value: dict[str, str]) -> str:
    if "text" in value:
        return value["text"]
    return base64.b64decode(value.get("bytes", "")).decode("utf-8", "replace")


def _with_python(ws: Workspace, q: _Query, found: _Found, deadline: Deadline) -> None:
    target, glob, context, cap, root = q.target, q.glob, q.context, q.cap, q.root
    try:
        regex = re.compile(q.pattern, re.IGNORECASE if q.ignore_case else 0)
    except re.error as exc:
        raise ToolError("tool.bad_pattern", f"grep: bad regular expression: {exc}") from exc
    spec = compile_glob(glob) if glob else None
    if target.is_dir():
        candidates: Iterator[tuple[str, str]] = (
            (w.path, w.rel)
            for w in walk(target, within=root, deadline=deadline)
            if not w.is_dir and (spec is None or spec.match_file(w.rel))
        )
    else:
        candidates = iter([(str(target), target.name)])
    found.searched = 0
    for full, rel in candidates:
        deadline.check()
        entry = _search_file(root, full, rel, regex, context, cap)
        found.searched += 1
        if entry is not None:
            found.files[rel] = entry


def _search_file(
    root: Path, full: str, rel: str, regex: re.Pattern[str], context: int, cap: int
) -> _File | None:
    try:
        with open_regular(Path(full), root=root) as handle:  # by descriptor from the root
            data = handle.read(_MAX_FILE_BYTES + 1)
    except (UnreadableFileError, OSError):
        return None
    if len(data) > _MAX_FILE_BYTES or b"\x00" in data[:8192]:
        return None
    lines = data.decode("utf-8", "replace").splitlines()
    hits = [i for i, line in enumerate(lines) if regex.search(line)]
    if not hits:
        return None
    entry = _File(rel, matches=len(hits), shown=min(len(hits), cap))
    if cap:
        wanted: dict[int, bool] = {}
        for i in hits[:cap]:
            for j in range(max(0, i - context), min(len(lines), i + context + 1)):
                wanted.setdefault(j, False)
            wanted[i] = True
        entry.lines = [(j + 1, lines[j], wanted[j]) for j in sorted(wanted)]
    return entry


def _render(
    ws: Workspace,
    target: Path,
    pattern: str,
    files: list[_File],
    mode: GrepMode,
    bounds: Bounds,
    *,
    partial: bool = False,
) -> ToolOutput:
    total = sum(f.matches for f in files)
    base = _rel_base(target)
    shown_base = ws.display(base)
    prefix = "" if shown_base == "." else f"{shown_base}/"
    out: list[str] = []
    used = 0
    cut = False
    locations: list[tuple[str, int | None]] = []
    for entry in files if mode != "count" else ():
        if len(locations) >= bounds.grep_files:
            cut = True
            break
        block = [f"{prefix}{entry.rel}: {entry.matches} match{'es' if entry.matches != 1 else ''}"]
        if mode == "content":
            previous = None
            for number, text, is_match in entry.lines:
                if previous is not None and number > previous + 1:
                    block.append("  --")
                sep = ":" if is_match else "-"
                block.append(f"  {number}{sep} {cut_line(text, min(bounds.line_chars, 500))}")
                previous = number
            hidden = entry.matches - entry.shown
            if hidden > 0:
                block.append(f"  … {hidden} more in this file (grep with path={prefix}{entry.rel})")
        size = sum(len(line) + 1 for line in block)
        if used + size > bounds.max_chars and out:
            cut = True
            break
        out.extend(block)
        used += size
        first = next((n for n, _, m in entry.lines if m), None)
        locations.append((str(base / entry.rel), first))
    if not files:
        out.append(f"no matches for {pattern!r} (files ignored by .gitignore are not searched)")
    kept = fit_lines(out, bounds.max_tokens)
    if kept < len(out):  # dense text: the real token count is the bound
        del out[kept:]
        cut = True
    shown_files = sum(1 for line in out if not line.startswith(" "))
    if files:
        plural = "es" if total != 1 else ""
        out.insert(0, f"{total} match{plural} in {len(files)} file{'s' if len(files) != 1 else ''}")
    if cut or partial:
        # one last line (fit_lines kept room for one): what was left out, how to narrow it
        left_out = f"{len(files) - shown_files} more files not shown; " if cut else ""
        stopped = (
            f"the search stopped after {MAX_RG_OUTPUT_BYTES // (1024 * 1024)} MB of results (a"
            " file that keeps growing, or far too many matches), so the totals are partial; "
            if partial
            else ""
        )
        out.append(f"[{left_out}{stopped}narrow with path=, glob= or a more specific pattern]")
    meta: dict[str, object] = {"matches": total, "files": len(files)}
    if partial:
        meta["partial"] = True
    return ToolOutput(
        text="\n".join(out),
        truncated=cut or partial or (mode == "content" and any(f.matches > f.shown for f in files)),
        locations=tuple(locations[:50]),
        meta=meta,
    )
