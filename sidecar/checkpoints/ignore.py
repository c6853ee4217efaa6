"""What git ignores under a workspace root, read as git reads it, without running git.

The sources, lowest priority first: the global excludes (``core.excludesFile`` of
``~/.gitconfig``, else ``$XDG_CONFIG_HOME/git/ignore``), the repository's
``.git/info/exclude`` (read, never written), the ``.gitignore`` files of the directories
above the root up to the repository's top, then each ``.gitignore`` met on the way down.  The
last pattern that matches decides (a ``!negation`` re-includes); a directory that is ignored
is never entered, so nothing under it is read (``node_modules/``).  A ``.git`` entry (the
directory, or the file of a worktree) is never entered at any depth.

Patterns are pathspec's (git's wildmatch); the patterns of one file are also joined into one
regular expression, so a path that none of them matches — most paths — costs one match per
file of rules instead of one per pattern.
"""

from __future__ import annotations

import configparser
import os
import re
import stat
from dataclasses import dataclass, replace
from pathlib import Path

import pathspec

__all__ = ["Rules", "base_rules", "global_excludes", "rules_at", "rules_in"]

_GROUP = re.compile(r"\(\?P<[a-z_]+>")


@dataclass(frozen=True, slots=True)
class Rules:
    """The patterns of one ignore file, for paths relative to ``base`` (``""`` or ``a/b/``)."""

    base: str
    any_match: re.Pattern[str]
    patterns: tuple[tuple[bool, re.Pattern[str]], ...]
    """``(include, regex)``; ``include`` False for a ``!negation``."""
    prefix: str = ""
    """For a file above the root: where the root lies below the file's directory."""
    token: str = ""
    """Says which rules these are (their file's patterns, base and prefix): a capture keeps
    the verdicts of a directory for as long as the tokens of its rules are the same."""

    def verdict(self, rel: str) -> bool | None:
        """True: ignored; False: re-included; None: no pattern here speaks of ``rel``
        (relative to the root, ``/``-terminated for a directory)."""
        rel = self.prefix + rel
        if not rel.startswith(self.base):
            return None
        sub = rel[len(self.base) :]
        if self.any_match.match(sub) is None:
            return None
        for include, regex in reversed(self.patterns):
            if regex.match(sub) is not None:
                return include
        return None


def _compile(lines: list[str], base: str) -> Rules | None:
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    patterns: tuple[tuple[bool, re.Pattern[str]], ...] = tuple(
        (bool(p.include), regex)
        for p in spec.patterns
        if p.include is not None and (regex := getattr(p, "regex", None)) is not None
    )
    if not patterns:
        return None
    joined = "|".join(f"(?:{_GROUP.sub('(?:', r.pattern)})" for _, r in patterns)
    token = f"{base}\0" + "\0".join(f"{int(i)}{r.pattern}" for i, r in patterns)
    return Rules(base, re.compile(joined), patterns, token=token)


def _read_regular(path: str, dir_fd: int | None = None) -> list[str] | None:
    try:
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(1 << 20).decode("utf-8", "replace").splitlines()
    finally:
        os.close(fd)


def rules_in(directory: str, base: str) -> Rules | None:
    """The rules of ``directory/.gitignore`` (``base``: the directory relative to the root)."""
    lines = _read_regular(os.path.join(directory, ".gitignore"))
    return _compile(lines, base) if lines else None


def rules_at(dir_fd: int, base: str) -> Rules | None:
    """:func:`rules_in` for the directory held by ``dir_fd``."""
    lines = _read_regular(".gitignore", dir_fd)
    return _compile(lines, base) if lines else None


def global_excludes() -> Path | None:
    """Where git's global excludes file is (it may not exist)."""
    home = Path.home()
    for config in (home / ".gitconfig", _xdg() / "git" / "config"):
        parser = configparser.RawConfigParser(strict=False)
        try:
            parser.read(config, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        for section in parser.sections():
            if section.strip().lower() == "core" and parser.has_option(section, "excludesfile"):
                raw = parser.get(section, "excludesfile").strip().strip('"')
                return Path(os.path.expanduser(raw))
    return _xdg() / "git" / "ignore"


def _xdg() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def base_rules(root: Path, global_file: Path | None) -> list[Rules]:
    """The rules that apply at ``root`` before its own ``.gitignore``: the global excludes,
    the repository's ``info/exclude`` and the ``.gitignore`` files between the repository's
    top and the root (lowest priority first)."""
    top = next((d for d in (root, *root.parents) if (d / ".git").exists()), None)
    out: list[Rules] = []
    sources: list[tuple[str, str]] = []  # (file, base of the root within it)
    within = "" if top is None else root.relative_to(top).as_posix()
    within = f"{within}/" if within not in ("", ".") else ""
    if global_file is not None:
        sources.append((str(global_file), within))
    if top is not None and (top / ".git").is_dir():
        sources.append((str(top / ".git" / "info" / "exclude"), within))
    for path, prefix in sources:
        lines = _read_regular(path)
        rules = _compile(lines, "") if lines else None
        if rules is not None:
            out.append(replace(rules, prefix=prefix, token=f"{prefix}\0{rules.token}"))
    if top is not None and top != root:
        for parent in reversed(root.parents):
            if parent == top or top in parent.parents:
                prefix = root.relative_to(parent).as_posix() + "/"
                rules = rules_in(str(parent), "")
                if rules is not None:
                    out.append(replace(rules, prefix=prefix, token=f"{prefix}\0{rules.token}"))
    return out
