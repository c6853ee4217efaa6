"""Compaction: make room in a run's prompt with a checkpoint summary of its older history.

Before a model round, when the assembly advises it (``compaction.advised``), the run asks
the model for a summary (:func:`checkpoint_summary`, :data:`SUMMARY_PROMPT`) and stores it as
a compaction entry standing for history up to the input's head, keeping the newest part
verbatim (``compaction.started`` / ``compaction.completed``); the round then assembles again.
When compaction cannot bring the transcript under the threshold, one ``compaction.failed``
says why and the run goes on (the assembly still fits the window).  The ACP face's ``/compact``
makes the same summary call.
"""

from __future__ import annotations

from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from protocol._base import dump_wire
from protocol.errors import ErrorCode
from sidecar.context.service import lower_result
from sidecar.runs.compaction_steps import COMPACTION_ATTEMPTS, CompactionSteps, archived_through
from sidecar.runs.failures import RunStopped, run_failure
from sidecar.runs.provider_choice import body_target
from sidecar.runs.providers.base import ProviderError, TextDelta

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from sidecar.runs.loop_state import LoopState
    from sidecar.runs.providers.base import Provider

__all__ = ["COMPACTION_ATTEMPTS", "SUMMARY_PROMPT", "Compaction", "checkpoint_summary"]

SUMMARY_PROMPT = (
    "Write a checkpoint summary of the conversation so far, to stand in for its older part. "
    "Use these headings: Goal; Constraints & Preferences; Progress; Key Decisions; "
    "Next Steps; Critical Context; Relevant Files. Be specific and brief; keep facts, "
    "names, paths and numbers exactly."
)


class Compaction:
    """One run's compaction."""

    def __init__(self, loop: LoopState) -> None:
        self.loop = loop
        self.given_up = False
        """Compaction could not bring this run's transcript under the threshold."""

    async def make_room(
        self,
        result: dict[str, Any],
        snapshot_id: str,
        assemble: Callable[[], Awaitable[tuple[dict[str, Any], str]]],
    ) -> tuple[dict[str, Any], str]:
        """Compact while the assembly advises it and a summary can still make room;
        ``assemble`` is the model round's (the prompt and its snapshot id, assembled again once
        a summary is stored: given per call, not kept, so that the round and its compaction do
        not point at each other).

        A summary is a paid model call, so one is asked for only when it would archive
        history no summary of this run stands for yet, and asked for again only when the
        last one reduced the transcript (at most :data:`COMPACTION_ATTEMPTS` calls).  When
        compaction cannot bring the transcript under the threshold, one ``compaction.failed``
        says why and the run goes on over the threshold (the assembly still fits the window:
        it evicts by budget); later rounds of the run do not try again.  A summary call that
        fails is retried; the last attempt failing ends the run (``agent.compaction_failed``).
        """
        steps = CompactionSteps()
        while True:
            advice = result["compaction"]
            step = steps.next(advice, self._archives_more(advice))
            if step.action == "give up":
                self._give_up(advice, step.why)
            if step.action != "compact":
                break
            try:
                await self._compact(result)
            except RunStopped as exc:
                self.loop.emit("compaction.failed", {"attempt": steps.calls, **exc.failure})
                if steps.calls == COMPACTION_ATTEMPTS:
                    raise RunStopped(
                        ErrorCode.COMPACTION_FAILED,
                        f"compaction failed {steps.calls} times: {exc.failure['message']}",
                        retryable=exc.failure["retryable"],
                    ) from exc
                steps.failed()
                continue
            result, snapshot_id = await assemble()
        return result, snapshot_id

    def _archives_more(self, advice: dict[str, Any]) -> bool:
        """Whether compacting as advised would archive history not archived already."""
        done = self.loop.s.compacted
        already = archived_through(done.get("keepFromSeq"), done["throughSeq"]) if done else 0
        return archived_through(advice.get("keepFromSeq"), self.loop.s.frozen.through_seq) > already

    def _give_up(self, advice: dict[str, Any], why: str) -> None:
        self.given_up = True
        tokens, threshold = advice["transcriptTokens"], advice["thresholdTokens"]
        failure = run_failure(
            ErrorCode.COMPACTION_FAILED,
            "compaction did not reduce the transcript below the threshold "
            f"({tokens} > {threshold} tokens): {why}",
        )
        self.loop.emit(
            "compaction.failed",
            {**failure, "transcriptTokens": tokens, "thresholdTokens": threshold},
        )

    async def _compact(self, result: dict[str, Any]) -> None:
        """Ask the model for a checkpoint summary of the conversation it sees, store it as a
        compaction entry standing for history up to the input's head (keeping the newest
        part verbatim), so the next assembly of this same turn has room."""
        loop = self.loop
        advice = result["compaction"]
        through = loop.s.frozen.through_seq
        keep = advice.get("keepFromSeq")
        keep = keep if keep is not None and keep <= through else None
        await loop.status("compacting")
        loop.emit(
            "compaction.started",
            {
                "transcriptTokens": advice["transcriptTokens"],
                "thresholdTokens": advice["thresholdTokens"],
                "throughSeq": through,
                "keepFromSeq": keep,
            },
        )
        summary = await checkpoint_summary(
            loop.provider,
            result,
            loop.s.effective.profile.provider,
            read_blob=loop.store.blobs.get,
            cache_key=loop.session_id,
        )
        from protocol.entries import CompactionInput

        entry = CompactionInput(
            kind="compaction", summary=summary, through_seq=through, keep_from_seq=keep
        )
        refs, _ = await loop.store.sessions.append(loop.session_id, [entry])
        loop.s.compacted = {**dump_wire(entry), **refs[0]}
        loop.emit(
            "compaction.completed",
            {"seq": refs[0]["seq"], "throughSeq": through, "keepFromSeq": keep},
        )


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
    target = body_target(provider, provider_kind)
    if target is not None:
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
