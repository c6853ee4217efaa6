"""The provider a run calls: from its profile's model binding (else the frozen input's), or
the scripted one for a script.

The API key is resolved from the binding's ``connectionRef`` here, so a run that cannot
authenticate is refused before it starts (an invalid request naming the reference, never
the value).
Each HTTP provider's module is imported only when a run uses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from sidecar.errors import InvalidRequestError
from sidecar.runs.providers.base import ProviderError, resolve_secret
from sidecar.runs.scripted import ScriptedProvider

if TYPE_CHECKING:
    from protocol.inputs import FrozenInput
    from protocol.snapshots import ProfileInput
    from sidecar.runs.providers.base import Provider

__all__ = ["choose_provider"]


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
    if binding.provider == "openai":
        from sidecar.runs.providers.openai import OpenAIProvider

        return OpenAIProvider(base_url=base_url or "https://api.openai.com/v1", api_key=api_key)
    if binding.provider == "anthropic":
        from sidecar.runs.providers.anthropic import AnthropicProvider

        return AnthropicProvider(base_url=base_url or "https://api.anthropic.com", api_key=api_key)
    if binding.provider == "gemini":
        from sidecar.runs.providers.gemini import DEFAULT_BASE_URL, GeminiProvider

        try:
            return GeminiProvider(
                binding.model_id, base_url=base_url or DEFAULT_BASE_URL, api_key=api_key
            )
        except ValueError as exc:  # no model name: it is part of the URL
            raise InvalidRequestError(
                ErrorCode.PARAMS_INVALID, str(exc), details={"modelId": binding.model_id}
            ) from None
    raise InvalidRequestError(
        ErrorCode.PARAMS_INVALID,
        f"provider {binding.provider!r} cannot run yet",
        details={"provider": binding.provider},
    )
