"""One run: assemble, call the model, stream, execute tools through the host, repeat.

Each round assembles the frozen input plus the turn so far (user message and the rounds
already settled: never evicted), stores the prompt as a snapshot (``context.assembled``),
lowers it for the provider, streams the answer (``model.delta``), stores the assistant
message in the session (``history.appended``), then runs each tool call through the host
(``tool.callRequested`` -> ``tool/execute`` -> ``tool.resultStored``).  A tool that fails or
times out becomes an error result the model sees.  The loop ends when the model stops asking
for tools, at the round limit (``agent.max_tool_rounds_exceeded``), when the same call is
repeated three times (``agent.tool_loop_detected``), on a provider error, or on cancellation —
always with exactly one ``run.completed``.  Every failure is a :class:`RunStopped` (both retry
flags set), and a run that stops partway through a round first answers the calls it did not
run, so history never holds a call without its result.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.lowlevel

from protocol._base import dump_wire, parse_wire
from protocol.entries import MessageInput
from protocol.errors import ErrorCode
from protocol.inputs import FrozenInput
from protocol.runs import RunFailure, RunStatus, ToolExecuteResult
from sidecar.context.assemble import assemble
from sidecar.context.cache_accounting import RequestShape, request_shape
from sidecar.context.sent import PROVIDER_TARGET
from sidecar.context.service import lower_result
from sidecar.errors import SidecarError
from sidecar.inputs.profiles import Effective
from sidecar.inputs.snapshots import store_snapshot
from sidecar.runs.builtin import BuiltinRunner
from sidecar.runs.providers.base import (
    Completed,
    Provider,
    ProviderError,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    Usage,
)

if TYPE_CHECKING:
    from sidecar.context.service import ContextService
    from sidecar.runs.journal import RunJournal
    from sidecar.store import Store

__all__ = [
    "SUMMARY_PROMPT",
    "ClientBridge",
    "RunLoop",
    "RunSettings",
    "RunStopped",
    "checkpoint_summary",
    "run_failure",
]

logger = logging.getLogger(__name__)

LOOP_REPEATS = 3
#: Built-in tools for sub-agents (underscored: providers reject dots in tool names).
AGENT_TOOLS: list[dict[str, Any]] = [
    {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {"task": {"type": "string"}},
            "required": ["task"],
        },
    }
    for name, description in (
        (
            "agent_delegate",
            "Give a self-contained task to a sub-agent; its answer comes back "
            "as this tool's result.",
        ),
        (
            "agent_handoff",
            "Hand the rest of this turn to a sub-agent; its answer is the turn's answer.",
        ),
    )
]
AGENT_TOOL_NAMES = frozenset(t["name"] for t in AGENT_TOOLS)
#: Compaction attempts before the run gives up (behest's circuit breaker).
COMPACTION_ATTEMPTS = 3
SUMMARY_PROMPT = (
    "Write a checkpoint summary of the conversation so far, to stand in for its older part. "
    "Use these headings: Goal; Constraints & Preferences; Progress; Key Decisions; "
    "Next Steps; Critical Context; Relevant Files. Be specific and brief; keep facts, "
    "names, paths and numbers exactly."
)


#: Unread bytes past which a streaming round lets the event loop write before it goes on
#: (well under ``manager.MAX_BACKLOG_BYTES``, past which a client is told it lags).
YIELD_BACKLOG_BYTES = 512 * 1024


class ClientBridge(Protocol):
    """What a run needs from the connection to the host."""

    def notify(self, method: str, params: Any) -> None: ...

    def host_assembles(self) -> bool:
        """Whether the host assembles sub-agent prompts itself (``assembly/request``)."""
        ...

    def backlog(self) -> int:
        """Bytes sent to the host but not yet read by it."""
        ...

    async def request(self, method: str, params: Any, timeout_s: float) -> Any:
        """Send a server->client request; on cancellation the host is told
        (``$/cancelRequest``); raises ``TimeoutError`` after ``timeout_s`` seconds."""
        ...


def run_failure(
    code: str,
    message: str,
    *,
    retryable: bool = False,
    user_retryable: bool = True,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``RunFailure`` as it goes on the wire, with both retry flags always present."""
    failure = RunFailure(
        code=code,
        message=message,
        retryable=retryable,
        user_retryable=user_retryable,
        details=details,
    )
    return dump_wire(failure)


