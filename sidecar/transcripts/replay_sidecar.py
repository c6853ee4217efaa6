"""The sidecar's side of a replay: what ``context/assemble`` would have sent for each request.

A real session in a real store (a temporary one, or the caller's): before each recorded
request, the whole turns before it are appended (``session/append``'s entries), the request's
user turn is asked as ``userTurn`` and what followed it in the same turn (the assistant's calls
and their results, for a request in the middle of a turn) is given as the turn's settled
rounds, as a run's later round assembles them.  The assembly is the method table's (the
context service, in process), lowered to ``anthropic-messages`` (``openai-chat`` for an OpenAI
model, priced by OpenAI's automatic prefix cache), the same path as the
``cache`` bench suite's.

**Compaction, as a run does it**: the run's own decisions
(:class:`~sidecar.runs.compaction_steps.CompactionSteps`, which :mod:`sidecar.runs.compaction`
follows too): when the assembly advises it
and compacting would archive history no summary stands for yet, the summary call is made (the
assembled prompt plus the run's summary prompt, priced like any request, its output at the
output rate), a compaction entry of :attr:`SidecarSetup.summary_tokens` tokens of filler is
stored through the history's head, keeping the advised tail verbatim, and the request is
assembled again; at most three summaries a request, none once one made no room (until the
next user turn: a new run), never a second summary of history one already stands for, and
a compaction because the cache is cold taken once, never a reason to give up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio

from protocol.context import ContextAssembleParams, PromptProfile
from protocol.entries import CompactionInput, MessageInput
from sidecar.context.sent import PROVIDER_TARGET
from sidecar.context.service import ContextService, lower_result
from sidecar.context.tokens import Tokenizers
from sidecar.runs.compaction import SUMMARY_PROMPT
from sidecar.runs.compaction_steps import CompactionSteps, archived_through
from sidecar.transcripts.pricing import bill_cost, rates_for
from sidecar.transcripts.replay_views import (
    PolicyRun,
    RequestFigures,
    content_wire,
    filler,
    measure,
    new_cache,
    user_turn_at,
)

if TYPE_CHECKING:
    from sidecar.store import Store
    from sidecar.transcripts.replay_views import Prepared

__all__ = ["SidecarSetup", "probe_body", "replay_sidecar", "system_size", "tool_definitions"]

DATE = "2026-01-01"
ANTHROPIC = "anthropic-messages"
_NAME = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(slots=True)
class SidecarSetup:
    """How the sidecar is asked, the same for every request of a replay."""

    profile: dict[str, Any]
    """The prompt profile (wire JSON): the caller's, with the model, the system prompt of
    the recorded size (fragments) and the cache TTL."""
    tools: list[dict[str, Any]]
    follow_advice: bool = True
    summary_tokens: int = 2_000
    expire: bool = True
    """Price with the recorded timestamps (entries expire); False: nothing expires."""
    trace: list[dict[str, Any]] = field(default_factory=list)
    session_id: str = ""
    """The replay's session, once created."""


def tool_definitions(messages: list[MessageInput]) -> list[dict[str, Any]]:
    """A minimal definition for every tool the transcript calls (the schemas are not logged;
    their size is in the system prompt's filler)."""
    names: dict[str, None] = {}
    for message in messages:
        for part in message.content:
            name = getattr(part, "name", None)
            if getattr(part, "type", "") == "toolCall" and isinstance(name, str):
                names[_NAME.sub("_", name)[:64] or "tool"] = None
    return [{"name": name, "description": "", "parameters": {"type": "object"}} for name in names]


def _params(
    session_id: str,
    user: MessageInput,
    profile: dict[str, Any],
    tools: list[dict[str, Any]],
    at: float | None = None,
) -> ContextAssembleParams:
    """``at``: the request's recorded time (epoch seconds), sent as ``context/assemble``'s."""
    params: dict[str, Any] = {
        "sessionId": session_id,
        "userTurn": content_wire(user),
        "date": DATE,
        "tools": tools,
        "lowerTo": PROVIDER_TARGET.get(str(profile.get("provider")), ANTHROPIC),
        "profile": profile,
    }
    if at is not None:
        params["at"] = datetime.fromtimestamp(at, UTC).isoformat()
    return ContextAssembleParams.model_validate(params, by_alias=True)


def _timed(messages: list[MessageInput], times: list[float]) -> list[MessageInput]:
    """The messages with their logged times in ``meta.transcript.at``, as an import keeps
    them (what the session's pauses are read from)."""
    if len(times) != len(messages):
        return messages
    return [
        m.model_copy(update={"meta": {**(m.meta or {}), "transcript": {"at": at}}})
        for m, at in zip(messages, times, strict=True)
    ]


def _turn(messages: list[MessageInput]) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant" if m.role == "assistant" else "user",
            "content": content_wire(m),
            "tokens": 0,
            "provenance": [],
        }
        for m in messages
    ]


