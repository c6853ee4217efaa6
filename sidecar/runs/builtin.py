"""The built-in workspace tools in a ``serve`` run: which a run offers, and running one call.

A run turns them on with ``builtinTools`` (or its profile does).  What it gets:

- **the tools**: the run's list narrowed by the profile's (each absent: all of them), always in
  the catalog's order, offered before the host's tools (a host tool of the same name is a
  ``params.invalid`` error: the model could not tell them apart);
- **the mode**: the run's, else the profile's, else the session's (the one an ACP client set:
  :data:`sidecar.tools.approvals.MODE_META`), else ``ask`` — resolved once at ``run/start`` and
  kept in the run's settings, so ``run/resume`` asks exactly as the run did;
- **the workspace**: the session's ``workspaceRoots`` (required: a session without roots has
  nothing to confine the tools to, and ``run/start`` says so);
- **the environment** of ``run_command``: its allowlist plus the names the run and the profile
  list (``env``, both: :mod:`sidecar.tools.command_env`); every command carries
  ``CONTEXT_SIDECAR_CALL=<runId>/<callId>``.

One call (:meth:`BuiltinRunner.call`): the approval table decides (read-only tools never ask;
``update_plan`` is one: its call is a ``plan.updated`` event with the list, its result a line);
``ask`` sends ``approval/request`` with what the call would do (the diff of a write, the
command and its directory); the decision is an event (``tool.approval``); the tool runs in the
sidecar, bounded.  In ``auto`` a command runs in the sandbox without asking (verdict
``sandbox``), unless the model asked to leave it (``sandbox: "escalate"``) or no sandbox
starts here: then it is asked about (``escalation``) and runs outside once approved; a
sandboxed command that failed as the sandbox makes commands fail is asked about again
(``escalation: "blocked"``) and, approved, runs once more outside.  The result is stored
and its event carries what a front end shows (the
bounded content, locations, the change, the exit code), since no host saw it run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import anyio.to_thread

from protocol._base import dump_wire
from protocol.context import ToolDefinition
from protocol.errors import ErrorCode
from protocol.runs import ApprovalRequestParams
from protocol.tools import BuiltinTools as BuiltinToolsWire
from protocol.tools import (
    FileChange,
    PlanUpdated,
    ToolApproval,
    ToolLocation,
    ToolResultStored,
)
from sidecar.errors import InvalidRequestError
from sidecar.tools.approvals import (
    ApprovalMode,
    Verdict,
    default_mode,
    escalation_asked,
    mode_named,
    session_mode,
)
from sidecar.tools.bounds import DEFAULT_BOUNDS
from sidecar.tools.catalog import BUILTIN_NAMES, DEFINITIONS, EFFECTS, RECALL, UPDATE_PLAN
from sidecar.tools.confine import Workspace
from sidecar.tools.errors import ToolError
from sidecar.tools.host import BuiltinTools
from sidecar.tools.output import ToolOutput
from sidecar.tools.plan import plan_entries, updated_text
from sidecar.tools.presentation import call_title
from sidecar.tools.recall import recall
from sidecar.tools.sandbox import sandbox_ready

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from protocol.inputs import FrozenInput
    from protocol.runs import RunStartParams
    from protocol.sessions import Session
    from sidecar.store import Store
    from sidecar.tools.edit import Change
    from sidecar.tools.host import Preview

Escalation = Literal["requested", "blocked"]

__all__ = ["BuiltinRunner", "builtin_definitions", "offered", "runner_for", "within"]

logger = logging.getLogger(__name__)

#: A write's texts are left out of an approval or an event past this (the diff would be huge).
MAX_CHANGE_CHARS = 256 * 1024


def offered(
    run: BuiltinToolsWire | None, profile: BuiltinToolsWire | None, session: Session
) -> BuiltinToolsWire | None:
    """What a run starting now offers: tools narrowed, mode resolved (see the module)."""
    if run is None and profile is None:
        return None
    names = set(BUILTIN_NAMES)
    for chosen in (run, profile):
        if chosen is not None and chosen.tools is not None:
            names &= set(chosen.tools)
    if not names:  # a run or a profile that names none turns them off
        return None
    mode: str | None = next((c.mode for c in (run, profile) if c is not None and c.mode), None)
    if mode is None:
        mode = (session_mode(session.meta) or default_mode()).id
    bound = next(
        (c.max_result_tokens for c in (run, profile) if c is not None and c.max_result_tokens),
        None,
    )
    env = sorted({n for c in (run, profile) if c is not None and c.env for n in c.env})
    if not session.workspace_roots:
        raise InvalidRequestError(
            ErrorCode.PARAMS_INVALID,
            "built-in tools need the session's workspaceRoots (the directories they may "
            "read and write); create the session with workspaceRoots",
            details={"sessionId": session.session_id},
        )
    return BuiltinToolsWire.model_validate(
        {
            "tools": [n for n in BUILTIN_NAMES if n in names],
            "mode": mode,
            "maxResultTokens": bound,
            **({"env": env} if env else {}),
        },
        by_alias=True,
    )


def builtin_definitions(chosen: BuiltinToolsWire | None, p: RunStartParams) -> list[ToolDefinition]:
    """The tools a run's input offers: the built-in ones first, then the host's."""
    if chosen is None or not chosen.tools:
        return list(p.tools)
    clash = sorted({t.name for t in p.tools} & set(chosen.tools))
    if clash:
        raise InvalidRequestError(
            ErrorCode.PARAMS_INVALID,
            f"host tool {clash[0]!r} has the name of a built-in tool; rename it or leave the "
            "built-in one out (builtinTools.tools)",
            details={"tools": clash},
        )
    ours = [ToolDefinition.model_validate(DEFINITIONS[n]) for n in chosen.tools]
    return ours + list(p.tools)


def within(chosen: BuiltinToolsWire | None, frozen: FrozenInput) -> BuiltinToolsWire | None:
    """For a run of an input frozen before (``inputId``): the input's tools are what the model
    sees, so only the built-in tools it names are run by the sidecar (a host that froze the
    input with :data:`~sidecar.tools.catalog.DEFINITIONS` under their names gets them run)."""
    if chosen is None or chosen.tools is None:
        return chosen
    named = {t.name for t in frozen.tools}
    return chosen.model_copy(update={"tools": [n for n in chosen.tools if n in named]})


def runner_for(
    chosen: BuiltinToolsWire | None, session: Session, store: Store
) -> BuiltinRunner | None:
    if chosen is None or not chosen.tools:
        return None
    bounds = DEFAULT_BOUNDS
    if chosen.max_result_tokens:
        bounds = replace(bounds, max_tokens=chosen.max_result_tokens)
    mode = mode_named(chosen.mode) or default_mode()
    workspace = Workspace.of(list(session.workspace_roots))

    def recalled(item: object) -> ToolOutput:
        return recall(store, session.session_id, item, bounds)

    tools = BuiltinTools(workspace, bounds, tuple(chosen.env or ()))
    return BuiltinRunner(frozenset(chosen.tools), mode, tools, recalled)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A built-in call's result as it is stored, and what its event adds."""

    content: list[dict[str, Any]]
    is_error: bool
    event: dict[str, Any]


