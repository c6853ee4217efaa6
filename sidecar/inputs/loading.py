"""Reading stored inputs, profiles and presets back (one place for the RPC layer and runs)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.inputs import FrozenInput
from protocol.snapshots import Preset, Profile, ProfileInput
from sidecar.errors import NotFoundError

if TYPE_CHECKING:
    from sidecar.store import Store

__all__ = ["load_frozen_input", "load_profile"]


def load_frozen_input(store: Store, input_id: str) -> FrozenInput:
    """A frozen input by id; ``input.not_found`` when absent or not an input."""
    try:
        data = store.blobs.get(input_id)
        return FrozenInput.model_validate(json.loads(data), by_alias=True, by_name=False)
    except (NotFoundError, ValueError):
        raise NotFoundError(
            ErrorCode.INPUT_NOT_FOUND, f"no frozen input {input_id}", details={"inputId": input_id}
        ) from None


def load_profile(
    store: Store, profile_id: str | None, inline: ProfileInput | None
) -> tuple[ProfileInput | None, Preset | None]:
    """The profile to assemble with (inline wins over a stored one) and, for
    ``preset.mode = ref``, its stored preset."""
    profile = inline
    if profile is None and profile_id is not None:
        profile = Profile.model_validate(store.profiles.get(profile_id), by_alias=True)
    preset = None
    if profile is not None and profile.preset.mode == "ref" and profile.preset.preset_id:
        preset = Preset.model_validate(store.presets.get(profile.preset.preset_id), by_alias=True)
    return profile, preset
