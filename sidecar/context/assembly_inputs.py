"""What :func:`~sidecar.context.assemble.assemble` reads: everything, gathered beforehand.

:class:`AssemblyInputs` is made by :func:`~sidecar.context.build.build_inputs` from a frozen
input (or by hand, in tests and the bench); assembly reads nothing else, so the same inputs
give a byte-identical prompt.  A :class:`SectionInput` is one candidate system section before
selection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol.context import ModelLimits, PromptProfile
from sidecar.context.cache_accounting import RequestShape
from sidecar.context.calibration import CountFactor
from sidecar.context.controls import ControlState
from sidecar.context.tokens import Tokenizer
from sidecar.context.window_hold import Grids
from sidecar.store.history import HistoryView

__all__ = ["AssemblyInputs", "SectionInput"]


@dataclass(frozen=True, slots=True)
class SectionInput:
    """A candidate system section before selection."""

    id: str
    category: str
    title: str
    text: str
    provenance: dict[str, Any]
    ledger_kind: str
    locator: str | None = None
    priority: int = 0
    pinned: bool = False


@dataclass(slots=True)
class AssemblyInputs:
    """Everything one assembly reads."""

    profile: PromptProfile
    limits: ModelLimits
    tokenizer: Tokenizer
    view: HistoryView
    controls: ControlState
    harness: list[SectionInput]
    instructions: list[tuple[SectionInput, int]]
    """(section, depth), root first."""
    activated_skills: list[SectionInput]
    skills_catalog: SectionInput | None
    pinned: list[SectionInput]
    host: list[SectionInput]
    tools: list[dict[str, Any]]
    user_turn: list[dict[str, Any]]
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    instructions_diff: dict[str, Any] = field(default_factory=dict)
    catalog_omitted: list[str] = field(default_factory=list)
    in_chat: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    """Preset components injected into the transcript: (depth from the end, message)."""
    turn: list[dict[str, Any]] = field(default_factory=list)
    """Messages of the turn in progress after its user message (a run's rounds so far):
    part of the current turn, so never evicted."""
    previous: RequestShape | None = None
    """The session's previous request: where its cache entries are (breakpoints, accounting)."""
    calibration: CountFactor = field(default_factory=lambda: CountFactor(factor=1.0))
    """What the provider counts per token we count (:mod:`sidecar.context.calibration`):
    the budget is the window's room divided by it."""
    window_floor: int | None = None
    """The seq the session's history window last started at, for this model
    (:mod:`sidecar.context.window_floor`): the start never moves before it."""
    window_grids: Grids | None = None
    """The caps' grid lines (and quanta) that start was snapped to: the start holds at it
    until one is crossed (:class:`sidecar.context.window.Caps`)."""
    settled_ttl: str | None = None
    """The TTL of the marker ending the transcript before the new turn, when the session's
    pauses chose one (default: the tail's); :mod:`sidecar.context.cache_pauses`."""
    cache_cold: bool = False
    """The session's cache has expired since its last model call (``profile.cache.
    compactWhenCold``: :mod:`sidecar.context.cache_pauses`)."""
