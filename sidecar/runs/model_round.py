"""The loop's model round: assemble the prompt, call the model, stream its answer, store it.

A round assembles the frozen input plus the turn so far (user message and the rounds already
settled: never evicted) — or, for a sub-agent of a host that assembles, asks the host
(``assembly/request``) —, compacts first when the assembly advises it
(:mod:`sidecar.runs.compaction`), stores the prompt as a snapshot (``context.assembled``),
lowers it for the provider with the cache prediction made on the body as sent, streams the
answer (``model.delta``), adds the usage to the run's totals (``model.completed``, with what
the call would have cost under keep-everything-then-compact beside it:
:mod:`sidecar.context.keep_everything_live`) and stores the assistant message
(``history.appended``).  It returns the tool calls the model asked for.
"""

from __future__ import annotations

import hashlib
import json
import time
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from protocol._base import dump_wire
from protocol.errors import ErrorCode
from sidecar.aio import in_cpu_lane, in_thread
from sidecar.context.cache_accounting import RequestShape, request_shape
from sidecar.context.keep_everything_live import compare_call
from sidecar.context.service import lower_result
from sidecar.context.window_floor import assemble_held
from sidecar.inputs.snapshots import EncodedSnapshot, encode_snapshot
from sidecar.runs.compaction import Compaction
from sidecar.runs.failures import RunStopped
from sidecar.runs.provider_choice import body_target
from sidecar.runs.providers.base import (
    Completed,
    ProviderError,
    ReasoningDelta,
    ReasoningItem,
    TextDelta,
    ToolCall,
    Usage,
)
from sidecar.runs.tool_round import AGENT_TOOLS
from sidecar.tools.approvals import PLAN_NOTE, session_mode

if TYPE_CHECKING:
    from sidecar.runs.loop_state import LoopState
    from sidecar.tools.approvals import ApprovalMode

__all__ = ["YIELD_BACKLOG_BYTES", "ModelRound"]

#: Unread bytes past which a streaming round lets the event loop write before it goes on
#: (well under ``events.MAX_BACKLOG_BYTES``, past which a client is told it lags).
YIELD_BACKLOG_BYTES = 512 * 1024


