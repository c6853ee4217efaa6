"""Lowering: an :class:`~protocol.context.AssembledPrompt` -> one provider's request body.

:func:`lower` is the only entry point; each target has its own module:

- ``anthropic-messages`` -> :mod:`.anthropic_messages` (Messages API, with cache markers);
- ``openai-chat`` -> :mod:`.openai_chat` (Chat Completions);
- ``openai-responses`` -> :mod:`.openai_responses` (Responses API);
- ``gemini`` -> :mod:`.gemini` (``generateContent`` REST body; schemas via :mod:`.gemini_schema`);
- ``system-as-user`` -> :mod:`.system_as_user` (text only, the system prompt as a user turn).

What they share (turn structure, which tool calls and results stay structured, text
renderings of the rest) lives in :mod:`._common`.  Bodies are plain JSON-ready dicts built in
a fixed key order: the same prompt lowers to the same bytes, which prompt caching needs.  No
provider SDK is imported here; the tests validate the bodies against the SDKs' types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from sidecar.context.lower._common import ReadBlob
from sidecar.context.lower.anthropic_messages import lower_anthropic_messages
from sidecar.context.lower.gemini import lower_gemini
from sidecar.context.lower.openai_chat import lower_openai_chat
from sidecar.context.lower.openai_responses import lower_openai_responses
from sidecar.context.lower.system_as_user import lower_system_as_user

if TYPE_CHECKING:
    from protocol.context import LowerTarget
    from sidecar.context.lower.prompt import Lowerable

__all__ = ["LOWERINGS", "ReadBlob", "lower"]


class _Lowering(Protocol):
    def __call__(
        self,
        prompt: Lowerable,
        *,
        read_blob: ReadBlob,
        max_output: int,
        cache_key: str | None = None,
    ) -> dict[str, Any]: ...


#: The lowering function of every target.
LOWERINGS: dict[str, _Lowering] = {
    "anthropic-messages": lower_anthropic_messages,
    "openai-chat": lower_openai_chat,
    "openai-responses": lower_openai_responses,
    "gemini": lower_gemini,
    "system-as-user": lower_system_as_user,
}


def lower(
    prompt: Lowerable,
    target: LowerTarget,
    *,
    read_blob: ReadBlob,
    max_output: int | None = None,
    cache_key: str | None = None,
) -> dict[str, Any]:
    """The request body of ``prompt`` for ``target``.

    ``read_blob`` returns an image's bytes by blob id (its errors propagate); ``max_output``
    defaults to ``prompt.model_limits.max_output`` and the model is
    ``prompt.model_limits.model``.  ``cache_key`` (the session id) routes a session's requests
    to the same provider cache where the target has a field for it (OpenAI's
    ``prompt_cache_key``); the others ignore it (Anthropic's markers are in the prompt; Gemini
    caches by prefix alone).  Raises :class:`ValueError` for an unknown target or a cache
    breakpoint naming a message that is not in the prompt.
    """
    lowering = LOWERINGS.get(target)
    if lowering is None:
        raise ValueError(f"unknown lowering target {target!r}")
    limit = prompt.model_limits.max_output if max_output is None else max_output
    return lowering(prompt, read_blob=read_blob, max_output=limit, cache_key=cache_key)
