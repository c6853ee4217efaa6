"""The cache suite's real path: the bodies a real run sends, priced by the reference caches.

The appended-history path (:mod:`bench.cache`) assembles each turn in process from a history
built with ``session/append``.  A real session does not go that way: its requests are the ones
a run's loop sends.  Here every turn of a session shape is one ``run/start`` on a real sidecar
process over stdio; the model is a loopback server speaking the provider's wire format
(:mod:`bench.loopback`) that answers from the turn as the shape wrote it — the assistant's text
and tool calls (arguments as JSON text, the model's own key order), then, once the host has
answered ``tool/execute`` with the shape's results, the final answer — and records every body as
it came over the socket.  The recorded bodies are priced in order by
:mod:`sidecar.context.cache_sim` (Anthropic Messages, or OpenAI Chat Completions' automatic
prefix cache).

A run sends two requests for a turn with tools (the turn, then the turn with its results) and
a compaction's summary request when the loop compacts, where the appended path prices one
request a turn.  So the real path is checked against :func:`run_appended_rounds`: the appended
history assembled in process as a run's rounds assemble it (the turn, then the turn with its
settled round), the same requests one for one; the two must agree within a point of read share.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.loopback import LoopbackModel, Reply, ToolUse
from protocol.context import ContextAssembleParams
from protocol.sessions import SessionAppendParams
from sidecar.client import SidecarClient
from sidecar.context.cache_sim import AnthropicCache, Bill, OpenAICache
from sidecar.context.sent import PROVIDER_TARGET
from sidecar.context.service import ContextService
from sidecar.context.tokens import Tokenizers
from sidecar.runs.compaction import SUMMARY_PROMPT
from sidecar.store import Store

__all__ = ["RealPath", "asks_for_a_summary", "run_appended_rounds", "run_real"]

KEY_ENV = "CS_BENCH_PROVIDER_KEY"
MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5"}
SUMMARY = "Checkpoint summary: " + " ".join(["the session read and changed files"] * 150)


@dataclass(slots=True)
class RealPath:
    """What a session of real runs sent, priced."""

    provider: str
    all_requests: Bill = field(default_factory=Bill)
    requests: int = 0
    summaries: int = 0
    failures: list[str] = field(default_factory=list)


def _text(message: dict[str, Any]) -> str:
    return " ".join(p["text"] for p in message["content"] if p["type"] == "text")


def _script(turns: list[Any]) -> tuple[list[Reply], dict[str, list[dict[str, Any]]]]:
    """The model's replies in order, and each call's result content (by call id)."""
    replies: list[Reply] = []
    results: dict[str, list[dict[str, Any]]] = {}
    for turn in turns:
        rest = turn.rest
        if len(rest) >= 3 and any(p["type"] == "toolCall" for p in rest[0]["content"]):
            calls = tuple(
                ToolUse(p["callId"], p["name"], json.dumps(p["arguments"]))
                for p in rest[0]["content"]
                if p["type"] == "toolCall"
            )
            replies.append(Reply(_text(rest[0]), calls))
            for part in rest[1]["content"]:
                results[part["callId"]] = part["content"]
            replies.append(Reply(_text(rest[2])))
        else:
            replies.append(Reply(_text(rest[-1])))
    return replies, results


def asks_for_a_summary(body: dict[str, Any]) -> bool:
    """Whether ``body`` is a run's compaction asking the model for a checkpoint summary."""
    last = body["messages"][-1]
    return SUMMARY_PROMPT in json.dumps(last.get("content"))


class _Host:
    """Answers ``tool/execute`` from the shape's results; waits for each run's end."""

    def __init__(self, client: SidecarClient, results: dict[str, list[dict[str, Any]]]) -> None:
        self.results = results
        self.done: dict[str, dict[str, Any]] = {}
        self.finished = asyncio.Event()
        client.on_request("tool/execute", self._execute)
        client.on_notification(self._notified)

    async def _execute(self, params: Any) -> Any:
        content = self.results.get(params["callId"], [{"type": "text", "text": "(no result)"}])
        return {"content": content}

    def _notified(self, method: str, params: Any) -> None:
        if method == "run/event" and params["type"] == "run.completed":
            self.done[params["runId"]] = params["payload"]
            self.finished.set()

    async def until_done(self, run_id: str) -> dict[str, Any]:
        while run_id not in self.done:
            self.finished.clear()
            await asyncio.wait_for(self.finished.wait(), 120)
        return self.done[run_id]