@dataclass(frozen=True, slots=True)
class BuiltinRunner:
    names: frozenset[str]
    mode: ApprovalMode
    tools: BuiltinTools
    recall: Callable[[object], ToolOutput]
    """``recall``: a masked result of the session, by its ledger id (reads the store)."""

    def offers(self, name: str) -> bool:
        return name in self.names

    def describe(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """What ``tool.callRequested`` adds for a built-in call."""
        return {"builtin": True, "effect": EFFECTS[name], "title": call_title(name, arguments)}

    async def call(
        self,
        run_id: str,
        call_id: str,
        name: str,
        arguments: dict[str, Any],
        *,
        ask: Callable[[str, dict[str, Any], float], Awaitable[Any]],
        emit: Callable[[str, dict[str, Any]], None],
        timeout_s: float,
        before_run: Callable[[], None] | None = None,
    ) -> Outcome:
        """Decide, ask, run one call.  ``before_run`` is called once a command is approved,
        just before it runs: the loop writes its journal there, so a run resumed after a
        ``kill -9`` knows the command had started
        (:func:`sidecar.runs.start_settings.started_commands`)."""
        effect = EFFECTS[name]
        verdict: Verdict = self.mode.verdict(effect)
        escalation: Escalation | None = None
        justification: str | None = None

        def decided(verdict: Verdict, approved: bool, reason: str | None = None) -> None:
            event = ToolApproval(
                call_id=call_id,
                name=name,
                effect=effect,  # type: ignore[arg-type]
                mode=self.mode.id,  # type: ignore[arg-type]
                verdict=verdict,
                approved=approved,
                reason=reason,
                escalation=escalation if verdict == "ask" else None,
            )
            emit("tool.approval", dump_wire(event))

        async def asked(preview: Preview) -> str | None:
            """Asks the host; ``None`` when approved, else why not (said in the event)."""
            request = ApprovalRequestParams(
                run_id=run_id,
                call_id=call_id,
                name=name,
                arguments=arguments,
                builtin=True,
                effect=effect,
                mode=self.mode.id,  # type: ignore[arg-type]
                change=_file_change(preview.change) if preview.change else None,
                command=preview.command,
                cwd=preview.cwd,
                escalation=escalation,
                justification=justification,
            )
            answer = await ask("approval/request", dump_wire(request), timeout_s)
            if isinstance(answer, dict) and answer.get("approved") is True:
                decided("ask", True)
                return None
            why = answer.get("reason") if isinstance(answer, dict) else None
            why = why or (answer.get("error") if isinstance(answer, dict) else None)
            reason = str(why) if why else "denied"
            decided("ask", False, reason)
            return reason

        if verdict == "refuse":
            reason = f"{name} is not allowed in {self.mode.id} mode ({self.mode.description})"
            decided(verdict, False, reason)
            return _failed(f"refused: {reason}")
        if name == RECALL:
            try:
                item = arguments.get("id")
                output = await anyio.to_thread.run_sync(lambda: self.recall(item))
            except ToolError as exc:
                return _failed(exc.message)
            return _succeeded(output, None)
        if name == UPDATE_PLAN:
            try:
                entries = plan_entries(arguments)
            except ValueError as exc:
                return _failed(str(exc))
            emit("plan.updated", dump_wire(PlanUpdated(call_id=call_id, entries=entries)))
            return _succeeded(ToolOutput(updated_text(entries)), None)
        if verdict == "sandbox":
            if (wanted := escalation_asked(arguments)) is not None:
                verdict, escalation = "ask", "requested"
                justification = wanted or None
            elif await sandbox_ready() is not None:
                verdict = "ask"  # no sandbox here: asked as in ``ask`` (said once in the log)
        try:
            preview = await self.tools.preview(name, arguments)
            if verdict == "ask":
                if (denied := await asked(preview)) is not None:
                    return _failed(f"not approved: {denied}")
            elif effect != "read":
                decided(verdict, True)  # allowed by the mode: said, since it changes things
            if before_run is not None and effect == "execute":
                before_run()
            marker = f"{run_id}/{call_id}"
            sandboxed = verdict == "sandbox"
            ran = await self.tools.run(
                name, arguments, timeout_s=timeout_s, marker=marker, sandboxed=sandboxed
            )
            blocked = ran.output.meta.get("blocked") if sandboxed else None
            if blocked:
                escalation, justification = "blocked", f"the sandbox blocked {blocked}"
                if (denied := await asked(preview)) is not None:
                    note = f"[the sandbox blocked {blocked}; running it outside: {denied}]"
                    return _succeeded(replace(ran.output, text=f"{ran.output.text}\n{note}"), None)
                ran = await self.tools.run(name, arguments, timeout_s=timeout_s, marker=marker)
        except ToolError as exc:
            return _failed(exc.message)
        except Exception as exc:  # a defect here must not end the run: the model is told
            logger.exception("built-in tool %s failed", name)
            return _failed(f"{name} failed: internal error ({type(exc).__name__})")
        return _succeeded(ran.output, ran.change)


def _failed(text: str) -> Outcome:
    content = [{"type": "text", "text": text}]
    return Outcome(content, True, {"content": content})


def _succeeded(output: ToolOutput, change: Change | None) -> Outcome:
    """A command that exits non-zero is not an error result: it ran, and its output (which
    ends with the exit code) is what the model needs, as after a failing test run."""
    content = [{"type": "text", "text": output.text}]
    event = ToolResultStored(
        call_id="",
        is_error=False,
        seq=0,
        content=content,
        truncated=output.truncated,
        locations=[ToolLocation(path=p, line=line) for p, line in output.locations],
        change=_file_change(change) if change else None,
        exit_code=code if isinstance(code := output.meta.get("exitCode"), int) else None,
    )
    # what the loop's tool.resultStored adds to its own callId, isError and seq
    extra = event.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude={"call_id", "is_error", "seq"}
    )
    return Outcome(content, False, extra)


def _file_change(change: Change) -> FileChange:
    old, new = change.old_text, change.new_text
    if len(new) > MAX_CHANGE_CHARS or (old is not None and len(old) > MAX_CHANGE_CHARS):
        return FileChange(path=change.shown, created=old is None, omitted=True)
    return FileChange(path=change.shown, old_text=old, new_text=new, created=old is None)
