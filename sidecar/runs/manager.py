"""Active runs, subscriptions and the run methods' logic (no pygls here).

- One active run per session (``session.busy`` otherwise).  ``session/delete`` goes through
  here too: refused with ``session.busy`` while a run is active, and no run starts while the
  session is being deleted.
- ``emit`` appends an event to the run's journal and only then sends it, to this connection,
  if it is subscribed to the run.
- ``subscribe {afterSeq}`` sends the journal's events after ``afterSeq`` and registers the
  subscription in one step with no ``await`` in between, so every later event is sent live:
  no gap and no duplicate.  ``run/start`` and ``run/resume`` subscribe the same way once
  their answer is written: a host learns the run id from the answer, so no event of the run
  may reach it before.
- Backpressure: when the client leaves more than ``MAX_BACKLOG_BYTES`` unread, a run's live
  events stop being queued (so memory stays bounded) and one ``run/lagged`` notification
  (``server.overloaded``, ``retryAfterMs``, ``lastSentSeq``) says where to catch up with
  ``run/subscribe``; the journal keeps every event.  A replay keeps the same bound: past it,
  it stops with the same ``run/lagged``, so a journal of any size reaches a client in pieces
  of at most the bound.  Deltas are not coalesced: replay is exact instead.
- ``cancel`` cancels the run's scope: a pending ``tool/execute`` is cancelled at the host
  (``$/cancelRequest``), the run ends with ``run.completed {status: cancelled}`` and nothing
  after it, and the session is free for the next run.
- ``resume`` starts a new run (``resumeOf``) on the same frozen input, continuing from the
  turn as history holds it: tool calls whose results are stored are never executed again; a
  call left without a result is asked of the host again (its approval too).  It runs with
  exactly what the run was started with (the record's ``settings``: profile as it was,
  approvals, tool timeout, round limit, delegation, compaction, the rest of a script) and on
  the compaction summary the run recorded, if any.  (A resumed run gets its own id and
  journal so that every journal keeps exactly one terminal event.)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from protocol._base import dump_wire
from protocol.errors import ErrorCode
from protocol.inputs import FrozenInput, InputFreezeParams
from protocol.runs import RunStartSettings
from protocol.snapshots import ProfileInput
from sidecar.aio import run_to_completion
from sidecar.errors import BusyError, InvalidRequestError, SidecarError
from sidecar.ids import new_id, now_iso
from sidecar.inputs.loading import load_frozen_input, load_profile
from sidecar.inputs.profiles import Effective, resolve
from sidecar.inputs.snapshots import canonical
from sidecar.jsonbytes import dumps_bytes
from sidecar.runs.agents import run_agent
from sidecar.runs.builtin import builtin_definitions, offered, runner_for, within
from sidecar.runs.failures import RunStopped, run_failure
from sidecar.runs.journal import TERMINAL, RunJournal, RunStore
from sidecar.runs.loop import RunLoop
from sidecar.runs.loop_state import ClientBridge, RunSettings
from sidecar.runs.providers.base import Provider, ProviderError, resolve_secret
from sidecar.runs.scripted import ScriptedProvider

if TYPE_CHECKING:
    from protocol.runs import RunResumeParams, RunStartParams
    from sidecar.context.service import ContextService
    from sidecar.store import Store

__all__ = ["RunManager"]

logger = logging.getLogger(__name__)

#: Bytes the client may leave unread before a run's live events stop being queued for it.
MAX_BACKLOG_BYTES = 4 * 1024 * 1024
LAGGED_RETRY_MS = 250
#: What ``_busy`` holds for a session while it is being deleted (else a run id or "starting").
_DELETING = "deleting"

Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], None]


class RunBridge(ClientBridge, Protocol):
    def send_event(self, line: bytes, event: dict[str, Any] | None = None) -> None:
        """A ``run/event`` notification: ``line`` is the event's JSON as journaled, ``event``
        the same decoded when the caller has it."""
        ...

    def after_answer(self, fn: Callable[[], object]) -> None:
        """Call ``fn`` once the answer to the request being handled is written (at once
        outside a request), so that what ``fn`` sends follows that answer."""
        ...


@dataclass(slots=True)
class _Active:
    journal: RunJournal
    scope: anyio.CancelScope
    done: anyio.Event


class RunManager:
    def __init__(
        self, store: Store, context: ContextService, bridge: RunBridge, spawn: Spawn
    ) -> None:
        self.store = store
        self.context = context
        self.bridge = bridge
        self.spawn = spawn
        self.runs = RunStore(store.root / "runs")
        self._active: dict[str, _Active] = {}
        self._busy: dict[str, str] = {}
        self._subscribed: set[str] = set()
        if store.writable:
            for run_id in self.runs.recover_interrupted():
                logger.warning("run %s was interrupted by a previous stop", run_id)

    # --- events ------------------------------------------------------------------------------

    def emit(self, journal: RunJournal, event_type: str, payload: dict[str, Any]) -> None:
        event, line = journal.append(event_type, payload)
        if journal.run_id not in self._subscribed:
            return
        if self._overloaded(journal, event["seq"] - 1):
            logger.warning(
                "client too slow for run %s: live events paused at seq %d",
                journal.run_id,
                event["seq"] - 1,
            )
            return
        self.bridge.send_event(line, event)

    def _overloaded(self, journal: RunJournal, last_sent: int) -> bool:
        """Whether the client left more than the bound unread.  If so, this run's events stop
        being queued for it (the journal has them all) and it is told, once, where to catch
        up from: ``run/lagged {lastSentSeq}``, then ``run/subscribe`` from there."""
        if self.bridge.backlog() <= MAX_BACKLOG_BYTES:
            return False
        self._subscribed.discard(journal.run_id)
        self.bridge.notify(
            "run/lagged",
            {
                "runId": journal.run_id,
                "sessionId": journal.record["sessionId"],
                "lastSentSeq": last_sent,
                "code": ErrorCode.OVERLOADED,
                "retryAfterMs": LAGGED_RETRY_MS,
            },
        )
        return True

    def subscribe(self, run_id: str, after_seq: int) -> dict[str, Any]:
        journal = self.runs.get(run_id)
        replayed, paused = 0, False
        # replay, then live: no await in between.  The replay keeps the backlog bound as live
        # events do: past it, it pauses with run/lagged and the client subscribes again.
        for seq, line in journal.lines_after(after_seq):
            if self._overloaded(journal, seq - 1):
                paused = True
                break
            self.bridge.send_event(line)
            replayed += 1
        live = not paused and journal.record["status"] not in TERMINAL
        if live:
            self._subscribed.add(run_id)
        return {
            "runId": run_id,
            "replayed": replayed,
            "headSeq": journal.head,
            "status": journal.record["status"],
            "live": live,
        }

    def unsubscribe(self, run_id: str) -> None:
        self.runs.get(run_id)
        self._subscribed.discard(run_id)

    # --- reading -----------------------------------------------------------------------------

    def get(self, run_id: str) -> dict[str, Any]:
        return dict(self.runs.get(run_id).record)

    def list_runs(self, session_id: str | None, limit: int) -> list[dict[str, Any]]:
        return [dict(r) for r in self.runs.list_runs(session_id, limit)]

    # --- starting ----------------------------------------------------------------------------

    def _claim(self, session_id: str) -> None:
        self.store.sessions.get(session_id)
        current = self._busy.get(session_id)
        if current == _DELETING:
            raise BusyError(
                ErrorCode.SESSION_BUSY,
                f"session {session_id} is being deleted",
                details={"sessionId": session_id},
                retry_after_ms=500,
            )
        if current is not None:
            raise BusyError(
                ErrorCode.SESSION_BUSY,
                f"session {session_id} already has an active run ({current})",
                details={"sessionId": session_id, "runId": current},
                retry_after_ms=500,
            )

    async def delete_session(self, session_id: str) -> None:
        """``session/delete``: ``session.busy`` while a run is active on the session (its
        appends would land in the trash, or fail half-way); no run starts during it."""
        self._claim(session_id)
        self._busy[session_id] = _DELETING
        try:
            await self.store.sessions.delete(session_id)
            self.context.forget(session_id)
        finally:
            self._busy.pop(session_id, None)

    def provider_for(
        self,
        frozen: FrozenInput,
        profile: ProfileInput | None,
        script: dict[str, Any] | None,
    ) -> Provider:
        """The provider a run of ``frozen`` with ``profile`` (or ``script``) would call: for a
        model call made outside a run (the ACP face's ``/compact``)."""
        return self._provider(frozen, profile, script)

    def _provider(
        self,
        frozen: FrozenInput,
        profile: ProfileInput | None,
        script: dict[str, Any] | None,
    ) -> Provider:
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

            return AnthropicProvider(
                base_url=base_url or "https://api.anthropic.com", api_key=api_key
            )
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

    async def start(self, p: RunStartParams) -> dict[str, Any]:
        self._claim(p.session_id)
        self._busy[p.session_id] = "starting"
        try:
            profile, preset = load_profile(self.store, p.profile_id, p.profile)
            session = self.store.sessions.get(p.session_id)
            builtin = offered(p.builtin_tools, profile.builtin_tools if profile else None, session)
            if p.input_id is not None:
                frozen = load_frozen_input(self.store, p.input_id)
                input_id = p.input_id
                builtin = within(builtin, frozen)
            else:
                assert p.user_turn is not None
                tools = builtin_definitions(builtin, p)
                captured = await anyio.to_thread.run_sync(
                    lambda: self.context.capture(
                        InputFreezeParams(
                            session_id=p.session_id,
                            user_turn=p.user_turn or [],
                            tools=tools,
                        ),
                        persist=True,
                    )
                )
                frozen = captured.frozen
                input_id = self.store.blobs.put(dumps_bytes(dump_wire(frozen)))
            started = RunStartSettings(
                profile_id=p.profile_id,
                profile=_plain(profile),
                approval_required=p.approval_required,
                max_rounds=p.max_rounds,
                tool_timeout_ms=p.tool_timeout_ms,
                delegation=p.delegation,
                compaction=p.compaction,
                builtin_tools=builtin,
                script_blob=await self._keep_script(p.script),
            )
            provider = self._provider(frozen, profile, p.script)
            from protocol.entries import MessageInput

            refs, _ = await self.store.sessions.append(
                p.session_id, [MessageInput(kind="message", role="user", content=frozen.user_turn)]
            )
        except BaseException:
            self._busy.pop(p.session_id, None)
            raise
        settings = _loop_settings(
            started, started.max_rounds, input_id, frozen, resolve(profile, preset, frozen)
        )
        settings.builtin = runner_for(builtin, session, self.store)
        settings.turn_seqs = [refs[0]["seq"]]
        return self._launch(p.session_id, input_id, started, settings, provider, p.subscribe)

    async def _keep_script(self, script: dict[str, Any] | None) -> str | None:
        """Store a scripted provider's script (a blob) so that a resume can play the rest."""
        if script is None:
            return None
        data = canonical(script)
        return await anyio.to_thread.run_sync(lambda: self.store.blobs.put(data))

    async def resume(self, p: RunResumeParams) -> dict[str, Any]:
        old = self.runs.get(p.run_id).record
        if old["status"] not in TERMINAL:
            raise InvalidRequestError(
                ErrorCode.RUN_NOT_RESUMABLE,
                f"run {p.run_id} is still {old['status']}",
                details={"runId": p.run_id},
            )
        session_id = old["sessionId"]
        self._claim(session_id)
        self._busy[session_id] = "starting"  # held across the awaits below, as in start()
        try:
            return await self._resume(old, p)
        except BaseException:
            self._busy.pop(session_id, None)
            raise

    async def _resume(self, old: dict[str, Any], p: RunResumeParams) -> dict[str, Any]:
        session_id = old["sessionId"]
        frozen = load_frozen_input(self.store, old["inputId"])
        started, defaulted = _started_with(old, frozen)
        profile, preset = load_profile(self.store, None, started.profile)
        # the turn as history holds it: the user message and every settled round after it
        page = self.store.sessions.read(
            session_id, after_seq=frozen.through_seq, before_seq=None, limit=1000
        )
        turn = [
            {
                "role": e["role"],
                "content": e["content"],
                "tokens": 0,
                "provenance": [
                    {
                        "kind": "transcript",
                        "id": e["id"],
                        "fromSeq": e["seq"],
                        "throughSeq": e["seq"],
                    }
                ],
            }
            for e in page.entries
            if e["kind"] == "message"
        ]
        if p.revision_guidance:
            turn.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": p.revision_guidance}],
                    "tokens": 0,
                    "provenance": [{"kind": "userTurn", "id": "revision"}],
                }
            )
        user_message, rest = (turn[0], turn[1:]) if turn else (None, [])
        if user_message is None:
            raise InvalidRequestError(
                ErrorCode.RUN_NOT_RESUMABLE,
                f"run {p.run_id} has no turn in history to continue",
                details={"runId": p.run_id},
            )
        script = p.script
        if script is None and started.script_blob is not None:
            whole = json.loads(self.store.blobs.get(started.script_blob))
            played = _model_calls(self.runs.get(p.run_id))
            script = {**whole, "rounds": whole.get("rounds", [])[played:]}
        started = started.model_copy(update={"script_blob": await self._keep_script(script)})
        provider = self._provider(frozen, profile, script)
        settings = _loop_settings(
            started,
            p.additional_rounds or started.max_rounds,
            old["inputId"],
            frozen,
            resolve(profile, preset, frozen),
        )
        session = self.store.sessions.get(session_id)
        settings.builtin = runner_for(started.builtin_tools, session, self.store)
        settings.turn = rest
        settings.turn_seqs = [e["seq"] for e in page.entries]
        # a summary the run recorded after the input's head still stands for that history
        settings.compacted = next(
            (e for e in reversed(page.entries) if e["kind"] == "compaction"), None
        )
        return self._launch(
            session_id,
            old["inputId"],
            started,
            settings,
            provider,
            True,
            resume_of=p.run_id,
            defaulted=defaulted,
            pending=_unanswered(rest),
        )

    def _launch(
        self,
        session_id: str,
        input_id: str,
        started: RunStartSettings,
        settings: RunSettings,
        provider: Provider,
        subscribe: bool,
        *,
        resume_of: str | None = None,
        defaulted: bool = False,
        pending: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        now = now_iso()
        record = {
            "runId": new_id("run"),
            "sessionId": session_id,
            "inputId": input_id,
            "status": "created",
            "rounds": 0,
            "headSeq": 0,
            "createdAt": now,
            "updatedAt": now,
            "usage": {},
            "settings": dump_wire(started),
        }
        if resume_of:
            record["resumeOf"] = resume_of
        journal = self.runs.create(record)
        run_id = journal.run_id
        self._busy[session_id] = run_id
        if subscribe:  # run.created (and whatever follows it) is replayed after the answer
            self.bridge.after_answer(lambda: self.subscribe(run_id, 0))
        active = _Active(journal, anyio.CancelScope(), anyio.Event())
        self._active[run_id] = active
        host_assembles = self.bridge.host_assembles()
        loop = RunLoop(
            store=self.store,
            context=self.context,
            bridge=self.bridge,
            journal=journal,
            emit=lambda t, p: self.emit(journal, t, p),
            provider=provider,
            settings=settings,
            host_assembles=host_assembles,
            delegate=run_agent,
        )
        self.emit(
            journal,
            "run.created",
            {
                "inputId": input_id,
                "sessionId": session_id,
                **({"resumeOf": resume_of} if resume_of else {}),
                **({"settingsDefaulted": True} if defaulted else {}),
            },
        )
        self.spawn(lambda: self._drive(active, loop, pending or []))
        return {"runId": run_id, "sessionId": session_id, "inputId": input_id}

    async def _drive(self, active: _Active, loop: RunLoop, pending: list[dict[str, Any]]) -> None:
        journal = active.journal
        status, failure = "completed", None
        with active.scope:
            try:
                if pending:
                    from sidecar.runs.providers.base import ToolCall

                    await loop.status("dispatchingTool")
                    await loop.dispatch(
                        [ToolCall(c["callId"], c["name"], c["arguments"]) for c in pending]
                    )
                await loop.run()
            except RunStopped as exc:
                status, failure = "failed", exc.failure
            except SidecarError as exc:
                status = "failed"
                failure = run_failure(
                    exc.code, exc.message, retryable=exc.retryable, details=exc.details
                )
            except Exception as exc:
                logger.exception("run %s crashed", journal.run_id)
                status = "failed"
                failure = run_failure(
                    "agent.internal_error", f"internal error: {type(exc).__name__}"
                )
        if active.scope.cancel_called:
            status, failure = "cancelled", None
        # no await until the terminal event is journaled; its fsync cannot be interrupted
        journal.record["status"] = status
        if failure is not None:
            journal.record["failure"] = {k: v for k, v in failure.items() if v is not None}
        payload: dict[str, Any] = {"status": status}
        if failure is not None:
            payload["failure"] = journal.record["failure"]
        self.emit(journal, "run.completed", payload)
        # a client that saw run.completed may start the session's next run at once
        self._subscribed.discard(journal.run_id)
        self._busy.pop(journal.record["sessionId"], None)
        await run_to_completion(journal.persist)
        self.runs.finish(journal)
        self._active.pop(journal.run_id, None)
        active.done.set()

    def cancel(self, run_id: str) -> None:
        active = self._active.get(run_id)
        if active is None:
            self.runs.get(run_id)  # not_found if unknown; a finished run stays as it is
            return
        active.scope.cancel()

    async def wait(self, run_id: str) -> None:
        active = self._active.get(run_id)
        if active is not None:
            await active.done.wait()


def _plain(profile: ProfileInput | None) -> ProfileInput | None:
    """A profile's content without its stored id (a stored ``Profile`` is a ``ProfileInput``
    plus ``profileId``)."""
    if profile is None:
        return None
    data = dump_wire(profile)
    data.pop("profileId", None)
    return ProfileInput.model_validate(data, by_alias=True)


def _started_with(old: dict[str, Any], frozen: FrozenInput) -> tuple[RunStartSettings, bool]:
    """The settings a run was started with, and whether they had to be defaulted: a record
    written before they were kept gets run/start's defaults plus approval before every tool
    of the input (which tools needed it is unknown, and one the user meant to approve must
    not run unasked)."""
    if "settings" in old:
        return RunStartSettings.model_validate(old["settings"], by_alias=True), False
    logger.warning(
        "run %s was recorded without its start settings: resuming it with the defaults and "
        "approval before every tool",
        old["runId"],
    )
    return RunStartSettings(approval_required=sorted(t.name for t in frozen.tools)), True


def _loop_settings(
    started: RunStartSettings,
    max_rounds: int,
    input_id: str,
    frozen: FrozenInput,
    effective: Effective,
) -> RunSettings:
    """What the run loop runs with, from the settings a run was started with."""
    return RunSettings(
        max_rounds=max_rounds,
        tool_timeout_s=started.tool_timeout_ms / 1000,
        approval_required=frozenset(started.approval_required),
        input_id=input_id,
        frozen=frozen,
        effective=effective,
        compaction=started.compaction,
        delegation=started.delegation,
    )


def _model_calls(journal: RunJournal) -> int:
    """Model calls a run made, sub-agents' and compaction summaries' included: the rounds of
    a script it played (each call plays one)."""
    return sum(
        e["type"] in ("model.requestCreated", "compaction.started") for e in journal.iter_after(0)
    )


def _unanswered(turn: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls of the last assistant message that have no stored result."""
    last_calls: list[dict[str, Any]] = []
    answered: set[str] = set()
    for message in turn:
        parts = message["content"]
        if message["role"] == "assistant":
            last_calls = [p for p in parts if p["type"] == "toolCall"]
            answered = set()
        else:
            answered |= {p["callId"] for p in parts if p["type"] == "toolResult"}
    return [c for c in last_calls if c["callId"] not in answered]
