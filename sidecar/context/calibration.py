"""The budget counts what the provider will count: our token counts, scaled per model family.

Assembly counts tokens with a tiktoken encoding (``cl100k_base`` or ``o200k_base``); a
provider counts with its own tokenizer, and its own framing of the system prompt, tools and
messages.  Claude's tokenizer counts 20-25% more than ``cl100k_base`` on real coding sessions
(issue 41: an assembly that reported 161k used sent a 198k-token prefix, over a 200k window
once the 32k output reserve was added).  So the input budget is divided by a *count factor*:
what the provider counts per token we count.

- **Calibrated**: each response's usage (the whole prompt the provider counted, cached or not)
  against our count of the same request (``dashboard.used``) gives one ratio.  The factor is
  the largest of the family's last :data:`KEPT` ratios times :data:`SPREAD` (the ratio varies
  a little with the mix of code, prose and JSON): a budget that fits the worst recent
  request fits the next.  A run records every round's usage; a host that runs its own loop
  reports the provider's count with its next ``context/assemble`` (``previousUsage``), which
  is compared with the session's previous assembly in this process.
- **Until calibrated**: :func:`default_factor`, a margin where our count is known to fall
  short (Claude: 1.25); 1.0 elsewhere (OpenAI's ``o200k_base`` counts no more than
  ``cl100k_base``; for other models nothing is known, and no margin is claimed).

The ratios live in the store, ``<store>/calibration.json`` (``{family: [ratio, ...]}``,
rewritten atomically when a ratio is recorded), so they survive a restart and serve every
session and process on the store; :class:`Calibration` keeps them in memory, under a lock.
The family is the model catalog's (``Claude Sonnet 4.5``), else the model id.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import TYPE_CHECKING, Any

from sidecar.context.limits import catalog_row, normalize_model_id
from sidecar.jsonbytes import dumps_bytes
from sidecar.store.jsonl import write_file_atomic

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["KEPT", "SPREAD", "Calibration", "CountFactor", "default_factor", "family_of"]

logger = logging.getLogger(__name__)

FILE = "calibration.json"
#: Ratios kept per family (the newest).
KEPT = 16
#: Head-room over the largest recent ratio.
SPREAD = 1.03
#: Bounds of a believable ratio: a report outside them (a host reporting another request's
#: usage, an image-heavy prompt) is not recorded.
_BOUNDS = (0.5, 3.0)
#: The margin until calibrated, by model-id prefix (lower-cased, namespace dropped).
_MARGINS = (("claude-", 1.25),)


def family_of(model: str) -> str:
    """The calibration key of a model: its catalog family, else its normalized id."""
    match = catalog_row(model)
    if match is not None and match.how == "table":
        return str(match.row.get("family") or match.row["prefix"])
    return normalize_model_id(model)


def default_factor(model: str) -> float:
    """The count factor before any usage was seen for the model's family."""
    key = normalize_model_id(model)
    return next((margin for prefix, margin in _MARGINS if key.startswith(prefix)), 1.0)


class CountFactor(dict[str, Any]):
    """``dashboard.calibration`` (wire-shaped): ``{family, factor, samples}``."""

    @property
    def factor(self) -> float:
        return float(self["factor"])


class Calibration:
    """The count factors of one store's model families (see the module docstring)."""

    def __init__(self, root: Path | None) -> None:
        """``root``: the store's root (``None``: memory only)."""
        self._path = None if root is None else root / FILE
        self._lock = threading.Lock()
        self._ratios: dict[str, list[float]] | None = None

    def _loaded(self) -> dict[str, list[float]]:
        if self._ratios is None:
            self._ratios = {}
            if self._path is not None:
                try:
                    data = json.loads(self._path.read_bytes())
                except FileNotFoundError:
                    data = {}
                except ValueError:
                    logger.warning("unreadable %s: calibration starts again", self._path)
                    data = {}
                if isinstance(data, dict):
                    for family, ratios in data.items():
                        if isinstance(ratios, list):
                            kept = [float(r) for r in ratios if isinstance(r, int | float)]
                            self._ratios[str(family)] = kept[-KEPT:]
        return self._ratios

    def factor(self, model: str) -> CountFactor:
        """The count factor for ``model`` now."""
        family = family_of(model)
        with self._lock:
            ratios = list(self._loaded().get(family, ()))
        if not ratios:
            return CountFactor(family=family, factor=default_factor(model), samples=0)
        return CountFactor(
            family=family, factor=round(max(ratios) * SPREAD, 4), samples=len(ratios)
        )

    def record(self, model: str, provider_tokens: int, our_tokens: int) -> float | None:
        """Record one request's ratio (the provider's count of its prompt over ours); the
        ratio, or ``None`` when it was not believable and left out."""
        if our_tokens <= 0 or provider_tokens <= 0:
            return None
        ratio = provider_tokens / our_tokens
        if not _BOUNDS[0] <= ratio <= _BOUNDS[1]:
            logger.info(  # a host's report, not the sidecar's fault: no warning on stderr
                "usage of %s not recorded: %d provider tokens for %d counted",
                model,
                provider_tokens,
                our_tokens,
            )
            return None
        family = family_of(model)
        with self._lock:
            ratios = self._loaded().setdefault(family, [])
            ratios.append(round(ratio, 4))
            del ratios[:-KEPT]
            if self._path is not None:
                try:
                    write_file_atomic(self._path, dumps_bytes(self._loaded()))
                except OSError as exc:
                    logger.warning("calibration not kept in %s: %s", self._path, exc)
        return ratio
