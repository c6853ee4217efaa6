"""The cache prediction is made on what is sent: it agrees with reference simulators.

Real runs against a loopback provider that records every body (``bench.loopback``): a model
that calls tools every turn — once 25 calls in parallel, more than Anthropic's 20-block
look-back — with results of a few hundred to a few thousand tokens, in a window small enough
that the history window moves, and a restart of the sidecar halfway.  Every request's
``predictedCache`` (journaled on
``model.completed``) is checked against a simulator written from the provider's documented
rules (``sidecar.context.cache_sim``: Anthropic's breakpoints with the 20-block look-back and the
1,024-token minimum; OpenAI's automatic prefix cache from 1,024 tokens in 128-token steps, per
``prompt_cache_key``), fed the recorded bodies in order: read, write and uncached tokens agree
for every request — with 1-hour markers too (the profile's ``cache`` lifetimes): the 1-hour
share of the writes agrees as well, each request priced by the simulator at the time it came.
"""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import pytest

from bench.cache_runs import asks_for_a_summary
from bench.loopback import LoopbackModel, Reply, ToolUse, last_is_tool_results
from sidecar.client import SidecarClient
from sidecar.context.cache_sim import AnthropicCache, OpenAICache
from tests.conftest import SidecarFactory
from tests.e2e.test_runs import TOOLS, Host

pytestmark = pytest.mark.anyio

KEY_ENV = "CS_TEST_PROVIDER_KEY"
MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o"}
WORDS = [
    "store",
    "session",
    "append",
    "seq",
    "index",
    "journal",
    "blob",
    "snapshot",
    "window",
    "cache",
    "prefix",
]
CALLS_PER_TURN = (1, 2, 25, 1, 3, 1, 2, 1, 1, 2)


class ReadingHost(Host):
    """Answers every read with a file of a few hundred to a few thousand tokens."""

    def __init__(self, client: SidecarClient, seed: int) -> None:
        super().__init__(client)
        self.rng = random.Random(seed)

    async def _execute(self, params: Any) -> Any:
        self.tool_calls.append(params)
        size = self.rng.randint(100, 1_500)
        text = " ".join(self.rng.choice(WORDS) for _ in range(size))
        return {"content": [{"type": "text", "text": f"{params['arguments']['path']}: {text}"}]}


def _script() -> Any:
    turn = itertools.count()
    call = itertools.count(1)

    def reply(provider: str, body: dict[str, Any]) -> Reply:
        if asks_for_a_summary(body):
            return Reply("Summary: the files were read. " + " ".join(WORDS * 20))
        if last_is_tool_results(provider, body):
            return Reply("Here is what the files say. " + " ".join(WORDS * 8))
        calls = CALLS_PER_TURN[next(turn) % len(CALLS_PER_TURN)]
        uses = tuple(
            ToolUse(f"call_{n}", "read_file", json.dumps({"path": f"src/m{n}.py"}))
            for n in itertools.islice(call, calls)
        )
        return Reply("Reading.", uses)

    return reply


#: Two policies: nothing masked, so the transcript outgrows the window and a run compacts it;
#: small masking sizes, so the masked boundary moves often (an earlier request's entries are
#: read after the previous request's prefix changed).
POLICIES = {"compacted": "off", "masked": {"protectTokens": 17_000, "batchTokens": 8_000}}


#: Cache lifetimes (the profile's ``cache``): the default (every marker 5 minutes), 1-hour
#: entries on the stable prefix and the masked history with a 5-minute tail (what a policy
#: that keeps the prefix through a coffee break asks for), and every marker 1 hour.
LIFETIMES: dict[str, dict[str, str]] = {
    "5m": {},
    "1h-prefix": {"prefixTtl": "1h", "historyTtl": "1h", "tailTtl": "5m"},
    "1h": {"ttl": "1h"},
}
CASES = [
    *((provider, policy, "5m") for provider in ("anthropic", "openai") for policy in POLICIES),
    ("anthropic", "masked", "1h-prefix"),
    ("anthropic", "compacted", "1h"),
]


