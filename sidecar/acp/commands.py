"""Slash commands of the ACP face: advertised with ``available_commands_update`` after
``session/new`` and ``session/load``; a prompt whose first text starts with one of them is
answered here (one ``agent_message_chunk`` of markdown, ``end_turn``), not by the model.

Each command is a composition of ``serve``'s own methods (:class:`ServeMethods`), so it
does exactly what an editor plugin on ``serve`` would:

- ``/context``: ``context/assemble`` of the session now (its profile, a placeholder turn)
  rendered as the dashboard (:func:`sidecar.acp.dashboard.context_markdown`).  An
  observation: the session's "previous request" (what the next turn's cache prediction is
  planned against) is left as it was.
- ``/compact``: the model writes a checkpoint summary of the session as it assembles now
  (:func:`sidecar.runs.compaction.checkpoint_summary`, the call a run's compaction makes, through
  the provider a run would use: the profile's, or the scripted one), and ``session/compact``
  stores it through the head, keeping the assembly's suggested recent part verbatim.
- ``/pin PATH``: ``session/pin`` of a file (relative to the session's primary root, or
  absolute inside it): from the next turn on it is in every prompt.
- ``/snapshot``: ``input/freeze`` + ``snapshot/assemble`` (stored, in the session's snapshot
  index): its id and a paragraph on what changed against the session's previous snapshot.
- ``/rewind [N [code|conversation|both] [force]]``: the session's checkpoints of its workspace,
  what restoring one would change, and the restore (:mod:`sidecar.acp.rewind`).

A command and its answer are not history: the model never sees them and ``session/load``
does not replay them.  What they change (a compaction, a pin) is history as usual.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    TextContentBlock,
    UnstructuredCommandInput,
)

from protocol._base import dump_wire
from protocol.inputs import InputFreezeParams
from sidecar.acp.dashboard import context_markdown, snapshot_markdown
from sidecar.acp.errors import acp_code
from sidecar.acp.rewind import HINT, Rewind
from sidecar.inputs.loading import load_profile
from sidecar.inputs.profiles import resolve
from sidecar.runs.compaction import SUMMARY_PROMPT, checkpoint_summary
from sidecar.runs.failures import RunStopped
from sidecar.tools import ToolError, Workspace

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from protocol.inputs import FrozenInput
    from protocol.snapshots import ProfileInput
    from sidecar.acp.config import ModelChoice
    from sidecar.acp.extensions import ServeMethods
    from sidecar.acp.mapping import PromptBlock
    from sidecar.inputs.profiles import Effective
    from sidecar.runs.manager import RunManager

__all__ = ["COMMANDS", "CommandAnswer", "SlashCommands", "parse_command"]

logger = logging.getLogger(__name__)

COMMANDS: tuple[AvailableCommand, ...] = (
    AvailableCommand(
        name="context",
        description="Show the context dashboard: tokens per category, the cache prediction, "
        "the history window, masking, and what was masked or left out and why",
    ),
    AvailableCommand(
        name="compact",
        description="Summarize the conversation so far (one model call) and keep the summary "
        "in its place",
    ),
    AvailableCommand(
        name="pin",
        description="Keep a workspace file in every prompt from now on",
        input=AvailableCommandInput(root=UnstructuredCommandInput(hint="path of a file")),
    ),
    AvailableCommand(
        name="snapshot",
        description="Store a snapshot of the prompt as it assembles now, with its diff "
        "against the previous one",
    ),
    AvailableCommand(
        name="rewind",
        description="List the checkpoints of the workspace taken before each turn, edit and "
        "command; `/rewind N code|conversation|both` restores the files, forks the "
        "conversation before that turn, or both",
        input=AvailableCommandInput(root=UnstructuredCommandInput(hint=HINT)),
    ),
)
_NAMES = frozenset(c.name for c in COMMANDS)
#: The user turn of an assembly made for a command (it must have one; it is not stored).
_PLACEHOLDER = "(context-sidecar: {name})"


def parse_command(blocks: Sequence[PromptBlock]) -> tuple[str, str] | None:
    """``(name, argument)`` when the prompt is one of our commands, else ``None`` (an unknown
    ``/word`` goes to the model as text)."""
    if not blocks or not isinstance(blocks[0], TextContentBlock):
        return None
    text = blocks[0].text.strip()
    if not text.startswith("/"):
        return None
    name, _, argument = text[1:].partition(" ")
    return (name, argument.strip()) if name in _NAMES else None


def available_commands() -> AvailableCommandsUpdate:
    return AvailableCommandsUpdate(
        session_update="available_commands_update", available_commands=list(COMMANDS)
    )


@dataclass(frozen=True, slots=True)
class CommandAnswer:
    message: AgentMessageChunk
    model_calls: int = 0
    """Model calls the command made (a script's rounds it played)."""


def _answer(text: str, model_calls: int = 0) -> CommandAnswer:
    chunk = AgentMessageChunk(
        session_update="agent_message_chunk", content=TextContentBlock(type="text", text=text)
    )
    return CommandAnswer(chunk, model_calls)


class SlashCommands:
    def __init__(
        self, methods: ServeMethods, model_of: Callable[[str], ModelChoice], runs: RunManager
    ) -> None:
        self.methods = methods
        self.model_of = model_of
        """The model binding a session's prompts run with (:mod:`sidecar.acp.config`)."""
        self.runs = runs
        self.rewind = Rewind(methods)
        self.tools_of: Callable[[str], list[dict[str, Any]]] = lambda _session_id: []
        """The tool definitions a prompt of the session offers (set by the agent): ``/context``
        shows, and predicts the cache of, the request a prompt would send."""

    async def answer(self, session_id: str, name: str, argument: str, played: int) -> CommandAnswer:
        """Run command ``name``; ``played``: the script rounds played so far."""
        logger.info("command /%s in %s", name, session_id)
        if name == "context":
            return _answer(context_markdown(await self._assemble(session_id, name)))
        if name == "compact":
            return await self._compact(session_id, played)
        if name == "pin":
            return await self._pin(session_id, argument)
        if name == "rewind":
            return _answer(await self.rewind.answer(session_id, argument))
        return await self._snapshot(session_id)

    # --- the session's profile -----------------------------------------------------------

    def _profile_wire(self, session_id: str) -> dict[str, Any]:
        """``profile`` / ``profileId`` params as a run of the session gets them."""
        model = self.model_of(session_id)
        if model.profile is not None:
            return {"profile": dump_wire(model.profile)}
        if model.profile_id is not None:
            return {"profileId": model.profile_id}
        return {}

    async def _effective(
        self, session_id: str, turn: list[dict[str, Any]]
    ) -> tuple[FrozenInput, Effective, ProfileInput | None]:
        state = self.methods.state

        def work() -> tuple[FrozenInput, Effective, ProfileInput | None]:
            params = InputFreezeParams.model_validate({"sessionId": session_id, "userTurn": turn})
            frozen = state.context.capture(params, persist=False).frozen
            model = self.model_of(session_id)
            profile, preset = load_profile(state.store, model.profile_id, model.profile)
            return frozen, resolve(profile, preset, frozen), profile

        return await anyio.to_thread.run_sync(work)

    async def _assemble(
        self, session_id: str, name: str, text: str | None = None
    ) -> dict[str, Any]:
        """``context/assemble`` of the session now with its profile, leaving the previous
        request (the cache prediction's reference) as it was."""
        turn = [{"type": "text", "text": text or _PLACEHOLDER.format(name=name)}]
        _, effective, _ = await self._effective(session_id, turn)
        memory = self.methods.state.context.memory(session_id)
        previous, previous_sent = memory.previous_request, memory.previous_sent
        cache_memory = memory.cache_memory
        memory.cache_memory = cache_memory.copy()
        try:
            return await self.methods.call(
                "context/assemble",
                {
                    "sessionId": session_id,
                    "userTurn": turn,
                    "profile": dump_wire(effective.profile),
                    "tools": self.tools_of(session_id),
                },
            )
        finally:
            memory.previous_request, memory.previous_sent = previous, previous_sent
            memory.cache_memory = cache_memory

    # --- the commands --------------------------------------------------------------------

    async def _compact(self, session_id: str, played: int) -> CommandAnswer:
        assembled = await self._assemble(session_id, "compact", SUMMARY_PROMPT)
        through = int(assembled["throughSeq"])
        transcript = list(assembled["messages"][:-1])  # without the placeholder turn
        if not transcript:
            return _answer("Nothing to compact: the session has no history yet.\n")
        advice = assembled["compaction"]
        keep = advice.get("keepFromSeq")
        keep = keep if keep is not None and keep <= through else None
        turn = [{"type": "text", "text": SUMMARY_PROMPT}]
        frozen, effective, profile = await self._effective(session_id, turn)
        script = self.model_of(session_id).script
        if script is not None:
            script = {**script, "rounds": list(script.get("rounds", []))[played:]}
        provider = self.runs.provider_for(frozen, profile, script)
        try:
            summary = await checkpoint_summary(
                provider,
                {**assembled, "messages": transcript},
                effective.profile.provider,
                read_blob=self.methods.state.store.blobs.get,
                cache_key=session_id,
            )
        except RunStopped as exc:
            code = acp_code(exc.failure.get("code"))
            raise RequestError(code, exc.failure["message"], exc.failure) from None
        params: dict[str, Any] = {"sessionId": session_id, "summary": summary}
        params["throughSeq"] = through
        if keep is not None:
            params["keepFromSeq"] = keep
        stored = await self.methods.call("session/compact", params)
        after = await self._assemble(session_id, "compact")
        kept = f", seq {keep} onwards kept verbatim" if keep is not None else ""
        text = (
            f"**Compacted** history through seq {through}{kept} (entry seq "
            f"{stored['appended'][0]['seq']}): the transcript took "
            f"{int(advice['transcriptTokens']):,} tokens, now "
            f"{int(after['dashboard']['categories'].get('transcript', 0)):,} plus a "
            f"{int(after['dashboard']['categories'].get('summary', 0)):,}-token summary.\n\n"
            f"> {summary[:400]}{'…' if len(summary) > 400 else ''}\n"
        )
        return _answer(text, model_calls=1)

    async def _pin(self, session_id: str, argument: str) -> CommandAnswer:
        if not argument:
            return _answer("Usage: `/pin PATH` (a file in the workspace).\n")
        session = self.methods.state.store.sessions.get(session_id)
        if not session.workspace_roots:
            return _answer("This session has no workspace root to pin files from.\n")
        located = await anyio.to_thread.run_sync(_locate, session.workspace_roots[0], argument)
        if isinstance(located, CommandAnswer):
            return located
        locator = located
        target = {"kind": "file", "locator": locator}
        stored = await self.methods.call("session/pin", {"sessionId": session_id, "target": target})
        return _answer(
            f"**Pinned** `{locator}` (entry seq {stored['appended'][0]['seq']}): it is in every "
            "prompt from the next turn on.\n"
        )

    async def _snapshot(self, session_id: str) -> CommandAnswer:
        turn = [{"type": "text", "text": _PLACEHOLDER.format(name="snapshot")}]
        params = {"sessionId": session_id, "userTurn": turn}
        frozen = await self.methods.call("input/freeze", params)
        answer = await self.methods.call(
            "snapshot/assemble",
            {
                "sessionId": session_id,
                "inputId": frozen["inputId"],
                **self._profile_wire(session_id),
            },
        )
        return _answer(snapshot_markdown(answer))


def _locate(root_path: str, argument: str) -> str | CommandAnswer:
    """``argument``'s locator (relative to the primary root), or why it cannot be pinned
    (outside the root, not a regular file, a NUL byte, an absurd length: said, never raised)."""
    workspace = Workspace.of([root_path])
    try:
        path = workspace.regular_file(argument)
    except ToolError as exc:
        return _answer(f"Not pinned: {exc}.\n")
    return path.relative_to(workspace.cwd).as_posix()