def probe_body(store: Store, setup: SidecarSetup) -> dict[str, Any]:
    """What the sidecar sends with ``setup`` for a one-word first turn (on a session of its
    own): its tools and system prompt."""
    service = ContextService(store, Tokenizers.discover(), home=store.root / "no-home")

    async def probe() -> dict[str, Any]:
        created = await store.sessions.create(
            title="replay probe", workspace_roots=[], profile_id=None, meta=None
        )
        user = MessageInput.model_validate(
            {"kind": "message", "role": "user", "content": [{"type": "text", "text": "x"}]}
        )
        body: dict[str, Any] = service.assemble(
            _params(created.session_id, user, setup.profile, setup.tools)
        )["body"]
        return body

    return anyio.run(probe)


def system_size(store: Store, setup: SidecarSetup) -> int:
    """Tokens of the tools and system prompt the sidecar sends with ``setup``."""
    body = probe_body(store, setup)
    prompt, view, _, _ = measure(body, {}, str(setup.profile.get("provider", "anthropic")))
    return prompt - view


def replay_sidecar(prepared: Prepared, setup: SidecarSetup, store: Store, name: str) -> PolicyRun:
    """Every recorded request, assembled by the sidecar and priced (see the module doc)."""
    run = PolicyRun(name)
    service = ContextService(store, Tokenizers.discover(), home=store.root / "no-home")
    messages = prepared.messages
    profile = PromptProfile.model_validate(setup.profile, by_alias=True)
    rates = rates_for(profile.model)
    provider = "openai" if profile.provider == "openai" else "anthropic"
    target = PROVIDER_TARGET[provider]
    cache = new_cache(provider)

    async def main() -> None:
        created = await store.sessions.create(
            title=f"replay of {prepared.transcript.path}",
            workspace_roots=[],
            profile_id=None,
            meta={"replayOf": prepared.transcript.path},
        )
        sid = setup.session_id = created.session_id
        appended = 0  # messages of the transcript in the store
        head = 0
        archived = 0  # the newest seq a summary stands for
        turn, given_up = -1, False  # a run gives up compacting for the rest of its turn
        for request in prepared.requests:
            turn_at = user_turn_at(messages, request.context_end)
            assert turn_at is not None  # prepare() kept only requests with a user turn
            if turn_at != turn:  # a new user turn: a new run, which may compact again
                turn, given_up = turn_at, False
            if appended < turn_at:
                batch = list(messages[appended:turn_at])
                if setup.expire:  # else no time at all: the appends' own, nothing is cold
                    batch = _timed(batch, list(prepared.transcript.times[appended:turn_at]))
                _, head = await store.sessions.append(sid, batch)
                appended = turn_at
            at = request.at if setup.expire else None
            params = _params(sid, messages[turn_at], setup.profile, setup.tools, at)
            settled = _turn(messages[turn_at + 1 : request.context_end])
            result = service.assemble(params, settled)
            steps = CompactionSteps()  # the run's decisions, at the same requests
            while setup.follow_advice and not given_up:
                advice = result["compaction"]
                keep = advice.get("keepFromSeq")
                keep = keep if keep is not None and keep <= head else None
                through = archived_through(keep, head)
                step = steps.next(advice, through > archived)
                if step.action != "compact":
                    given_up = step.action == "give up"
                    break
                summary_body = _summary_body(result, store, sid, target)
                bill = cache.price(summary_body, at)
                run.summary_bill.add(bill)
                run.summary_cost += (
                    bill_cost(bill, rates) + setup.summary_tokens * rates.output / 1e6
                )
                run.summaries += 1
                entry = CompactionInput(
                    kind="compaction",
                    summary=filler(setup.summary_tokens, seed=request.index),
                    through_seq=head,
                    keep_from_seq=keep,
                )
                _, head = await store.sessions.append(sid, [entry])
                archived = through
                result = service.assemble(params, settled)
            body = result["body"]
            bill = cache.price(body, at)
            prompt, view, turns, results = measure(body, prepared.turn_keys, provider)
            run.requests.append(
                RequestFigures(
                    request.index,
                    request.at,
                    bill,
                    bill_cost(bill, rates),
                    prompt,
                    view,
                    turns,
                    results,
                )
            )
            dashboard = result["dashboard"]
            masking = dashboard.get("masking") or {}
            setup.trace.append(
                {
                    "request": request.index,
                    "advised": bool(result["compaction"]["advised"]),
                    "summaries": steps.calls,
                    "startSeq": (dashboard.get("historyWindow") or {}).get("startSeq"),
                    "maskedResults": masking.get("maskedResults", 0),
                    "used": dashboard.get("used"),
                    "available": dashboard.get("availableInput"),
                }
            )

    anyio.run(main)
    return run


def _summary_body(
    result: dict[str, Any], store: Store, session_id: str, target: str
) -> dict[str, Any]:
    """The summary call a run's compaction sends: the prompt plus the summary request."""
    request = dict(result)
    request["messages"] = [
        *result["messages"],
        {
            "role": "user",
            "content": [{"type": "text", "text": SUMMARY_PROMPT}],
            "tokens": 0,
            "provenance": [{"kind": "userTurn", "id": "compaction"}],
        },
    ]
    return lower_result(request, target, store.blobs.get, session_id)