@pytest.mark.parametrize(("provider", "policy", "lifetime"), CASES)
async def test_the_prediction_agrees_with_the_simulator_on_every_request(
    sidecars: SidecarFactory, provider: str, policy: str, lifetime: str
) -> None:
    model = LoopbackModel(provider, _script())
    base_url = await model.start()
    env = {KEY_ENV: "k", "NO_PROXY": "127.0.0.1,localhost"}
    profile = {
        "modelBinding": {
            "provider": provider,
            "modelId": MODELS[provider],
            "baseUrl": base_url,
            "connectionRef": f"env:{KEY_ENV}",
        },
        # small: the history window moves within the session (a ~36k budget: the room of a
        # 50k window divided by a Claude model's uncalibrated count factor, 1.25)
        "assembly": {
            "window": 50_000,
            "maxOutput": 4_000,
            "masking": POLICIES[policy],
            "cache": LIFETIMES[lifetime],
        },
    }
    predicted: list[dict[str, Any]] = []
    try:
        client = await sidecars.start(env=env)
        sid = (await client.request("session/create", {"title": "sim"}))["sessionId"]
        host = ReadingHost(client, seed=7)
        for number in range(len(CALLS_PER_TURN) * 2):
            if number == len(CALLS_PER_TURN):  # a restart: the same store, a new process
                await client.close()
                client = await sidecars.start(env=env)
                host = ReadingHost(client, seed=number)
            run = await client.request(
                "run/start",
                {
                    "sessionId": sid,
                    "userTurn": [{"type": "text", "text": f"Turn {number}: read what matters."}],
                    "tools": TOOLS,
                    "profile": profile,
                },
            )
            events = await host.until_done(run["runId"], timeout=60)
            assert events[-1]["payload"] == {"status": "completed"}, events[-1]
            predicted += [
                e["payload"]["predictedCache"] for e in events if e["type"] == "model.completed"
            ]
    finally:
        await model.stop()
    assert len(predicted) == 2 * 2 * len(CALLS_PER_TURN)
    summaries = [b for b in model.bodies if asks_for_a_summary(b)]
    if policy == "compacted":
        assert summaries, "the window never overflowed: nothing was compacted"
    else:
        assert "older tool output masked" in json.dumps(model.bodies[-1]), "nothing masked"

    simulator = AnthropicCache() if provider == "anthropic" else OpenAICache()
    rounds = [r for r in model.recorded if not asks_for_a_summary(r.body)]
    reads = one_hour = 0
    for number, (sent, guess) in enumerate(zip(rounds, predicted, strict=True)):
        bill = simulator.price(sent.body, at=sent.at)
        said = (
            guess["readTokens"],
            guess["writeTokens"],
            guess["oneHourWriteTokens"],
            guess["uncachedTokens"],
        )
        assert said == (bill.read, bill.write, bill.write_1h, bill.uncached), (number, guess, bill)
        reads += bill.read > 0
        one_hour += bill.write_1h
    assert reads >= len(predicted) * 3 // 4  # the cache is in use: not agreement on zeros
    ttls = {m.get("ttl", "5m") for b in rounds for m in _markers(b.body)}
    if lifetime == "5m":
        assert one_hour == 0 and ttls <= {"5m"}, ttls
    else:  # the 1-hour entries were asked for, sent and priced: not agreement on zeros
        assert one_hour > 0 and "1h" in ttls, ttls
    if lifetime == "1h":
        assert ttls == {"1h"}


def _markers(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``cache_control`` of an Anthropic body."""
    blocks = [*body.get("tools", []), *body.get("system", [])]
    for message in body["messages"]:
        content = message["content"]
        blocks += content if isinstance(content, list) else []
    return [b["cache_control"] for b in blocks if isinstance(b, dict) and "cache_control" in b]