class RunStopped(Exception):
    """Ends a run with a failure the host should see.

    Every failure the loop builds goes through here, so each carries the whole
    :class:`~protocol.runs.RunFailure`: ``retryable`` (the same request may succeed later:
    rate limit, overload, a host that did not answer) and ``userRetryable`` (worth offering
    ``run/resume``; true for every way the loop stops, since a resumed run starts afresh).
    """

    def __init__(
        self, code: str, message: str, *, retryable: bool = False, user_retryable: bool = True
    ) -> None:
        super().__init__(message)
        self.failure = run_failure(
            code, message, retryable=retryable, user_retryable=user_retryable
        )

    @classmethod
    def from_provider(cls, exc: ProviderError) -> RunStopped:
        """The model call failed: the run ends with the provider's code and retry hint."""
        return cls(exc.code, str(exc), retryable=exc.retryable)


@dataclass(slots=True)
class RunSettings:
    max_rounds: int
    tool_timeout_s: float
    approval_required: frozenset[str]
    input_id: str
    frozen: FrozenInput
    effective: Effective
    turn: list[dict[str, Any]] = field(default_factory=list)
    """The turn so far as prompt messages (user message, settled rounds)."""
    turn_seqs: list[int] = field(default_factory=list)
    delegation: bool = False
    """Offer ``agent_delegate`` / ``agent_handoff`` to the model."""
    scope: str = "root"
    """``root``, or for a sub-agent ``delegate`` / ``handoff``."""
    compaction: str = "auto"
    """``auto``: compact first when an assembly advises it; ``off``: never."""
    compacted: dict[str, Any] | None = None
    """The compaction entry this run recorded (history after the input's head)."""
    builtin: BuiltinRunner | None = None
    """The built-in workspace tools the run offers, run in the sidecar (``builtinTools``)."""


Delegate = Callable[["RunLoop", ToolCall], Awaitable[None]]
"""Runs a sub-agent for a parent loop's delegation call."""


