"""Agent Skills: discovery (metadata only), activation (body and references), the catalog.

This package owns everything the sidecar does with ``SKILL.md`` directories
(agentskills.io/specification, thndrs' limits).  Skills are read as text, never executed:
``scripts/`` is only ever shown as text when the body links to a file in it.  Each stage has
its own module, which documents its rules:

- :mod:`.discovery` -> the roots, which subdirectories are skills, name clashes, confinement;
- :mod:`.frontmatter` -> reading ``SKILL.md`` frontmatter and validating it against the spec;
- :mod:`.activation` -> the body and the files it links to, within limits, and their text;
- :mod:`.catalog` -> the ``<available_skills>`` block, within a token budget;
- :mod:`.skill` -> the :class:`Skill` they pass on and how each reports a problem.

Nothing is raised for what is found on disk: every problem is a ``skills.*`` diagnostic.
"""

from __future__ import annotations

from sidecar.context.skills.activation import Activation, activate_skill
from sidecar.context.skills.catalog import render_catalog
from sidecar.context.skills.discovery import SKILL_ROOTS, SkillScan, discover_skills
from sidecar.context.skills.frontmatter import FRONTMATTER_MAX_BYTES
from sidecar.context.skills.skill import Skill

__all__ = [
    "FRONTMATTER_MAX_BYTES",
    "SKILL_ROOTS",
    "Activation",
    "Skill",
    "SkillScan",
    "activate_skill",
    "discover_skills",
    "render_catalog",
]
