"""The fixed prompt fragments that open every system prompt.

Seven fragments, in this fixed order: base identity, communication style, action model, edit
guidance, action safety, self-knowledge, web/source guidance (``data/fragments/NN_<id>.md``).
Each can be replaced or disabled, per profile (``profile.fragments[id] = text | null``) or per
workspace (``<root>/.context-sidecar/fragments/<id>.md``; an empty file disables it).  The
profile wins over the workspace file.  The order never changes, so the stable prefix of the
prompt stays byte-identical across turns.

The self-knowledge fragment deliberately carries no live numbers (no dashboard): anything that
changes each turn in the system prompt would invalidate every prompt cache behind it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["FRAGMENT_IDS", "Fragment", "load_fragments"]

FRAGMENT_IDS = (
    "base_identity",
    "communication_style",
    "action_model",
    "edit_guidance",
    "action_safety",
    "self_knowledge",
    "web_source_guidance",
)
WORKSPACE_DIR = ".context-sidecar/fragments"


@dataclass(frozen=True, slots=True)
class Fragment:
    id: str
    text: str
    origin: str
    """``default``, ``profile`` or the workspace file's path."""


@cache
def _defaults() -> dict[str, str]:
    folder = resources.files("sidecar.context").joinpath("data/fragments")
    out: dict[str, str] = {}
    for index, fragment_id in enumerate(FRAGMENT_IDS, start=1):
        out[fragment_id] = folder.joinpath(f"{index:02d}_{fragment_id}.md").read_text().strip()
    return out


def load_fragments(overrides: dict[str, str | None], workspace_root: Path | None) -> list[Fragment]:
    """The enabled fragments, in the fixed order."""
    defaults = _defaults()
    out: list[Fragment] = []
    for fragment_id in FRAGMENT_IDS:
        if fragment_id in overrides:
            text = overrides[fragment_id]
            if text is not None and text.strip():
                out.append(Fragment(fragment_id, text.strip(), "profile"))
            continue
        if workspace_root is not None:
            path = workspace_root / WORKSPACE_DIR / f"{fragment_id}.md"
            if path.is_file() and not path.is_symlink():
                text = path.read_text(encoding="utf-8", errors="replace").strip()
                if text:
                    out.append(Fragment(fragment_id, text, f"{WORKSPACE_DIR}/{fragment_id}.md"))
                continue
        out.append(Fragment(fragment_id, defaults[fragment_id], "default"))
    return out