class ModelRound:
    """The model calls of one loop, round after round (each planned against the last)."""

    def __init__(self, loop: LoopState) -> None:
        self.loop = loop
        self.compaction = Compaction(loop)
        self._previous: RequestShape | None = None
        self._previous_sent: RequestShape | None = None
        """The request sent before the next one (where its cache entries are)."""
        self._assembled_shape: tuple[dict[str, Any], RequestShape] | None = None
        """The last prompt this round assembled (a compaction's too: it assembles through
        :meth:`_assembled`), with its shape; a host's prompt in its place is shaped again."""

    def _assemble(self) -> tuple[dict[str, Any], EncodedSnapshot]:
        from sidecar.context.build import build_inputs
        from sidecar.context.capture import Material

        loop = self.loop
        eff = loop.s.effective
        built = build_inputs(
            loop.store.sessions,
            loop.context.tokenizers,
            loop.s.frozen,
            Material(loop.store, persist=False),
            eff.profile,
            seed=loop.s.input_id,
            agent_prompt=self._agent_prompt(eff.agent_prompt),
            components=eff.components,
            parameters=eff.parameters,
            turn=loop.s.turn,
            compaction=loop.s.compacted,
        )
        if loop.s.delegation and loop.agent is None:
            built.inputs.tools = [*built.inputs.tools, *AGENT_TOOLS]
        inputs = built.inputs
        inputs.previous = self._previous_request()
        inputs.calibration = loop.context.calibration.factor(eff.profile.model)
        held = loop.session_id if loop.agent is None else None  # a sub-agent's is its own
        result, messages_json, shape, _ = assemble_held(  # the round is sent now
            inputs, loop.store.sessions, held, time.time()
        )
        self._assembled_shape = (result, shape)
        snapshot = {
            **{k: v for k, v in result.items() if k != "cache"},
            "inputId": loop.s.input_id,
            "sessionId": loop.session_id,
            "profileHash": "",
            "parameters": built.parameters,
            "unknownMacros": built.unknown_macros,
            "items": [],
        }
        return result, encode_snapshot(loop.store.blobs, snapshot, messages_json=messages_json)

    def _agent_prompt(self, profile_prompt: str) -> str:
        """The profile's agent prompt, and :data:`~sidecar.tools.approvals.PLAN_NOTE` after it
        while the run is in ``plan`` (its built-in tools' mode, else the session's, which an
        ACP client may change between rounds): a section of its own, the rest of the system
        prompt unchanged."""
        loop = self.loop
        builtin = loop.s.builtin
        mode: ApprovalMode | None = (
            builtin.mode
            if builtin is not None
            else session_mode(loop.store.sessions.get(loop.session_id).meta)
        )
        if mode is None or mode.id != "plan":
            return profile_prompt
        return f"{profile_prompt.rstrip()}\n\n{PLAN_NOTE}" if profile_prompt.strip() else PLAN_NOTE

    async def _assembled(self) -> tuple[dict[str, Any], str]:
        """The round's prompt, assembled in the CPU lane, and its snapshot stored after it
        in a worker thread (a write and two fsyncs: the lane waits for no disk)."""
        result, encoded = await in_cpu_lane(self._assemble)
        return result, await in_thread(encoded.put, self.loop.store.blobs)

    async def run(self) -> list[ToolCall]:
        """One round: the tool calls the model asked for (none: the turn is answered)."""
        loop = self.loop
        await loop.status("assembling")
        result, snapshot_id = await self._assembled()
        if loop.agent is not None and loop.host_assembles:
            result = await self._host_assembly(result)
        if loop.s.compaction == "auto" and not self.compaction.given_up:
            result, snapshot_id = await self.compaction.make_room(
                result, snapshot_id, self._assembled
            )
        if loop.agent is None:  # the session's own prompts: snapshot/diff's default "before"
            await loop.store.snapshot_index.record(loop.session_id, snapshot_id, loop.s.input_id)
        loop.emit(
            "context.assembled",
            {
                "snapshotId": snapshot_id,
                "dashboard": result["dashboard"],
                "compaction": result["compaction"],
            },
        )
        predicted = result.get("cache")
        self._remember_request(result)
        rounds = int(loop.journal.record.get("rounds", 0)) + 1
        loop.journal.record["rounds"] = rounds
        await loop.status("callingModel")
        profile = loop.s.effective.profile
        body: dict[str, Any] = {}
        target = body_target(loop.provider, profile.provider)
        if target is not None:
            body, predicted = await in_cpu_lane(self._lower, target, result, snapshot_id)
        loop.emit(
            "model.requestCreated",
            {"round": rounds, "provider": loop.provider.name, "model": profile.model},
        )
        answer = _Answer()
        usage: dict[str, int] = {}
        stop = "end_turn"
        sent_at = time.time()
        try:
            async with aclosing(loop.provider.stream(body)) as stream:
                async for event in stream:
                    if isinstance(event, TextDelta):
                        answer.text(event.text)
                        loop.emit("model.delta", {"round": rounds, "text": event.text})
                        if loop.bridge.backlog() > YIELD_BACKLOG_BYTES:
                            # a provider that streams faster than the loop turns (the
                            # scripted one, a burst in one chunk) lets the writer drain to
                            # the client before the backlog bound calls a fast client slow
                            await anyio.lowlevel.checkpoint()
                    elif isinstance(event, ReasoningDelta):
                        answer.reasoning(event.text)
                        loop.emit("model.delta", {"round": rounds, "reasoning": event.text})
                    elif isinstance(event, ReasoningItem):
                        answer.reasoning_item(event)
                    elif isinstance(event, ToolCall):
                        answer.call(event)
                    elif isinstance(event, Usage):
                        usage = {
                            "inputTokens": event.input_tokens,
                            "outputTokens": event.output_tokens,
                            "cacheReadTokens": event.cache_read_tokens,
                            "cacheWriteTokens": event.cache_write_tokens,
                        }
                        if event.reasoning_tokens:
                            usage["reasoningTokens"] = event.reasoning_tokens
                    elif isinstance(event, Completed):
                        stop = event.stop_reason
        except ProviderError as exc:
            raise RunStopped.from_provider(exc) from exc
        if loop.agent is None and usage.get("inputTokens"):  # the budget's calibration
            await in_thread(
                loop.context.calibration.record,
                profile.model,
                usage["inputTokens"],
                int(result["dashboard"]["used"]),
            )
        totals = loop.journal.record.setdefault("usage", {})
        for key, value in usage.items():
            totals[key] = int(totals.get(key, 0)) + value
        completed: dict[str, Any] = {"round": rounds, "stopReason": stop, "usage": usage}
        if predicted is not None:  # the prediction, next to what the provider reported
            completed["predictedCache"] = predicted
        if target is not None and loop.agent is None:  # the same calls, kept everything
            compared = await in_cpu_lane(
                self._keep_everything, target, body, result, sent_at, usage.get("outputTokens", 0)
            )
            if compared is not None:
                completed["keepEverything"] = compared
        loop.emit("model.completed", completed)
        content = answer.content()
        if content:
            await loop.store_message("assistant", content)
        return answer.calls

    def _lower(
        self, target: str, result: dict[str, Any], snapshot_id: str
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """This round's request body, and the cache prediction made on it (against the body
        sent before: the session's, or a sub-agent's own previous round's)."""
        loop = self.loop
        keyed = getattr(loop.provider, "accepts_cache_key", True)
        memo = loop.context.memory(loop.session_id).lowering if loop.agent is None else None
        body = lower_result(
            result, target, loop.store.blobs.get, loop.session_id if keyed else None, memo
        )
        for key, value in loop.s.effective.parameters.items():
            body.setdefault(key, value)
        previous = self._previous_sent
        if loop.agent is None and previous is None:
            previous = loop.context.previous_sent(loop.session_id, target, snapshot_id)
        session = loop.session_id if loop.agent is None else None
        provider = loop.s.effective.profile.provider
        predicted, self._previous_sent = loop.context.account_sent(
            session, provider, target, body, result, previous
        )
        return body, predicted

    def _keep_everything(
        self, target: str, body: dict[str, Any], result: dict[str, Any], at: float, output: int
    ) -> dict[str, Any] | None:
        """What this call would have cost under keep-everything-then-compact, beside what it
        cost as sent (:mod:`sidecar.context.keep_everything_live`)."""
        loop = self.loop
        memory = loop.context.memory(loop.session_id)
        memory.keep_everything, compared = compare_call(
            memory.keep_everything,
            loop.store.sessions,
            loop.session_id,
            target,
            body,
            result["modelLimits"],
            at=at,
            output_tokens=output,
        )
        return compared

    def _previous_request(self) -> RequestShape | None:
        """The request before this round's: the session's (a sub-agent: its own previous
        round's, it shares no prompt with the session)."""
        if self.loop.agent is None and self._previous is None:
            self._previous = self.loop.context.previous_request(self.loop.session_id)
        return self._previous

    def _remember_request(self, result: dict[str, Any]) -> None:
        """This round's prompt is the request the next one is planned against."""
        made = self._assembled_shape
        if made is not None and made[0] is result:
            self._previous = made[1]
        else:  # a host's prompt (a sub-agent's), or none assembled
            self._previous = request_shape(result)
        if self.loop.agent is None:
            self.loop.context.remember_request(self.loop.session_id, self._previous)

    # --- host assembly (sub-agents) -------------------------------------------------------

    async def _host_assembly(self, result: dict[str, Any]) -> dict[str, Any]:
        """Ask the host's own assembler for a sub-agent's messages (TauriTavern style)."""
        loop = self.loop
        eff = loop.s.effective
        task = loop.s.frozen.user_turn[0]
        fingerprint = hashlib.sha256(
            json.dumps([dump_wire(c) for c in eff.components], sort_keys=True).encode()
            + loop.s.input_id.encode()
            + json.dumps(dump_wire(task), sort_keys=True).encode()
        ).hexdigest()
        params = {
            "runId": loop.journal.run_id,
            "callId": loop.agent,
            "scope": loop.s.scope,
            "inputId": loop.s.input_id,
            "fingerprint": fingerprint,
            "turn": [
                {"role": "user", "content": [dump_wire(p) for p in loop.s.frozen.user_turn]},
                *({"role": m["role"], "content": m["content"]} for m in loop.s.turn),
            ],
        }
        answer = await loop.ask("assembly/request", params, loop.s.tool_timeout_s)
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
        loop.emit(
            "context.assembled",
            {"assembledBy": "host", "fingerprint": fingerprint, "messages": len(messages)},
        )
        return out


class _Answer:
    """The assistant message of one model call, built in stream order: runs of text, the
    reasoning blocks a provider wants back (:class:`ReasoningItem`, verbatim, in their place
    among the text and the calls), plain reasoning from deltas no item closed, tool calls
    with the signature they came with."""

    def __init__(self) -> None:
        self._content: list[dict[str, Any]] = []
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self.calls: list[ToolCall] = []

    def text(self, text: str) -> None:
        self._flush_reasoning()
        self._text.append(text)

    def reasoning(self, text: str) -> None:
        self._flush_text()
        self._reasoning.append(text)

    def reasoning_item(self, item: ReasoningItem) -> None:
        self._flush_text()
        self._reasoning.clear()  # the deltas were this block's text, shown already
        self._content.append(item.part())

    def call(self, call: ToolCall) -> None:
        self._flush_reasoning()
        self._flush_text()
        part: dict[str, Any] = {
            "type": "toolCall",
            "callId": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
        }
        if call.signature is not None:
            part["signature"] = call.signature
        self._content.append(part)
        self.calls.append(call)

    def content(self) -> list[dict[str, Any]]:
        self._flush_reasoning()
        self._flush_text()
        return self._content

    def _flush_text(self) -> None:
        if self._text:
            self._content.append({"type": "text", "text": "".join(self._text)})
            self._text.clear()

    def _flush_reasoning(self) -> None:
        if self._reasoning:
            self._content.append({"type": "reasoning", "text": "".join(self._reasoning)})
            self._reasoning.clear()
