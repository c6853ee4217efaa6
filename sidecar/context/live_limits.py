"""What the process has learnt of models' limits from providers' models endpoints.

A process-wide registry the runs layer writes (``sidecar.runs.live_lookup`` asks a provider's
models endpoint once per process per provider, base URL and model) and the pipeline reads
without any I/O (``sidecar.context.limits.resolve_limits``: profile, then these figures, then
the catalog).  Values are immutable (:class:`LiveLimits`) and the table is guarded by one
lock: a run writes from the event loop while assemblies read from the CPU lane.

Keyed by the model id exactly as the profile names it.  When two endpoints report the same id
(two servers of one model, each with its own ``--max-model-len``), the smaller window is kept:
an assembly that cannot tell which server it is for must fit either.  Nothing is persisted: a
new process learns again (and, until a run has asked, uses the catalog).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["LiveLimits", "forget_all", "known", "remember"]


@dataclass(frozen=True, slots=True)
class LiveLimits:
    """A model's limits as its provider's models endpoint reported them."""

    window: int | None
    """Input context window in tokens (Anthropic ``max_input_tokens``, Gemini
    ``inputTokenLimit``, vLLM ``max_model_len``, OpenRouter ``context_length``)."""
    output_limit: int | None
    """Maximum output tokens (Anthropic ``max_tokens``, Gemini ``outputTokenLimit``,
    OpenRouter ``top_provider.max_completion_tokens``), when reported."""
    endpoint: str
    """The request that reported them, e.g. ``GET http://host/v1beta/models/gemini-x``."""


_lock = threading.Lock()
_table: dict[str, LiveLimits] = {}


def remember(model: str, limits: LiveLimits) -> None:
    """Record what an endpoint reported for ``model`` (a report without a window is not kept;
    of two windows for one id the smaller stays)."""
    if limits.window is None or limits.window <= 0:
        return
    with _lock:
        old = _table.get(model)
        if old is None or old.window is None or limits.window <= old.window:
            _table[model] = limits


def known(model: str) -> LiveLimits | None:
    """What the process has learnt of ``model``, or ``None``."""
    with _lock:
        return _table.get(model)


def forget_all() -> None:
    """Forget everything learnt (tests)."""
    with _lock:
        _table.clear()
