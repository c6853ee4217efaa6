"""What a prompt's run starts with: its ``run/start`` params on the ACP face.

The tools are the face's: the editor tools (:mod:`sidecar.acp.tools`, narrowed by the
session's profile), the plan tool and the session's MCP servers' tools, with the ones that
need approval; the core's built-in tools stay off (the face runs its own, through the editor
where it can).  The model is the session's choice (:mod:`sidecar.acp.config`): a profile, a
profile id, or a scripted model whose rounds go on where the last run left them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol._base import dump_wire, parse_wire
from protocol.runs import RunStartParams
from sidecar.errors import SidecarError
from sidecar.inputs.loading import load_profile

if TYPE_CHECKING:
    from protocol.tools import BuiltinTools
    from sidecar.acp.config import ModelChoice, SessionConfig
    from sidecar.acp.mcp_servers import McpServers
    from sidecar.acp.plan import PlanTool
    from sidecar.acp.tools import EditorTools
    from sidecar.store import Store

__all__ = ["RunSettings"]


class RunSettings:
    def __init__(
        self,
        store: Store,
        config: SessionConfig,
        tools: EditorTools,
        plan: PlanTool,
        mcp: McpServers,
    ) -> None:
        self.store = store
        self.config = config
        self.tools = tools
        self.plan = plan
        self.mcp = mcp

    def tool_definitions(self, session_id: str) -> list[dict[str, Any]]:
        """The tools a prompt of the session offers the model, as ``run/start`` gets them."""
        return list(self._tool_settings(session_id)["tools"])

    def params(self, session_id: str, parts: list[Any], played: int) -> RunStartParams:
        """``run/start`` for a prompt of ``parts`` (``played``: the model calls made so far,
        where a scripted model goes on)."""
        model = self.config.model_of(session_id)
        wire: dict[str, Any] = {
            "sessionId": session_id,
            "userTurn": parts,
            "subscribe": True,
            # the face runs its own tools (through the editor where it can): the core's built-in
            # ones stay off even when the profile turns them on for serve
            "builtinTools": {"tools": []},
            **self._tool_settings(session_id),
        }
        if model.profile is not None:
            wire["profile"] = dump_wire(model.profile)
        elif model.profile_id is not None:
            wire["profileId"] = model.profile_id
        if model.script is not None:
            rounds = list(model.script.get("rounds", []))
            wire["script"] = {**model.script, "rounds": rounds[played:]}
        return parse_wire(RunStartParams, wire)

    def _tool_settings(self, session_id: str) -> dict[str, Any]:
        model = self.config.model_of(session_id)
        settings = self.tools.run_settings(self._narrowed(model))
        settings["tools"] = [
            *settings["tools"],
            self.plan.definition,
            *self.mcp.definitions(session_id),
        ]
        settings["approvalRequired"] = [
            *settings["approvalRequired"],
            *self.mcp.approval_required(session_id),
        ]
        return settings

    def command_env(self, session_id: str) -> tuple[str, ...]:
        """The variables the session's profile lets through to a command the sidecar runs
        (its ``builtinTools.env``, as on ``serve``)."""
        chosen = self._builtin_tools(self.config.model_of(session_id))
        return tuple(chosen.env or ()) if chosen is not None else ()

    def _narrowed(self, model: ModelChoice) -> frozenset[str] | None:
        """The built-in tools the session's profile allows (its ``builtinTools.tools``), or
        ``None`` for all of them: a profile narrows the tool set on both faces."""
        chosen = self._builtin_tools(model)
        return frozenset(chosen.tools) if chosen is not None and chosen.tools is not None else None

    def _builtin_tools(self, model: ModelChoice) -> BuiltinTools | None:
        """The profile's ``builtinTools`` (``None``: none, or a stored profile that cannot be
        loaded — the run says why)."""
        profile = model.profile
        if profile is None and model.profile_id is not None:
            try:
                profile, _ = load_profile(self.store, model.profile_id, None)
            except SidecarError:
                return None
        return profile.builtin_tools if profile is not None else None
