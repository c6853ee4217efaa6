"""Skill discovery: the roots, what counts as a skill in them, name clashes, confinement.

Discovery reads metadata only (the frontmatter, see :mod:`.frontmatter`), never a body.

Roots, in order: for each workspace root ``.agents/skills``, ``.claude/skills``,
``.codex/skills``; then the same three under ``home``.  A missing root is skipped silently.
A root that resolves to a directory already scanned (e.g. ``.claude/skills`` symlinked to
``.agents/skills``) is skipped silently, so one skill is not reported as its own duplicate.
A workspace's roots must resolve inside that workspace; home roots may live anywhere (they
are the user's own configuration).  A skill is an immediate, non-dot subdirectory of a root
(sorted by name); plain files in a root are ignored.  A subdirectory without ``SKILL.md`` is
reported (``skills.missing_skill_md``).  A skill directory, or its ``SKILL.md``, that
resolves outside its root is refused (``skills.outside_root``) before it is read.  First root
wins on a name clash; each later skill of the same name gets a ``skills.duplicate_name``
warning naming both directories.  Only valid skills claim a name.

Discovery diagnostics use absolute paths, root-level problems first, then skills in order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from protocol.context import Diagnostic
from sidecar.context.skills.frontmatter import read_skill_info
from sidecar.context.skills.skill import SKILL_MD, Skill, report
from sidecar.paths import is_within, real_path

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

__all__ = ["SKILL_ROOTS", "SkillScan", "discover_skills"]

#: Skill roots, relative to each workspace root and then to the home directory.
SKILL_ROOTS = (".agents/skills", ".claude/skills", ".codex/skills")


@dataclass(frozen=True, slots=True)
class SkillScan:
    skills: list[Skill]
    diagnostics: list[Diagnostic]


def discover_skills(workspace_roots: Sequence[Path], home: Path | None) -> SkillScan:
    """Every valid skill under the workspace roots and ``home``, first root winning."""
    diagnostics: list[Diagnostic] = []
    skills: list[Skill] = []
    by_name: dict[str, Skill] = {}
    for root, confine in _skill_roots(workspace_roots, home, diagnostics):
        for skill in _skills_in_root(root, confine, diagnostics):
            first = by_name.get(skill.info.name)
            if first is None:
                by_name[skill.info.name] = skill
                skills.append(skill)
                continue
            report(
                diagnostics,
                "warning",
                "skills.duplicate_name",
                skill.directory,
                f"skill {skill.info.name!r} at {skill.directory} is ignored: "
                f"{first.directory} has the same name and comes first",
            )
    return SkillScan(skills=skills, diagnostics=diagnostics)


def _skill_roots(
    workspace_roots: Sequence[Path], home: Path | None, diagnostics: list[Diagnostic]
) -> list[tuple[Path, Path]]:
    """``(root as written, real root)`` for each existing, not yet seen skills root."""
    bases: list[tuple[Path, bool]] = [(w.absolute(), True) for w in workspace_roots]
    if home is not None:
        bases.append((home.absolute(), False))
    seen: set[Path] = set()
    roots: list[tuple[Path, Path]] = []
    for base, confined in bases:
        real_base = real_path(base)
        for relative in SKILL_ROOTS:
            root = base / relative
            real_root = real_path(root)
            if real_root in seen or not real_root.is_dir():
                continue
            if confined and not is_within(real_root, real_base):
                report(
                    diagnostics,
                    "error",
                    "skills.outside_root",
                    root,
                    f"skills root resolves to {real_root}, outside the workspace root {base}; "
                    "not read",
                )
                continue
            seen.add(real_root)
            roots.append((root, real_root))
    return roots


def _skills_in_root(root: Path, real_root: Path, diagnostics: list[Diagnostic]) -> list[Skill]:
    try:
        with os.scandir(root) as entries:
            names = sorted(e.name for e in entries if not e.name.startswith("."))
    except OSError as exc:
        report(diagnostics, "error", "skills.unreadable", root, f"cannot list: {exc}")
        return []
    skills: list[Skill] = []
    for name in names:
        directory = root / name
        if not directory.is_dir():
            continue
        skill = _load_skill(root, real_root, directory, diagnostics)
        if skill is not None:
            skills.append(skill)
    return skills


def _load_skill(
    root: Path, real_root: Path, directory: Path, diagnostics: list[Diagnostic]
) -> Skill | None:
    real_dir = real_path(directory)
    if not is_within(real_dir, real_root) or real_dir == real_root:
        report(
            diagnostics,
            "error",
            "skills.outside_root",
            directory,
            f"skill directory resolves to {real_dir}, outside its root {root}; not read",
        )
        return None
    skill_md = directory / SKILL_MD
    if not os.path.lexists(skill_md):
        report(
            diagnostics,
            "error",
            "skills.missing_skill_md",
            directory,
            f"directory has no {SKILL_MD}; not a skill",
        )
        return None
    real_md = real_path(skill_md)
    if not is_within(real_md, real_dir):
        report(
            diagnostics,
            "error",
            "skills.outside_root",
            skill_md,
            f"{SKILL_MD} resolves to {real_md}, outside its skill directory; not read",
        )
        return None
    info = read_skill_info(real_md, root, directory, skill_md, diagnostics, real_root=real_root)
    return None if info is None else Skill(info=info, directory=directory, skill_md=skill_md)
