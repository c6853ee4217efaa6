"""A run asks its provider's models endpoint for the model's limits, once per process.

Before a run's first assembly, :func:`learn_limits` asks the provider
(``HttpStreamProvider.model_limits``: Anthropic's and Gemini's model resources, an
OpenAI-compatible server's model list; never OpenAI's own, which reports no limits) and puts
what it reports in the process-wide registry the pipeline reads
(:mod:`sidecar.context.live_limits`), so the first request already uses it.

- Once per process per (provider, base URL, model): an answer without figures, an error or a
  timeout (3 s) is remembered as "nothing" too and not asked again; concurrent runs of the same
  key wait for the one request in flight.  A run cancelled while it asks leaves the key to ask
  again.
- Never fails a run: anything that goes wrong is logged and the run assembles with the catalog.
- Not asked when the profile sets ``window`` (it wins anyway), for the scripted provider, or
  when ``$CONTEXT_SIDECAR_NO_LIVE_LIMITS`` is set to anything but ``0`` (offline use, tests).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

import anyio

from sidecar.context.live_limits import remember
from sidecar.defaults import NO_LIVE_LIMITS_ENV

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from protocol.context import PromptProfile
    from sidecar.context.live_limits import LiveLimits
    from sidecar.runs.providers.base import Provider

__all__ = ["forget_asked", "learn_limits", "live_limits_off"]

logger = logging.getLogger(__name__)

_Key = tuple[str, str, str]
_asked: set[_Key] = set()
_in_flight: dict[_Key, anyio.Event] = {}


def live_limits_off() -> bool:
    """Whether ``$CONTEXT_SIDECAR_NO_LIVE_LIMITS`` turns the lookups off."""
    return os.environ.get(NO_LIVE_LIMITS_ENV, "").strip() not in ("", "0")


async def learn_limits(provider: Provider, profile: PromptProfile) -> None:
    """Ask ``provider``'s models endpoint about ``profile.model`` unless this process has
    (see the module docstring)."""
    fetch: Callable[[str], Awaitable[LiveLimits | None]] | None = getattr(
        provider, "model_limits", None
    )
    if fetch is None or profile.window is not None or live_limits_off():
        return
    model = profile.model
    key = (provider.name, str(getattr(provider, "base_url", "")), model)
    if key in _asked:
        return
    pending = _in_flight.get(key)
    if pending is not None:
        await pending.wait()
        return
    done = _in_flight[key] = anyio.Event()
    try:
        try:
            limits = await fetch(model)
        except Exception:  # a bug here must not cost the run
            logger.exception("%s: asking the models endpoint about %s failed", provider.name, model)
            limits = None
        _asked.add(key)
        if limits is not None:
            remember(model, limits)
            logger.info(
                "%s: %s has a window of %d tokens (output limit %s), from %s",
                provider.name,
                model,
                limits.window,
                limits.output_limit,
                limits.endpoint,
            )
    finally:
        del _in_flight[key]
        done.set()


def forget_asked() -> None:
    """Forget which keys were asked (tests)."""
    _asked.clear()
