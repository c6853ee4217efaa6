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
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sidecar import beneath
from sidecar.paths import UnreadableFileError, open_regular
from sidecar.tools.bounds import DEFAULT_BOUNDS, Bounds, cut_line, fit_lines
from sidecar.tools.errors import ToolError
from sidecar.tools.listing import compile_glob
from sidecar.tools.output import ToolOutput
from sidecar.tools.walk import walk

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sidecar.tools.confine import Workspace

__all__ = ["Backend", "GrepMode", "grep", "ripgrep_path"]

GrepMode = Literal["files", "content", "count"]
Backend = Literal["auto", "rg", "python"]

_TIMEOUT_S = 60.0
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
) -> ToolOutput:
    """Lines matching ``pattern`` under ``path`` (a directory or one file)."""
    if not isinstance(pattern, str) or not pattern or "\x00" in pattern:
        raise ToolError("tool.bad_pattern", "pattern must be a non-empty regular expression")
    if glob is not None and (not isinstance(glob, str) or "\x00" in glob):
        raise ToolError("tool.bad_pattern", "glob must be a string such as '*.py'")
    target = ws.resolve(path)
    if not target.exists():
        raise ToolError("tool.not_found", f"{ws.display(target)} does not exist")
    context = max(0, min(int(context or 0), 10))
    rg = ripgrep_path() if backend in ("auto", "rg") else None
    if backend == "rg" and rg is None:
        raise ToolError("tool.failed", "ripgrep (rg) is not installed")
    cap = bounds.grep_lines_per_file if mode == "content" else 0
    query = _Query(target, pattern, glob, ignore_case, context, cap, ws.root_of(target))
    files = _with_rg(rg, query) if rg is not None else _with_python(ws, query)
    return _render(ws, target, pattern, files, mode, bounds)


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


def _with_rg(rg: str, q: _Query) -> list[_File]:
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
    files: dict[str, _File] = {}
    try:
        dir_fd = beneath.open_dir(q.root, cwd)
    except (OSError, ValueError) as exc:
        raise ToolError("tool.failed", f"grep: {cwd} cannot be opened: {exc}") from exc
    try:
        # the directory checked, held open: a swap after the check cannot redirect rg
        here = f"/proc/self/fd/{dir_fd}" if sys.platform.startswith("linux") else cwd
        proc = subprocess.Popen(
            args,
            cwd=here,
            pass_fds=(dir_fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_rg_env(),
        )
    except OSError as exc:
        raise ToolError("tool.failed", f"ripgrep could not start: {exc}") from exc
    finally:
        os.close(dir_fd)
    assert proc.stdout is not None
    try:
        for raw in proc.stdout:
            _take_rg_event(raw, files, cap, context)
        _, err = proc.communicate(timeout=_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        proc.kill()
        proc.communicate()
        raise ToolError("tool.failed", "grep took over a minute; narrow the path or glob") from exc
    if proc.returncode == 2 and not files:
        message = err.decode("utf-8", "replace").strip()
        code = "tool.bad_pattern" if "regex" in message.lower() else "tool.failed"
        raise ToolError(code, f"grep: {' '.join(message.split()) or 'ripgrep failed'}")
    return sorted(files.values(), key=lambda f: f.rel)


def _rg_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIPGREP_")}
    env["LC_ALL"] = "C.UTF-8"
    return env


def _take_rg_event(raw: bytes, files: dict[str, _File], cap: int, context: int) -> None:
    event = json.loads(raw)
    kind = event.get("type")
    if kind not in ("match", "context"):
        return
    data = event["data"]
    name = _text(data["path"]).removeprefix("./")
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


def _with_python(ws: Workspace, q: _Query) -> list[_File]:
    target, glob, context, cap, root = q.target, q.glob, q.context, q.cap, q.root
    try:
        regex = re.compile(q.pattern, re.IGNORECASE if q.ignore_case else 0)
    except re.error as exc:
        raise ToolError("tool.bad_pattern", f"grep: bad regular expression: {exc}") from exc
    spec = compile_glob(glob) if glob else None
    if target.is_dir():
        candidates: Iterator[tuple[str, str]] = (
            (w.path, w.rel)
            for w in walk(target, within=root)
            if not w.is_dir and (spec is None or spec.match_file(w.rel))
        )
    else:
        candidates = iter([(str(target), target.name)])
    out: list[_File] = []
    for full, rel in candidates:
        found = _search_file(root, full, rel, regex, context, cap)
        if found is not None:
            out.append(found)
    return out


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
    ws: Workspace, target: Path, pattern: str, files: list[_File], mode: GrepMode, bounds: Bounds
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
    if cut:
        out.append(
            f"[{len(files) - shown_files} more files not shown; narrow with path=, glob= or a"
            " more specific pattern]"
        )
    return ToolOutput(
        text="\n".join(out),
        truncated=cut or (mode == "content" and any(f.matches > f.shown for f in files)),
        locations=tuple(locations[:50]),
        meta={"matches": total, "files": len(files)},
    )
