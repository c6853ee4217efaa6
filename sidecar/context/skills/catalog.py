"""The skill catalog: the ``<available_skills>`` block the model chooses skills from.

``<available_skills>``, one ``- name: description`` line per skill (whitespace in the
description collapsed to single spaces), ``</available_skills>``.  It holds the longest
prefix of the skills, in discovery order, whose whole rendered text counts within the budget
(found by binary search, assuming appending a line never lowers the count); the rest are
omitted.  When not even one skill fits, the text is empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sidecar.context.skills.skill import Skill

__all__ = ["render_catalog"]


def render_catalog(
    skills: Sequence[Skill], budget_tokens: int, count: Callable[[str], int]
) -> tuple[str, list[str], list[str]]:
    """The ``<available_skills>`` block within ``budget_tokens``: (text, included, omitted)."""
    names = [s.info.name for s in skills]
    low, high = 0, len(skills)  # invariant: a prefix of `low` skills fits
    while low < high:
        mid = (low + high + 1) // 2
        if count(_catalog_text(skills[:mid])) <= budget_tokens:
            low = mid
        else:
            high = mid - 1
    text = _catalog_text(skills[:low]) if low else ""
    return text, names[:low], names[low:]


def _catalog_text(skills: Sequence[Skill]) -> str:
    lines = ["<available_skills>"]
    lines.extend(f"- {s.info.name}: {' '.join(s.info.description.split())}" for s in skills)
    lines.append("</available_skills>")
    return "\n".join(lines)
