"""The :class:`Skill` every stage passes on, and how every stage reports a problem.

Discovery builds a :class:`Skill` from a valid ``SKILL.md``; activation and the catalog only
read it.  Problems are never raised to the caller: each stage appends a
:class:`~protocol.context.Diagnostic` (a dotted ``skills.*`` code and the path concerned)
through :func:`report`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from protocol.context import Diagnostic, SkillInfo

__all__ = ["SKILL_MD", "Severity", "Skill", "report"]

#: The file that makes a directory a skill.
SKILL_MD = "SKILL.md"

Severity = Literal["warning", "error"]


@dataclass(frozen=True, slots=True)
class Skill:
    info: SkillInfo
    directory: Path
    """The skill directory as found under its root (absolute, symlinks not resolved)."""
    skill_md: Path


def report(
    diagnostics: list[Diagnostic], severity: Severity, code: str, path: Path | str, message: str
) -> None:
    diagnostics.append(Diagnostic(severity=severity, code=code, path=str(path), message=message))
