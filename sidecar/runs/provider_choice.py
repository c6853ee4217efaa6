"""The provider a run calls: from its profile's model binding (else the frozen input's), or
the scripted one for a script.

The API key is resolved from the binding's ``connectionRef`` here, so a run that cannot
authenticate is refused before it starts (an invalid request naming the reference, never
the value).
Each HTTP provider's module is imported only when a run uses it.

``openai`` means Chat Completions, except for the models OpenAI serves only through the
Responses API (:data:`RESPONSES_ONLY`: the ``codex`` models — ``gpt-5-codex``,
``gpt-5.1-codex-max``, ``codex-mini-latest`` —, the ``-pro`` reasoning models — ``o1-pro``,
``o3-pro``, ``gpt-5-pro`` —, the ``deep-research`` models and ``computer-use-preview``, dated
snapshots included): on OpenAI's own API (no ``baseUrl``, or ``api.openai.com``) those go to
the Responses provider, since Chat Completions would answer 404.  Another server decides its
own routes: a binding names ``openai-responses`` to use its ``/responses``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from protocol.errors import ErrorCode
from sidecar.context.sent import PROVIDER_TARGET
from sidecar.errors import InvalidRequestError
from sidecar.runs.providers.base import ProviderError, resolve_secret
from sidecar.runs.scripted import ScriptedProvider

if TYPE_CHECKING:
    from protocol.inputs import FrozenInput
    from protocol.snapshots import ProfileInput
    from sidecar.runs.providers.base import Provider

__all__ = ["RESPONSES_ONLY", "body_target", "choose_provider", "served_only_by_responses"]

#: Model ids OpenAI serves only through the Responses API (see the module docstring).
RESPONSES_ONLY = re.compile(
    r"^(?:.*-)?codex(?:-.*)?$"  # gpt-5-codex, gpt-5.1-codex-mini, codex-mini-latest
    r"|^(?:o\d+|gpt-\d+(?:\.\d+)?)-pro(?:-.*)?$"  # o1-pro, o3-pro, gpt-5-pro, gpt-5.2-pro-...
    r"|^.*-deep-research(?:-.*)?$"  # o3-deep-research, o4-mini-deep-research
    r"|^computer-use-preview(?:-.*)?$"
)
_OPENAI_HOST = "api.openai.com"


def served_only_by_responses(model_id: str, base_url: str | None) -> bool:
    """Whether an ``openai`` binding of ``model_id`` must use the Responses API: the model is
    one of :data:`RESPONSES_ONLY` and the server is OpenAI's own."""
    if base_url and urlsplit(base_url).hostname != _OPENAI_HOST:
        return False
    return RESPONSES_ONLY.match(model_id.strip().lower()) is not None


def body_target(provider: Provider, provider_kind: str) -> str | None:
    """The lowering whose body ``provider`` sends: its own ``target`` (the Responses
    provider's under an ``openai`` profile), else the profile provider's; ``None`` for the
    scripted provider, which reads no body."""
    if provider.name == "scripted":
        return None
    own = getattr(provider, "target", None)
    return own if isinstance(own, str) else PROVIDER_TARGET.get(provider_kind)


def choose_provider(
    frozen: FrozenInput,
    profile: ProfileInput | None,
    script: dict[str, Any] | None,
) -> Provider:
    """The provider a run of ``frozen`` with ``profile`` (or ``script``) calls."""
    binding = profile.model_binding if profile else frozen.model_connection
    if script is not None or binding is None or binding.provider == "scripted":
        return ScriptedProvider(script)
    try:
        api_key = resolve_secret(binding.connection_ref)
    except ProviderError as exc:  # names the reference, never the value
        raise InvalidRequestError(
            exc.code, str(exc), details={"connectionRef": binding.connection_ref}
        ) from None
    base_url = binding.base_url
    if binding.provider == "openai-responses" or (
        binding.provider == "openai" and served_only_by_responses(binding.model_id, base_url)
    ):
        from sidecar.runs.providers.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(base_url=base_url, api_key=api_key)
    if binding.provider == "openai":
        from sidecar.runs.providers.openai import OpenAIProvider

        return OpenAIProvider(base_url=base_url, api_key=api_key)
    if binding.provider == "anthropic":
        from sidecar.runs.providers.anthropic import AnthropicProvider

        return AnthropicProvider(base_url=base_url, api_key=api_key)
    if binding.provider == "gemini":
        from sidecar.runs.providers.gemini import GeminiProvider

        try:
            return GeminiProvider(binding.model_id, base_url=base_url, api_key=api_key)
        except ValueError as exc:  # no model name: it is part of the URL
            raise InvalidRequestError(
                ErrorCode.PARAMS_INVALID, str(exc), details={"modelId": binding.model_id}
            ) from None
    raise InvalidRequestError(
        ErrorCode.PARAMS_INVALID,
        f"provider {binding.provider!r} cannot run yet",
        details={"provider": binding.provider},
    )
