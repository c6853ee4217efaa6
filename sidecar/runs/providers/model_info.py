"""Which models endpoints report a model's limits, and the fields read from their answers.

- Anthropic, ``GET {base}/v1/models/{model_id}`` (the Models API): ``max_input_tokens`` (the
  window) and ``max_tokens`` (the output limit).
- Gemini, ``GET {base}/v1beta/models/{model}`` (``models.get``): ``inputTokenLimit`` and
  ``outputTokenLimit``.
- OpenAI-compatible servers, ``GET {base}/models`` (a list, ``data``): the entry whose ``id``
  is the model; the window from the first of ``max_model_len`` (vLLM), ``context_length``
  (OpenRouter, and servers that copy it), ``context_window`` (Groq and others),
  ``max_context_length`` (LM Studio), the output limit from
  ``top_provider.max_completion_tokens`` (OpenRouter) or ``max_completion_tokens``.
- OpenAI's own API (``api.openai.com``): its model object is ``id``, ``object``, ``created``,
  ``owned_by`` and nothing else, so it is not asked.

Only positive integers count; anything else is "not reported".  The readers are pure: the
request is made by ``HttpStreamProvider.model_limits`` (:mod:`.transport`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["anthropic_limits", "gemini_limits", "openai_compatible_limits"]

Figures = tuple[int | None, int | None]
"""(window, output limit), either possibly not reported."""

#: Window fields of an OpenAI-compatible model entry, in the order they are tried.
WINDOW_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")


def _positive(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = int(value)
    return number if number > 0 and number == value else None


def anthropic_limits(data: Any) -> Figures:
    if not isinstance(data, dict):
        return None, None
    return _positive(data.get("max_input_tokens")), _positive(data.get("max_tokens"))


def gemini_limits(data: Any) -> Figures:
    if not isinstance(data, dict):
        return None, None
    return _positive(data.get("inputTokenLimit")), _positive(data.get("outputTokenLimit"))


def openai_compatible_limits(data: Any, model: str) -> Figures:
    entries = data.get("data") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        return None, None
    entry = next((e for e in entries if isinstance(e, dict) and e.get("id") == model), None)
    if entry is None:
        return None, None
    window = next(
        (w for w in (_positive(entry.get(f)) for f in WINDOW_FIELDS) if w is not None), None
    )
    top = entry.get("top_provider")
    output = _positive(top.get("max_completion_tokens")) if isinstance(top, dict) else None
    return window, output or _positive(entry.get("max_completion_tokens"))
