"""What a built-in tool returns: bounded text for the model, and facts for the front end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolOutput"]


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A tool's result, already cut to its bounds."""

    text: str
    """What the model reads; when ``truncated``, its last line says how to get the rest."""
    truncated: bool = False
    """Whether anything was left out of ``text``."""
    locations: tuple[tuple[str, int | None], ...] = ()
    """(absolute path, 1-based line or None) the call touched, for an editor to follow."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Counts a front end may show (lines, matches, files, bytes); never sent to the model."""
