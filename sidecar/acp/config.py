"""A session's settings as ACP shows them: the model and the approval mode.

Both are **session config options** (``configOptions`` of ``session/new`` and
``session/load``, changed with ``session/set_config_option``):

- ``model`` (category ``model``): ``default`` — the binding the process was started with
  (``--profile``, ``--script``, or the store's default profile) — or any profile stored in
  the store (``profile/update`` of ``serve``, or ``_context-sidecar/profile/update``), by id.
  A prompt runs, and ``/context`` / ``/compact`` assemble, with the session's choice.
- ``approval`` (category ``mode``): :data:`~sidecar.tools.approvals.APPROVAL_MODES`.

The approval mode is also offered as ACP **session modes** (``modes``, ``session/set_mode``)
for clients that know modes but not config options; the two stay in step (changing one
sends the other's update).  Both settings are kept in the session's ``meta`` (key ``acp``),
so a session loaded in a later process keeps them; so are the tools its user allowed always
(``alwaysAllowed``, :mod:`sidecar.acp.approvals`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from acp.schema import (
    ConfigOptionUpdate,
    CurrentModeUpdate,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

from protocol.errors import ErrorCode
from protocol.snapshots import ProfileInput
from sidecar.errors import InvalidRequestError, NotFoundError
from sidecar.tools.approvals import APPROVAL_MODES, DEFAULT_MODE, MODE_META, mode_named

if TYPE_CHECKING:
    from sidecar.store import Store

__all__ = ["APPROVAL", "DEFAULT_MODEL", "MODEL", "ModelChoice", "SessionConfig"]

MODEL, APPROVAL = "model", "approval"
DEFAULT_MODEL = "default"
_META = MODE_META[0]
ALWAYS_META = "alwaysAllowed"
"""``meta.acp.alwaysAllowed``: the tools a session's user allowed always, oldest first."""
MAX_ALWAYS_ALLOWED = 200


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model every prompt of this process runs with (``--profile``, ``--script``)."""

    profile_id: str | None = None
    profile: ProfileInput | None = None
    script: dict[str, Any] | None = None
    """For the ``scripted`` provider: played across the process's prompts in order."""


@dataclass(frozen=True, slots=True)
class _Model:
    value: str
    name: str
    description: str


