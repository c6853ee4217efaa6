"""Active runs and the run methods' logic (no pygls here): which session has a run, starting
and resuming one, driving it to its one terminal event, cancelling it.

- One active run per session (``session.busy`` otherwise).  ``session/delete`` goes through
  here too: refused with ``session.busy`` while a run is active, and no run starts while the
  session is being deleted.
- A run's events go through :class:`~sidecar.runs.events.RunEvents` (journal first, then live
  to a subscribed connection, with its backpressure).  ``run/start`` and ``run/resume``
  subscribe once their answer is written: a host learns the run id from the answer, so no
  event of the run may reach it before.
- ``cancel`` cancels the run's scope: a pending ``tool/execute`` is cancelled at the host
  (``$/cancelRequest``), the run ends with ``run.completed {status: cancelled}`` and nothing
  after it, and the session is free for the next run.
- ``resume`` starts a new run (``resumeOf``) on the same frozen input, continuing from the
  turn as history holds it: tool calls whose results are stored are never executed again; a
  call left without a result is asked of the host again (its approval too), but a built-in
  command that had started is answered as interrupted, and whatever of it still runs (found
  by its marker, :mod:`sidecar.tools.leftovers`) is ended first.  It runs with
  exactly what the run was started with (:mod:`sidecar.runs.start_settings`) and on the
  compaction summary the run recorded, if any.  (A resumed run gets its own id and
  journal so that every journal keeps exactly one terminal event.)
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from protocol._base import dump_wire
from protocol.errors import ErrorCode
from protocol.inputs import InputFreezeParams
from protocol.runs import RunStartSettings
from sidecar.aio import in_cpu_lane, in_thread, run_to_completion
from sidecar.errors import BusyError, InvalidRequestError, SidecarError
from sidecar.ids import new_id, now_iso
from sidecar.inputs.loading import load_frozen_input, load_profile
from sidecar.inputs.profiles import resolve
from sidecar.inputs.snapshots import canonical
from sidecar.jsonbytes import dumps_bytes
from sidecar.runs.agents import run_agent
from sidecar.runs.builtin import builtin_definitions, offered, runner_for, within
from sidecar.runs.events import RunBridge, RunEvents
from sidecar.runs.failures import RunStopped, run_failure
from sidecar.runs.journal import TERMINAL, RunJournal, RunStore
from sidecar.runs.loop import RunLoop
from sidecar.runs.provider_choice import choose_provider
from sidecar.runs.start_settings import (
    history_turn,
    loop_settings,
    plain_profile,
    played_model_calls,
    started_commands,
    started_with,
    unanswered,
)
from sidecar.tools.leftovers import end_marked

if TYPE_CHECKING:
    from protocol.context import ToolDefinition
    from protocol.entries import ContentPart
    from protocol.inputs import FrozenInput
    from protocol.runs import RunResumeParams, RunStartParams
    from protocol.snapshots import ProfileInput
    from sidecar.context.capture import Material
    from sidecar.context.service import ContextService
    from sidecar.runs.loop_state import RunSettings
    from sidecar.runs.providers.base import Provider
    from sidecar.store import Store

__all__ = ["RunManager"]

logger = logging.getLogger(__name__)

#: What ``_busy`` holds for a session while it is being deleted (else a run id or "starting").
_DELETING = "deleting"

Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], None]


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
        self.events = RunEvents(self.runs, bridge)
        self._busy: dict[str, str] = {}
        store.sessions.on_taken = self._settle
        if store.writable:
            self._settle_free_sessions()

    # --- runs other processes left ----------------------------------------------------------

    def _settle(self, session_id: str) -> None:
        """This process has just taken ``session_id``: whatever run was unfinished in it was
        driven by a process that is gone (it held the session); mark it interrupted."""
        for run_id in self.runs.recover_interrupted(session_id):
            logger.warning("run %s was interrupted by a previous stop", run_id)

    def _settle_free_sessions(self) -> None:
        """At start-up: settle the unfinished runs of sessions no live process holds (taken
        just for that, then given back); those of a held session are alive elsewhere."""
        sessions = self.store.sessions
        for session_id in sorted({sid for _, sid in self.runs.unfinished()}):
            if sessions.holds(session_id):
                continue
            try:
                sessions.hold(session_id)  # settles its runs (on_taken)
            except SidecarError:
                continue  # held by a live process, or gone
            sessions.release_now(session_id)

    @contextlib.asynccontextmanager
    async def exclusive(self, session_id: str, what: str) -> AsyncIterator[None]:
        """Work on the session's workspace with no run of this process on it (a checkpoint's
        restore): ``session.busy`` while one is active, and none starts meanwhile."""
        self._claim(session_id)
        self._busy[session_id] = what
        try:
            yield
        finally:
            self._busy.pop(session_id, None)

    async def release_session(self, session_id: str) -> bool:
        """``session/release``: give the session back for another process to write;
        ``session.busy`` while a run of this process is active on it."""
        self._check_busy(session_id)
        return await self.store.sessions.release(session_id)

    # --- events (run/subscribe, run/unsubscribe) ----------------------------------------------

    def subscribe(self, run_id: str, after_seq: int) -> dict[str, Any]:
        return self.events.subscribe(run_id, after_seq)

    def unsubscribe(self, run_id: str) -> None:
        self.events.unsubscribe(run_id)

    # --- reading -----------------------------------------------------------------------------

    def get(self, run_id: str) -> dict[str, Any]:
        return dict(self.runs.get(run_id).record)

    def list_runs(self, session_id: str | None, limit: int) -> list[dict[str, Any]]:
        return [dict(r) for r in self.runs.list_runs(session_id, limit)]

    # --- starting ----------------------------------------------------------------------------

    def _claim(self, session_id: str) -> None:
        """Check that no run of this process is active on the session, and hold it
        (``session.held`` while another process does)."""
        self._check_busy(session_id)
        self.store.sessions.hold(session_id)

    def _check_busy(self, session_id: str) -> None:
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
        return choose_provider(frozen, profile, script)

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
                frozen, data, material = await in_cpu_lane(
                    self._freeze, p.session_id, p.user_turn, tools
                )
                input_id = await in_thread(material.store_input, data)  # not in the lane
            started = RunStartSettings(
                profile_id=p.profile_id,
                profile=plain_profile(profile),
                approval_required=p.approval_required,
                max_rounds=p.max_rounds,
                tool_timeout_ms=p.tool_timeout_ms,
                delegation=p.delegation,
                compaction=p.compaction,
                builtin_tools=builtin,
                script_blob=await self._keep_script(p.script),
            )
            provider = choose_provider(frozen, profile, p.script)
            from protocol.entries import MessageInput

            refs, _ = await self.store.sessions.append(
                p.session_id, [MessageInput(kind="message", role="user", content=frozen.user_turn)]
            )
        except BaseException:
            self._busy.pop(p.session_id, None)
            raise
        settings = loop_settings(
            started, started.max_rounds, input_id, frozen, resolve(profile, preset, frozen)
        )
        settings.builtin = runner_for(builtin, session, self.store)
        settings.turn_seqs = [refs[0]["seq"]]
        return await self._launch(p.session_id, input_id, started, settings, provider, p.subscribe)

    def _freeze(
        self, session_id: str, user_turn: list[ContentPart], tools: list[ToolDefinition]
    ) -> tuple[FrozenInput, bytes, Material]:
        """Capture a run's input: it, the bytes of its blob and the blobs it refers to, not
        stored yet (computing: in the CPU lane; ``Material.store_input`` stores them)."""
        captured = self.context.capture(
            InputFreezeParams(session_id=session_id, user_turn=user_turn, tools=tools),
            persist=True,
        )
        return captured.frozen, dumps_bytes(dump_wire(captured.frozen)), captured.material

    async def _keep_script(self, script: dict[str, Any] | None) -> str | None:
        """Store a scripted provider's script (a blob) so that a resume can play the rest."""
        if script is None:
            return None
        data = canonical(script)
        return await anyio.to_thread.run_sync(lambda: self.store.blobs.put(data))

    async def resume(self, p: RunResumeParams) -> dict[str, Any]:
        old = self.runs.get(p.run_id).record
        if old["status"] not in TERMINAL and p.run_id not in self._active:
            # left by a process that is gone? Taking its session settles it (or says who
            # still drives it: session.held)
            self.store.sessions.hold(old["sessionId"])
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
        started, defaulted = started_with(old, frozen)
        profile, preset = load_profile(self.store, None, started.profile)
        # the turn as history holds it: the user message and every settled round after it
        page = self.store.sessions.read(
            session_id, after_seq=frozen.through_seq, before_seq=None, limit=1000
        )
        turn = history_turn(page.entries, p.revision_guidance)
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
            played = played_model_calls(self.runs.get(p.run_id))
            script = {**whole, "rounds": whole.get("rounds", [])[played:]}
        started = started.model_copy(update={"script_blob": await self._keep_script(script)})
        provider = choose_provider(frozen, profile, script)
        settings = loop_settings(
            started,
            p.additional_rounds or started.max_rounds,
            old["inputId"],
            frozen,
            resolve(profile, preset, frozen),
        )
        session = self.store.sessions.get(session_id)
        settings.builtin = runner_for(started.builtin_tools, session, self.store)
        pending = unanswered(rest)
        if settings.builtin is not None:
            # the commands the old run left running end before this one runs anything
            ended = await in_thread(end_marked, f"{p.run_id}/")
            if ended:
                logger.warning("ended %d leftover processes of run %s", ended, p.run_id)
            old_journal = self.runs.get(p.run_id)
            settings.interrupted = started_commands(old_journal, pending)
        settings.turn = rest
        settings.turn_seqs = [e["seq"] for e in page.entries]
        # a summary the run recorded after the input's head still stands for that history
        settings.compacted = next(
            (e for e in reversed(page.entries) if e["kind"] == "compaction"), None
        )
        return await self._launch(
            session_id,
            old["inputId"],
            started,
            settings,
            provider,
            True,
            resume_of=p.run_id,
            defaulted=defaulted,
            pending=pending,
        )

    async def _launch(
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
        # past the session's append: a cancelled request still starts its run (and answers)
        journal = await run_to_completion(lambda: self.runs.create_in_thread(record))
        run_id = journal.run_id
        self._busy[session_id] = run_id
        if subscribe:  # run.created (and whatever follows it) is replayed after the answer
            self.bridge.after_answer(lambda: self.events.subscribe(run_id, 0))
        active = _Active(journal, anyio.CancelScope(), anyio.Event())
        self._active[run_id] = active
        host_assembles = self.bridge.host_assembles()
        loop = RunLoop(
            store=self.store,
            context=self.context,
            bridge=self.bridge,
            journal=journal,
            emit=lambda t, p: self.events.emit(journal, t, p),
            provider=provider,
            settings=settings,
            host_assembles=host_assembles,
            delegate=run_agent,
        )
        self.events.emit(
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
            finally:
                loop.close()
        if active.scope.cancel_called:
            status, failure = "cancelled", None
        # no await until the terminal event is journaled; its fsync cannot be interrupted
        journal.record["status"] = status
        if failure is not None:
            journal.record["failure"] = {k: v for k, v in failure.items() if v is not None}
        payload: dict[str, Any] = {"status": status}
        if failure is not None:
            payload["failure"] = journal.record["failure"]
        self.events.emit(journal, "run.completed", payload)
        # a client that saw run.completed may start the session's next run at once
        self.events.ended(journal.run_id)
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