async def _drive(
    provider: str, turns: list[Any], assembly: dict[str, Any], tools: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Run every turn; (the bodies sent, failures)."""
    replies, results = _script(turns)

    def reply(kind: str, body: dict[str, Any]) -> Reply:
        if asks_for_a_summary(body):
            return Reply(SUMMARY)
        return replies.pop(0) if replies else Reply("(end of script)")

    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cs-bench-runs-") as tmp:
        async with LoopbackModel(provider, reply) as model:
            client = await SidecarClient.spawn(
                store=Path(tmp) / "store",
                env={KEY_ENV: "loopback", "NO_PROXY": "127.0.0.1,localhost"},
            )
            try:
                host = _Host(client, results)
                sid = (await client.request("session/create", {"title": "bench"}))["sessionId"]
                profile = {
                    "modelBinding": {
                        "provider": provider,
                        "modelId": MODELS[provider],
                        "baseUrl": model.base_url,
                        "connectionRef": f"env:{KEY_ENV}",
                    },
                    "assembly": assembly,
                }
                for turn in turns:
                    run = await client.request(
                        "run/start",
                        {
                            "sessionId": sid,
                            "userTurn": turn.user["content"],
                            "tools": tools,
                            "profile": profile,
                        },
                    )
                    ended = await host.until_done(run["runId"])
                    if ended.get("status") != "completed":
                        failures.append(json.dumps(ended)[:200])
                        break
            finally:
                await client.close()
            bodies = model.bodies
    return bodies, failures


def run_real(
    provider: str, turns: list[Any], assembly: dict[str, Any], tools: list[dict[str, Any]]
) -> RealPath:
    """A session of real runs through a loopback ``provider``, priced request by request."""
    bodies, failures = asyncio.run(_drive(provider, turns, assembly, tools))
    outcome = RealPath(provider, failures=failures)
    outcome.all_requests.provider = provider
    cache = _cache(provider)
    for body in bodies:
        outcome.all_requests.add(cache.price(body))
        outcome.requests += 1
        outcome.summaries += asks_for_a_summary(body)
    return outcome


def _cache(provider: str) -> AnthropicCache | OpenAICache:
    return AnthropicCache() if provider == "anthropic" else OpenAICache()


def _with_tools(turn: Any) -> bool:
    rest = turn.rest
    return len(rest) >= 3 and any(p["type"] == "toolCall" for p in rest[0]["content"])


def run_appended_rounds(
    provider: str, turns: list[Any], assembly: dict[str, Any], tools: list[dict[str, Any]]
) -> Bill:
    """The appended-history path with a run's requests: per turn, the assembly of the turn,
    then (a turn with tools) of the turn with its calls and results — what the loop's second
    round assembles — each lowered and priced; then the turn is appended."""
    bill = Bill(provider=provider)
    cache = _cache(provider)
    target = PROVIDER_TARGET[provider]
    profile = {"provider": provider, "model": MODELS[provider], **assembly}
    with tempfile.TemporaryDirectory(prefix="cs-bench-rounds-") as tmp:
        store = Store(Path(tmp))
        service = ContextService(store, Tokenizers.discover(), home=Path(tmp) / "no-home")

        async def main() -> None:
            created = await store.sessions.create(
                title="bench rounds", workspace_roots=[], profile_id=None, meta=None
            )
            sid = created.session_id
            for turn in turns:
                params = ContextAssembleParams.model_validate(
                    {
                        "sessionId": sid,
                        "userTurn": turn.user["content"],
                        "date": "2026-12-01",
                        "tools": tools,
                        "lowerTo": target,
                        "profile": profile,
                    },
                    by_alias=True,
                )
                bill.add(cache.price(service.assemble(params)["body"]))
                if _with_tools(turn):
                    settled = [
                        {"role": m["role"], "content": m["content"], "tokens": 0, "provenance": []}
                        for m in turn.rest[:2]
                    ]
                    bill.add(cache.price(service.assemble(params, settled)["body"]))
                entries = SessionAppendParams.model_validate(
                    {"sessionId": sid, "entries": [turn.user, *turn.rest]}, by_alias=True
                ).entries
                await store.sessions.append(sid, list(entries))

        try:
            asyncio.run(main())
        finally:
            store.close()
    return bill