class SessionConfig:
    """The settings of the sessions of one process over ``store``; ``default`` is the model
    binding the process was started with."""

    def __init__(self, store: Store, default: ModelChoice) -> None:
        self.store = store
        self.default = default

    # --- reading ---------------------------------------------------------------------------

    def _meta(self, session_id: str) -> dict[str, Any]:
        meta = (self.store.sessions.get(session_id).meta or {}).get(_META)
        return meta if isinstance(meta, dict) else {}

    def mode_id(self, session_id: str) -> str:
        mode = mode_named(self._meta(session_id).get(MODE_META[1]))
        return mode.id if mode is not None else DEFAULT_MODE

    def always_allowed(self, session_id: str) -> frozenset[str]:
        """The tools the user answered "Always allow" for in this session (kept in its
        ``meta``: a session loaded by a later process still has them)."""
        names = self._meta(session_id).get(ALWAYS_META)
        return (
            frozenset(n for n in names if isinstance(n, str))
            if isinstance(names, list)
            else frozenset()
        )

    async def allow_always(self, session_id: str, tool: str) -> None:
        """Remember "Always allow" for ``tool`` in the session (at most
        :data:`MAX_ALWAYS_ALLOWED` tools, the newest kept)."""

        def add(acp: dict[str, Any]) -> dict[str, Any]:
            old = acp.get(ALWAYS_META)
            names = (
                [n for n in old if isinstance(n, str) and n != tool]
                if isinstance(old, list)
                else []
            )
            return {**acp, ALWAYS_META: [*names, tool][-MAX_ALWAYS_ALLOWED:]}

        await self.store.sessions.update_meta(session_id, _META, add)

    def model_id(self, session_id: str) -> str:
        value = self._meta(session_id).get("model")
        return value if isinstance(value, str) and value else DEFAULT_MODEL

    def model_of(self, session_id: str) -> ModelChoice:
        """The binding a prompt of the session runs with (a stored profile that is gone
        falls back to the default: ``session/load`` must not fail over it)."""
        value = self.model_id(session_id)
        if value == DEFAULT_MODEL or not self._stored(value):
            return self.default
        return replace(self.default, profile_id=value, profile=None)

    def _stored(self, profile_id: str) -> bool:
        try:
            self.store.profiles.get(profile_id)
        except NotFoundError:
            return False
        return True

    def _models(self) -> list[_Model]:
        models = [_Model(DEFAULT_MODEL, self._default_name(), "As the sidecar was started")]
        for doc in self.store.profiles.list():
            binding = doc.get("modelBinding") or {}
            what = f"{binding.get('provider', 'anthropic')} · {binding.get('modelId', '?')}"
            models.append(_Model(str(doc["profileId"]), str(doc.get("name") or what), what))
        return models

    def _default_name(self) -> str:
        choice = self.default
        if choice.profile is not None:
            binding = choice.profile.model_binding
            return choice.profile.name or f"{binding.provider} · {binding.model_id}"
        if choice.profile_id is not None:
            return f"profile {choice.profile_id}"
        if choice.script is not None:
            return "scripted (test model)"
        return "the store's default profile"

    def options(
        self, session_id: str
    ) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
        """The session's ``configOptions``, with their current values."""
        models = [(m.value, m.name, m.description) for m in self._models()]
        modes = [(m.id, m.name, m.description) for m in APPROVAL_MODES]
        return [
            _select(
                MODEL,
                "Model",
                "model",
                "The model binding (a profile) this session's prompts run with",
                self.model_id(session_id),
                models,
            ),
            _select(
                APPROVAL,
                "Approval",
                "mode",
                "When the agent asks before it writes, runs a command or calls MCP",
                self.mode_id(session_id),
                modes,
            ),
        ]

    def modes(self, session_id: str) -> SessionModeState:
        return SessionModeState(
            current_mode_id=self.mode_id(session_id),
            available_modes=[
                SessionMode(id=m.id, name=m.name, description=m.description) for m in APPROVAL_MODES
            ],
        )

    # --- changing --------------------------------------------------------------------------

    async def set(self, session_id: str, config_id: str, value: object) -> None:
        """``session/set_config_option``: an unknown option or value is ``params.invalid``
        naming what is allowed."""
        if config_id == APPROVAL:
            await self.set_mode(session_id, value)
            return
        if config_id != MODEL:
            raise _invalid(f"no config option {config_id!r}", "configId", [MODEL, APPROVAL])
        allowed = [m.value for m in self._models()]
        if value not in allowed:
            raise _invalid(f"no model {value!r}", "value", allowed)
        await self._write(session_id, "model", value)

    async def set_mode(self, session_id: str, mode_id: object) -> None:
        mode = mode_named(mode_id)
        if mode is None:
            raise _invalid(f"no mode {mode_id!r}", "modeId", [m.id for m in APPROVAL_MODES])
        await self._write(session_id, MODE_META[1], mode.id)

    async def _write(self, session_id: str, key: str, value: str) -> None:
        await self.store.sessions.merge_meta(session_id, _META, {key: value})

    def updates(self, session_id: str) -> tuple[CurrentModeUpdate, ConfigOptionUpdate]:
        """What tells a client of a change it did not ask for in its own terms."""
        return (
            CurrentModeUpdate(
                session_update="current_mode_update", current_mode_id=self.mode_id(session_id)
            ),
            ConfigOptionUpdate(
                session_update="config_option_update", config_options=self.options(session_id)
            ),
        )


def _select(
    option_id: str,
    name: str,
    category: Literal["mode", "model"],
    description: str,
    current: str,
    values: list[tuple[str, str, str]],
) -> SessionConfigOptionSelect:
    return SessionConfigOptionSelect(
        type="select",
        id=option_id,
        name=name,
        category=category,
        description=description,
        current_value=current,
        options=[
            SessionConfigSelectOption(value=value, name=label, description=about)
            for value, label, about in values
        ],
    )


def _invalid(message: str, field: str, allowed: list[str]) -> InvalidRequestError:
    return InvalidRequestError(
        ErrorCode.PARAMS_INVALID,
        f"{message} (one of: {', '.join(allowed)})",
        details={"field": field, "allowed": allowed},
    )
