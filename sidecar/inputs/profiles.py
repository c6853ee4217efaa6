"""Resolve what one assembly runs with: the effective prompt profile, preset components,
generation parameters and the agent system prompt.

Precedence (TauriTavern): the profile's model binding overrides the connection fields of the
preset and of the frozen input; a profile with ``preset.mode = ref`` assembles with the
stored preset's components, ``current`` with the components frozen in the input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol.context import PromptProfile
from protocol.inputs import FrozenInput, PromptComponent
from protocol.snapshots import Preset, ProfileInput

__all__ = ["Effective", "resolve"]

#: A binding's provider -> the assembly's (whose cache rules and tokenizer apply): the
#: Responses API caches and counts as Chat Completions does.
_PROVIDERS = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openai-responses": "openai",
    "gemini": "gemini",
}


@dataclass(frozen=True, slots=True)
class Effective:
    profile: PromptProfile
    components: list[PromptComponent]
    parameters: dict[str, Any]
    agent_prompt: str


def resolve(profile: ProfileInput | None, preset: Preset | None, frozen: FrozenInput) -> Effective:
    explicit = profile is not None
    profile = profile or ProfileInput()
    binding = (
        profile.model_binding if explicit else (frozen.model_connection or profile.model_binding)
    )
    update: dict[str, Any] = {
        "provider": _PROVIDERS.get(binding.provider, "other"),
        "model": binding.model_id,
    }
    assembly = profile.assembly
    if preset is not None:
        if assembly.window is None and preset.max_context is not None:
            update["window"] = preset.max_context
        if assembly.max_output is None and preset.max_output is not None:
            update["max_output"] = preset.max_output
    effective = assembly.model_copy(update=update)
    use_preset = profile.preset.mode == "ref" and preset is not None
    components = list(preset.components) if use_preset and preset else list(frozen.components)
    parameters: dict[str, Any] = {}
    if preset is not None:
        parameters.update(preset.parameters)
    if frozen.model_connection is not None:
        parameters.update(frozen.model_connection.parameters)
    parameters.update(binding.parameters)
    return Effective(effective, components, parameters, profile.agent_system_prompt)