class RunLoop:
    def __init__(
        self,
        *,
        store: Store,
        context: ContextService,
        bridge: ClientBridge,
        journal: RunJournal,
        emit: Any,
        provider: Provider,
        settings: RunSettings,
        agent: str | None = None,
        host_assembles: bool = False,
        delegate: Delegate | None = None,
    ) -> None:
        self.store = store
        self.context = context
        self.bridge = bridge
        self.journal = journal
        self.provider = provider
        self.s = settings
        self.session_id = str(journal.record["sessionId"])
        self._calls: dict[str, int] = {}
        self.agent = agent
        """For a sub-agent: the call id that started it (tags its events; no history)."""
        self.host_assembles = host_assembles
        self.delegate = delegate
        """Runs a sub-agent for a delegation call (``sidecar.runs.agents.run_agent``, given by
        whoever builds the loop: the loop does not import the module that builds loops)."""
        self.handoff: str | None = None
        """A sub-agent's answer that became the turn's answer (``agent_handoff``)."""
        self._previous: RequestShape | None = None
        self._previous_sent: RequestShape | None = None
        """The request sent before the next one (where its cache entries are)."""
        self._room_given_up = False
        """Compaction could not bring this run's transcript under the threshold."""
        self.emit = emit if agent is None else (lambda t, p: emit(t, {**p, "agent": agent}))

    async def status(self, status: RunStatus) -> None:
        if self.agent is None:
            self.journal.record["status"] = status
        self.emit("run.statusChanged", {"status": status})
        await self.journal.persist()

    async def run(self) -> None:
        rounds = 0
        while self.handoff is None:
            if rounds == self.s.max_rounds:
                raise RunStopped(
                    ErrorCode.MAX_ROUNDS,
                    f"the model still asked for tools after {rounds} rounds",
                )
            rounds += 1
            calls = await self._round()
            if not calls:
                return
            await self.status("dispatchingTool")
            await self.dispatch(calls)
        # handed off, in a round of this loop or by a call dispatched before it (run/resume)
        await self._store_message("assistant", [{"type": "text", "text": self.handoff}])

    async def dispatch(self, calls: list[ToolCall]) -> None:
        """Run one round's tool calls in order.  When the run stops (a loop) or hands off
        partway, each call not run still gets an error result, before the run ends or the
        handed-off answer is stored: history never holds a call without its result, and a
        later prompt needs no "interrupted" notes."""
        for index, call in enumerate(calls):
            try:
                await self._tool(call)
            except RunStopped as exc:
                loop = exc.failure["code"] == ErrorCode.TOOL_LOOP
                await self._not_run(
                    calls[index + 1 :], "loop detected" if loop else exc.failure["message"]
                )
                raise
            if self.handoff is not None:
                await self._not_run(calls[index + 1 :], "the turn was handed off")
                return

    async def _not_run(self, calls: list[ToolCall], reason: str) -> None:
        for call in calls:
            self._requested(call)
            await self._store_result(call, [{"type": "text", "text": f"not run: {reason}"}], True)

    # --- one model round ---------------------------------------------------------------------

    def _assemble(self) -> tuple[dict[str, Any], str]:
        from sidecar.context.capture import Material

        eff = self.s.effective
        built = self.context.build(
            self.s.frozen,
            Material(self.store, persist=False),
            eff.profile,
            seed=self.s.input_id,
            agent_prompt=eff.agent_prompt,
            components=eff.components,
            parameters=eff.parameters,
            turn=self.s.turn,
            compaction=self.s.compacted,
        )
        if self.s.delegation and self.agent is None:
            built.inputs.tools = [*built.inputs.tools, *AGENT_TOOLS]
        built.inputs.previous = self._previous_request()
        result = assemble(built.inputs)
        snapshot = {
            **{k: v for k, v in result.items() if k != "cache"},
            "inputId": self.s.input_id,
            "sessionId": self.session_id,
            "profileHash": "",
            "parameters": built.parameters,
            "unknownMacros": built.unknown_macros,
            "items": [],
        }
        return result, store_snapshot(self.store.blobs, snapshot)

    async def _round(self) -> list[ToolCall]:
        await self.status("assembling")
        result, snapshot_id = await anyio.to_thread.run_sync(self._assemble)
        if self.agent is not None and self.host_assembles:
            result = await self._host_assembly(result)
        if self.s.compaction == "auto" and not self._room_given_up:
            result, snapshot_id = await self._make_room(result, snapshot_id)
        if self.agent is None:  # the session's own prompts: snapshot/diff's default "before"
            await self.store.snapshot_index.record(self.session_id, snapshot_id, self.s.input_id)
        self.emit(
            "context.assembled",
            {
                "snapshotId": snapshot_id,
                "dashboard": result["dashboard"],
                "compaction": result["compaction"],
            },
        )
        predicted = result.get("cache")
        self._remember_request(result)
        rounds = int(self.journal.record.get("rounds", 0)) + 1
        self.journal.record["rounds"] = rounds
        await self.status("callingModel")
        profile = self.s.effective.profile
        body: dict[str, Any] = {}
        target = PROVIDER_TARGET.get(profile.provider)
        if self.provider.name != "scripted" and target is not None:
            body, predicted = await anyio.to_thread.run_sync(
                self._lower, target, result, snapshot_id
            )
        self.emit(
            "model.requestCreated",
            {"round": rounds, "provider": self.provider.name, "model": profile.model},
        )
        text: list[str] = []
        reasoning: list[dict[str, Any]] = []
        calls: list[ToolCall] = []
        usage: dict[str, int] = {}
        stop = "end_turn"
        try:
            async with aclosing(self.provider.stream(body)) as stream:
                async for event in stream:
                    if isinstance(event, TextDelta):
                        text.append(event.text)
                        self.emit("model.delta", {"round": rounds, "text": event.text})
                        if self.bridge.backlog() > YIELD_BACKLOG_BYTES:
                            # a provider that streams faster than the loop turns (the
                            # scripted one, a burst in one chunk) lets the writer drain to
                            # the client before the backlog bound calls a fast client slow
                            await anyio.lowlevel.checkpoint()
                    elif isinstance(event, ReasoningDelta):
                        reasoning.append(
                            {
                                "type": "reasoning",
                                "text": event.text,
                                **({"signature": event.signature} if event.signature else {}),
                            }
                        )
                        self.emit("model.delta", {"round": rounds, "reasoning": event.text})
                    elif isinstance(event, ToolCall):
                        calls.append(event)
                    elif isinstance(event, Usage):
                        usage = {
                            "inputTokens": event.input_tokens,
                            "outputTokens": event.output_tokens,
                            "cacheReadTokens": event.cache_read_tokens,
                            "cacheWriteTokens": event.cache_write_tokens,
                        }
                    elif isinstance(event, Completed):
                        stop = event.stop_reason
        except ProviderError as exc:
            raise RunStopped.from_provider(exc) from exc
        totals = self.journal.record.setdefault("usage", {})
        for key, value in usage.items():
            totals[key] = int(totals.get(key, 0)) + value
        completed: dict[str, Any] = {"round": rounds, "stopReason": stop, "usage": usage}
        if predicted is not None:  # the prediction, next to what the provider reported
            completed["predictedCache"] = predicted
        self.emit("model.completed", completed)
        content: list[dict[str, Any]] = [*reasoning]
        if text:
            content.append({"type": "text", "text": "".join(text)})
        content += [
            {"type": "toolCall", "callId": c.call_id, "name": c.name, "arguments": c.arguments}
            for c in calls
        ]
        if content:
            await self._store_message("assistant", content)
        return calls

    def _lower(
        self, target: str, result: dict[str, Any], snapshot_id: str
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """This round's request body, and the cache prediction made on it (against the body
        sent before: the session's, or a sub-agent's own previous round's)."""
        keyed = getattr(self.provider, "accepts_cache_key", True)
        body = lower_result(
            result, target, self.store.blobs.get, self.session_id if keyed else None
        )
        for key, value in self.s.effective.parameters.items():
            body.setdefault(key, value)
        previous = self._previous_sent
        if self.agent is None and previous is None:
            previous = self.context.previous_sent(self.session_id, target, snapshot_id)
        session = self.session_id if self.agent is None else None
        provider = self.s.effective.profile.provider
        predicted, self._previous_sent = self.context.account_sent(
            session, provider, target, body, result, previous
        )
        return body, predicted

    def _previous_request(self) -> RequestShape | None:
        """The request before this round's: the session's (a sub-agent: its own previous
        round's, it shares no prompt with the session)."""
        if self.agent is None and self._previous is None:
            self._previous = self.context.previous_request(self.session_id)
        return self._previous

    def _remember_request(self, result: dict[str, Any]) -> None:
        """This round's prompt is the request the next one is planned against."""
        self._previous = request_shape(result)
        if self.agent is None:
            self.context.memory(self.session_id).previous_request = self._previous

    # --- host assembly (sub-agents) -------------------------------------------------------

    async def _host_assembly(self, result: dict[str, Any]) -> dict[str, Any]:
        """Ask the host's own assembler for a sub-agent's messages (TauriTavern style)."""
        eff = self.s.effective
        task = self.s.frozen.user_turn[0]
        fingerprint = hashlib.sha256(
            json.dumps([dump_wire(c) for c in eff.components], sort_keys=True).encode()
            + self.s.input_id.encode()
            + json.dumps(dump_wire(task), sort_keys=True).encode()
        ).hexdigest()
        params = {
            "runId": self.journal.run_id,
            "callId": self.agent,
            "scope": self.s.scope,
            "inputId": self.s.input_id,
            "fingerprint": fingerprint,
            "turn": [
                {"role": "user", "content": [dump_wire(p) for p in self.s.frozen.user_turn]},
                *({"role": m["role"], "content": m["content"]} for m in self.s.turn),
            ],
        }
        answer = await self._ask("assembly/request", params, self.s.tool_timeout_s)
        if isinstance(answer, dict) and "error" in answer and "messages" not in answer:
            # the host failed or did not answer in time: it may next time
            raise RunStopped(ErrorCode.ASSEMBLY_FAILED, str(answer["error"]), retryable=True)
        messages = answer.get("messages") if isinstance(answer, dict) else None
        if not isinstance(messages, list) or not messages:
            raise RunStopped(
                ErrorCode.ASSEMBLY_FAILED, "the host's assembly/request answer has no messages"
            )
        out = dict(result)
        out["messages"] = [
            {
                "role": m["role"],
                "content": m["content"],
                "tokens": 0,
                "provenance": [{"kind": "userTurn", "id": "host"}],
            }
            for m in messages
        ]
        if isinstance(answer.get("system"), str):
            out["system"] = [
                {
                    "id": "host:system",
                    "category": "system",
                    "title": "host",
                    "text": answer["system"],
                    "tokens": 0,
                    "hash": "",
                    "provenance": {"kind": "host", "id": "assembly"},
                }
            ]
        self.emit(
            "context.assembled",
            {"assembledBy": "host", "fingerprint": fingerprint, "messages": len(messages)},
        )
        return out

    # --- compaction ----------------------------------------------------------------------

    async def _make_room(
        self, result: dict[str, Any], snapshot_id: str
    ) -> tuple[dict[str, Any], str]:
        """Compact while the assembly advises it and a summary can still make room.

        A summary is a paid model call, so one is asked for only when it would archive
        history no summary of this run stands for yet, and asked for again only when the
        last one reduced the transcript (at most :data:`COMPACTION_ATTEMPTS` calls).  When
        compaction cannot bring the transcript under the threshold, one ``compaction.failed``
        says why and the run goes on over the threshold (the assembly still fits the window:
        it evicts by budget); later rounds of the run do not try again.  A summary call that
        fails is retried; the last attempt failing ends the run (``agent.compaction_failed``).
        """
        advice = result["compaction"]
        calls = 0
        while advice["advised"]:
            if not self._archives_more(advice):
                self._give_up_compaction(
                    advice, "nothing older than the recent part kept verbatim is left to summarize"
                )
                break
            if calls == COMPACTION_ATTEMPTS:
                self._give_up_compaction(advice, f"{calls} summaries did not make room")
                break
            calls += 1
            try:
                await self._compact(result)
            except RunStopped as exc:
                self.emit("compaction.failed", {"attempt": calls, **exc.failure})
                if calls == COMPACTION_ATTEMPTS:
                    raise RunStopped(
                        ErrorCode.COMPACTION_FAILED,
                        f"compaction failed {calls} times: {exc.failure['message']}",
                        retryable=exc.failure["retryable"],
                    ) from exc
                continue
            before = advice
            result, snapshot_id = await anyio.to_thread.run_sync(self._assemble)
            advice = result["compaction"]
            if advice["advised"] and advice["transcriptTokens"] >= before["transcriptTokens"]:
                self._give_up_compaction(advice, "the summary made no room")
                break
        return result, snapshot_id

    def _archives_more(self, advice: dict[str, Any]) -> bool:
        """Whether compacting as advised would archive history not archived already."""
        done = self.s.compacted
        already = _archived_through(done.get("keepFromSeq"), done["throughSeq"]) if done else 0
        return _archived_through(advice.get("keepFromSeq"), self.s.frozen.through_seq) > already

    def _give_up_compaction(self, advice: dict[str, Any], why: str) -> None:
        self._room_given_up = True
        tokens, threshold = advice["transcriptTokens"], advice["thresholdTokens"]
        failure = run_failure(
            ErrorCode.COMPACTION_FAILED,
            "compaction did not reduce the transcript below the threshold "
            f"({tokens} > {threshold} tokens): {why}",
        )
        self.emit(
            "compaction.failed",
            {**failure, "transcriptTokens": tokens, "thresholdTokens": threshold},
        )

    async def _compact(self, result: dict[str, Any]) -> None:
        """Ask the model for a checkpoint summary of the conversation it sees, store it as a
        compaction entry standing for history up to the input's head (keeping the newest
        part verbatim), so the next assembly of this same turn has room."""
        advice = result["compaction"]
        through = self.s.frozen.through_seq
        keep = advice.get("keepFromSeq")
        keep = keep if keep is not None and keep <= through else None
        await self.status("compacting")
        self.emit(
            "compaction.started",
            {
                "transcriptTokens": advice["transcriptTokens"],
                "thresholdTokens": advice["thresholdTokens"],
                "throughSeq": through,
                "keepFromSeq": keep,
            },
        )
        summary = await checkpoint_summary(
            self.provider,
            result,
            self.s.effective.profile.provider,
            read_blob=self.store.blobs.get,
            cache_key=self.session_id,
        )
        from protocol.entries import CompactionInput

        entry = CompactionInput(
            kind="compaction", summary=summary, through_seq=through, keep_from_seq=keep
        )
        refs, _ = await self.store.sessions.append(self.session_id, [entry])
        self.s.compacted = {**dump_wire(entry), **refs[0]}
        self.emit(
            "compaction.completed",
            {"seq": refs[0]["seq"], "throughSeq": through, "keepFromSeq": keep},
        )

    # --- tools -------------------------------------------------------------------------------

    async def _tool(self, call: ToolCall) -> None:
        if call.name in AGENT_TOOL_NAMES and self.agent is None and self.s.delegation:
            if self.delegate is None:
                raise RuntimeError("a delegation call reached a loop built without a delegate")
            await self.delegate(self, call)
            return
        key = f"{call.name}:{json.dumps(call.arguments, sort_keys=True)}"
        self._calls[key] = self._calls.get(key, 0) + 1
        builtin = self.s.builtin if self.s.builtin and self.s.builtin.offers(call.name) else None
        self._requested(call, builtin)
        if self._calls[key] >= LOOP_REPEATS:
            await self._store_result(
                call, [{"type": "text", "text": "not run: loop detected (repeated call)"}], True
            )
            raise RunStopped(
                ErrorCode.TOOL_LOOP,
                f"{call.name} was called {LOOP_REPEATS} times with the same arguments; "
                "stopped as a loop",
            )
        if builtin is not None:
            outcome = await builtin.call(
                self.journal.run_id,
                call.call_id,
                call.name,
                call.arguments,
                ask=self._ask,
                emit=self.emit,
                timeout_s=self.s.tool_timeout_s,
            )
            await self._store_result(call, outcome.content, outcome.is_error, outcome.event)
            return
        params = {
            "runId": self.journal.run_id,
            "callId": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
        }
        if call.name in self.s.approval_required:
            answer = await self._ask("approval/request", params, self.s.tool_timeout_s)
            if not (isinstance(answer, dict) and answer.get("approved") is True):
                reason = answer.get("reason") if isinstance(answer, dict) else None
                await self._store_result(
                    call, [{"type": "text", "text": f"not approved: {reason or 'denied'}"}], True
                )
                return
        raw = await self._ask("tool/execute", params, self.s.tool_timeout_s)
        if isinstance(raw, dict) and "error" in raw and "content" not in raw:
            content, is_error = [{"type": "text", "text": str(raw["error"])}], True
        else:
            try:
                result = parse_wire(ToolExecuteResult, raw)
                content = [dump_wire(p) for p in result.content]
                is_error = result.is_error
            except Exception as exc:  # the host answered something that is not a result
                content = [{"type": "text", "text": f"invalid tool result from the host: {exc}"}]
                is_error = True
        await self._store_result(call, content, is_error)

    def _requested(self, call: ToolCall, builtin: BuiltinRunner | None = None) -> None:
        payload = {"callId": call.call_id, "name": call.name, "arguments": call.arguments}
        if builtin is not None:
            payload |= builtin.describe(call.name, call.arguments)
        self.emit("tool.callRequested", payload)

    async def _ask(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        try:
            return await self.bridge.request(method, params, timeout_s)
        except TimeoutError:
            return {"error": f"{method} timed out after {timeout_s:g} s"}
        except SidecarError as exc:
            return {"error": exc.message}
        except Exception as exc:
            return {"error": f"{method} failed: {exc}"}

    async def _store_result(
        self,
        call: ToolCall,
        content: list[dict[str, Any]],
        is_error: bool,
        shown: dict[str, Any] | None = None,
    ) -> None:
        part = {
            "type": "toolResult",
            "callId": call.call_id,
            "content": content,
            "isError": is_error,
        }
        seq = await self._store_message("user", [part])
        stored = {"callId": call.call_id, "isError": is_error, "seq": seq}
        self.emit("tool.resultStored", stored | shown if shown else stored)

    async def _store_message(self, role: str, content: list[dict[str, Any]]) -> int:
        if self.agent is not None:  # a sub-agent's conversation stays out of history
            self.s.turn.append(
                {
                    "role": role,
                    "content": content,
                    "tokens": 0,
                    "provenance": [
                        {"kind": "transcript", "id": f"{self.agent}:{len(self.s.turn)}"}
                    ],
                }
            )
            self.emit("agent.message", {"role": role, "content": content})
            return 0
        entry = parse_wire(MessageInput, {"kind": "message", "role": role, "content": content})
        refs, _ = await self.store.sessions.append(self.session_id, [entry])
        ref = refs[0]
        self.s.turn.append(
            {
                "role": role,
                "content": content,
                "tokens": 0,
                "provenance": [
                    {
                        "kind": "transcript",
                        "id": ref["id"],
                        "fromSeq": ref["seq"],
                        "throughSeq": ref["seq"],
                    }
                ],
            }
        )
        self.s.turn_seqs.append(ref["seq"])
        self.emit("history.appended", {"seqs": [ref["seq"]], "role": role})
        return int(ref["seq"])


async def checkpoint_summary(
    provider: Provider,
    assembled: dict[str, Any],
    provider_kind: str,
    *,
    read_blob: Callable[[str], bytes],
    cache_key: str,
) -> str:
    """Ask ``provider`` for a checkpoint summary of the conversation in ``assembled`` (an
    assembled prompt, wire JSON; ``provider_kind`` is its profile's provider): the prompt
    with :data:`SUMMARY_PROMPT` as a last user message.  Raises :class:`RunStopped` when the
    call fails or the summary is empty.  Used by a run's compaction and by the ACP face's
    ``/compact``."""
    body: dict[str, Any] = {}
    target = PROVIDER_TARGET.get(provider_kind)
    if provider.name != "scripted" and target is not None:
        request = dict(assembled)
        request["messages"] = [
            *assembled["messages"],
            {
                "role": "user",
                "content": [{"type": "text", "text": SUMMARY_PROMPT}],
                "tokens": 0,
                "provenance": [{"kind": "userTurn", "id": "compaction"}],
            },
        ]
        keyed = getattr(provider, "accepts_cache_key", True)
        body = lower_result(request, target, read_blob, cache_key if keyed else None)
    text: list[str] = []
    try:
        async with aclosing(provider.stream(body)) as stream:
            async for event in stream:
                if isinstance(event, TextDelta):
                    text.append(event.text)
    except ProviderError as exc:
        raise RunStopped.from_provider(exc) from exc
    summary = "".join(text).strip()
    if not summary:
        raise RunStopped(ErrorCode.COMPACTION_FAILED, "the model returned an empty summary")
    return summary


def _archived_through(keep: int | None, through: int) -> int:
    """The newest seq a compaction through ``through`` keeping ``keep`` onwards verbatim
    stands for (0: none)."""
    return keep - 1 if keep is not None and keep <= through else through
