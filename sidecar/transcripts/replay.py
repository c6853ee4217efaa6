"""Replay a recorded session: what the sidecar would have sent for each request, and its cost.

Given a :class:`~sidecar.transcripts.model.Transcript` and a prompt profile, :func:`replay`
walks the main thread's recorded requests in order and prices, request by request with the
same cache simulator (:class:`~sidecar.context.cache_sim.AnthropicCache`, entries expiring
from the recorded timestamps unless ``ttl`` is ``none``), several policies on the same
requests:

- the sidecar (:mod:`sidecar.transcripts.replay_sidecar`: a real session in a real store,
  ``context/assemble`` lowered to ``anthropic-messages``, compacting when it advises, as a run
  does);
- keeping everything and compacting at the window, LangChain's ``trim_messages``, and the
  agent's own view as recorded (:mod:`sidecar.transcripts.replay_refs`);
- the recorded bill: each request's logged usage at list prices (:mod:`.pricing`), and the
  logged cost where the log has one.

**The same system prompt for all.**  Logs do not keep the tool schemas, and most not the
system prompt either, only their size (``Transcript.system_tokens``).  The sidecar is given a
minimal definition of every tool the session calls and its prompt fragments replaced by one:
the logged system prompt (Codex) and filler up to the recorded size; the references send the
sidecar's tools and system blocks.

**The provider.**  Every policy is replayed as the session's most used model: an Anthropic
model through ``anthropic-messages`` and Anthropic's cache rules, an OpenAI model through
``openai-chat`` and OpenAI's automatic prefix cache (the references then send the system
prompt as the first message, without markers); any other provider as Sonnet 4.5.

**Figures.**  Per request: read, 5-minute and 1-hour writes, uncached tokens, input cost,
tokens in view, user turns in view, tool-result tokens in view.  Per policy: the input cost of
its requests, the cost of its compaction summary calls (their input and output), read share,
writes per new token (the tokens written over the tokens each request added to the session:
its new messages, and the system prompt once), and the means.  The recorded output is the
same for every policy and reported apart.

**The window.**  Each assembled request plus the output reserve must fit the model's window as
the provider counts: our count scaled by the provider's count over ours for the agent's own
request (:func:`window_check`).
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from protocol.context import PromptProfile
from sidecar.context.fragments import FRAGMENT_IDS
from sidecar.context.limits import available_input, resolve_limits
from sidecar.store import Store
from sidecar.transcripts.pricing import FALLBACK_MODEL, rates_for, usage_cost
from sidecar.transcripts.replay_refs import Fixed, agent_view, keep_everything, langchain_trim
from sidecar.transcripts.replay_sidecar import (
    SidecarSetup,
    probe_body,
    replay_sidecar,
    system_size,
    tool_definitions,
)
from sidecar.transcripts.replay_views import PolicyRun, filler, measure, prepare

SIDECAR = "context-sidecar"

if TYPE_CHECKING:
    from sidecar.transcripts.model import Transcript
    from sidecar.transcripts.replay_views import Prepared

__all__ = ["Recorded", "Replay", "ReplayOptions", "WindowCheck", "replay"]

Ttl = Literal["5m", "1h", "none"]
#: The providers whose cache a replay simulates.
SIMULATED = ("anthropic", "openai")
#: The system prompt's size when the log says nothing of it.
DEFAULT_SYSTEM_TOKENS = 4_000


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    profile: dict[str, Any] = field(default_factory=dict)
    """A prompt profile (wire JSON) for the sidecar; its model, when set, wins over the log's."""
    ttl: Ttl = "5m"
    """Cache markers' TTL for every policy; ``none``: 5-minute markers that never expire."""
    thinking: bool = True
    """Synthesize the thinking recent models keep in the prompt (sized from the output)."""
    follow_advice: bool = True
    """The sidecar compacts when its assembly advises it, as a run does."""
    references: bool = True
    """Also price keep-everything, LangChain and the agent's own view."""
    store: Path | None = None
    """Where the sidecar's session is written (default: a temporary store)."""


@dataclass(slots=True)
class Recorded:
    """What the agent paid on its main thread, by its log, at list prices."""

    input_cost: float = 0.0
    output_cost: float = 0.0
    logged_cost: float | None = None
    """The sum of the costs the log records (pi, OpenCode), output included."""
    read: int = 0
    write: int = 0
    uncached: int = 0
    output_tokens: int = 0
    subagent_requests: int = 0
    subagent_cost: float = 0.0
    """Sub-agent threads' input and output at list prices (not replayed)."""

    @property
    def read_share(self) -> float:
        total = self.read + self.write + self.uncached
        return 100 * self.read / total if total else 0.0


@dataclass(slots=True)
class WindowCheck:
    """The largest request a policy sent, as the provider would count it."""

    worst: float = 0.0
    """Tokens (scaled) plus the output reserve, over the window (> 1: refused)."""
    worst_request: int | None = None
    over: int = 0
    """Requests over the window."""


@dataclass(slots=True)
class Replay:
    """A replayed session: every policy's requests, the recorded bill, the checks."""

    path: str
    format: str
    model: str
    window: int
    max_output: int
    budget: int
    system_tokens: int
    requests: int
    new_tokens: int
    thinking_tokens: int
    ttl: Ttl
    policies: list[PolicyRun]
    recorded: Recorded
    window_checks: dict[str, WindowCheck]
    ratios: list[float]
    """Per request: the provider's prompt tokens over our count of the agent's own request."""
    trace: list[dict[str, Any]]
    """The sidecar's per-request state (advice, window start, masked results)."""
    session_id: str
    """The sidecar's session of the replay (in ``ReplayOptions.store`` when given)."""
    warnings: list[str]

    def policy(self, name: str) -> PolicyRun | None:
        return next((p for p in self.policies if p.name == name), None)

    def window_moves_back(self) -> tuple[int, int]:
        """(requests whose history window starts earlier than the request before it — no
        start is the session's first entry — with no compaction between, the tokens those
        requests wrote to the cache): the design says the start never moves back."""
        moves = written = 0
        previous = 0
        run = self.policy(SIDECAR)
        bills = {f.index: f.bill.write for f in run.requests} if run else {}
        for state in self.trace:
            start = state["startSeq"] or 0
            if state.get("summaries"):
                previous = start
                continue
            if start < previous:
                moves += 1
                written += bills.get(state["request"], 0)
            previous = start
        return moves, written


def _main_model(
    transcript: Transcript, profile: dict[str, Any], warnings: list[str]
) -> tuple[str, str]:
    """(provider, model) every policy is replayed as: the profile's, else the session's most
    used model; a provider whose cache is not simulated (neither Anthropic's nor OpenAI's) is
    replayed as :data:`FALLBACK_MODEL`."""
    if isinstance(profile.get("model"), str):
        provider = str(profile.get("provider", "anthropic"))
        return ("openai" if provider == "openai" else "anthropic"), str(profile["model"])
    counts = Counter((r.provider, r.model) for r in transcript.requests)
    if not counts:
        return "anthropic", FALLBACK_MODEL
    (provider, model), _ = counts.most_common(1)[0]
    if provider not in SIMULATED:
        warnings.append(f"{provider}'s cache is not simulated: replayed as {FALLBACK_MODEL}")
        return "anthropic", FALLBACK_MODEL
    return provider, model


def _recorded(transcript: Transcript) -> Recorded:
    out = Recorded()
    logged: list[float] = []
    for request in transcript.requests:
        usage = request.usage
        spent, said = usage_cost(usage, rates_for(request.model))
        out.input_cost += spent
        out.output_cost += said
        out.read += usage.cache_read
        out.write += usage.cache_write
        out.uncached += usage.input
        out.output_tokens += usage.output
        if usage.cost is not None:
            logged.append(usage.cost)
    out.logged_cost = sum(logged) if logged else None
    for sub in transcript.subagents:
        for request in sub.requests:
            spent, said = usage_cost(request.usage, rates_for(request.model))
            out.subagent_requests += 1
            out.subagent_cost += spent + said
    return out


def _new_tokens(prepared: Prepared, system: int) -> int:
    total, end = system, 0
    for request in prepared.requests:
        if request.context_end > end:
            total += sum(prepared.message_tokens[end : request.context_end])
            end = request.context_end
    return total


def window_check(
    run: PolicyRun, ratios: dict[int, float], window: int, reserve: int
) -> WindowCheck:
    """Each request's tokens scaled to the provider's count, plus ``reserve``, against
    ``window`` (a request without a ratio of its own takes the median)."""
    out = WindowCheck()
    fallback = statistics.median(ratios.values()) if ratios else 1.0
    for figures in run.requests:
        scaled = figures.prompt_tokens * ratios.get(figures.index, fallback) + reserve
        share = scaled / window
        if share > out.worst:
            out.worst, out.worst_request = share, figures.index
        out.over += share > 1
    return out


def replay(transcript: Transcript, options: ReplayOptions | None = None) -> Replay:
    """Replay ``transcript`` (see the module docstring)."""
    options = options or ReplayOptions()
    prepared = prepare(transcript, thinking=options.thinking)
    warnings = list(transcript.warnings) + prepared.skipped
    provider, model = _main_model(transcript, options.profile, warnings)
    profile: dict[str, Any] = {**options.profile, "provider": provider, "model": model}
    if options.ttl == "1h" and "cache" not in profile and "cacheTtl" not in profile:
        profile["cache"] = {"ttl": "1h"}
    limits = resolve_limits(PromptProfile.model_validate(profile, by_alias=True))
    budget = available_input(limits)
    rates = rates_for(model)
    if not rates.listed:
        warnings.append(f"{model} is not in the price table: priced at {FALLBACK_MODEL}'s rates")
    if len({r.model for r in transcript.requests}) > 1:
        warnings.append(f"requests of several models; every policy is replayed as {model}")
    expire = options.ttl != "none"
    with tempfile.TemporaryDirectory(prefix="cs-replay-") as tmp:
        probes = Store(Path(tmp) / "probes")  # the probe assemblies stay out of the caller's store
        store = Store(options.store) if options.store is not None else probes
        try:
            setup = _setup(transcript, prepared, profile, probes, expire, warnings)
            setup.follow_advice = options.follow_advice
            system = _system_blocks(probes, setup)
            sidecar = replay_sidecar(prepared, setup, store, SIDECAR)
            session_id = setup.session_id
        finally:
            if store is not probes:
                store.close()
            probes.close()
    ttl_mark = "1h" if options.ttl == "1h" else "5m"
    fixed = Fixed(model, system[0], system[1], ttl_mark, provider)
    empty = fixed.body([], ())
    system_tokens = measure(empty, {}, provider)[0]
    policies = [sidecar]
    own = agent_view(prepared, fixed, rates, expire=expire)
    if options.references:
        policies.append(keep_everything(prepared, fixed, rates, budget, expire=expire))
        trimmed = langchain_trim(prepared, fixed, rates, budget, expire=expire)
        if trimmed is not None:
            policies.append(trimmed)
        else:
            warnings.append("langchain-core is not installed: no LangChain row")
        policies.append(own)
    ratios = {
        f.index: r.usage.prompt_tokens / f.prompt_tokens
        for f, r in zip(own.requests, prepared.requests, strict=True)
        if r.usage.prompt_tokens > 0 and f.prompt_tokens > 0
    }
    checks = {p.name: window_check(p, ratios, limits.window, limits.max_output) for p in policies}
    return Replay(
        path=transcript.path,
        format=transcript.format,
        model=model,
        window=limits.window,
        max_output=limits.max_output,
        budget=budget,
        system_tokens=system_tokens,
        requests=len(prepared.requests),
        new_tokens=_new_tokens(prepared, system_tokens),
        thinking_tokens=prepared.thinking_tokens,
        ttl=options.ttl,
        policies=policies,
        recorded=_recorded_main(transcript, prepared),
        window_checks=checks,
        ratios=[ratios[i] for i in sorted(ratios)],
        trace=setup.trace,
        session_id=session_id,
        warnings=warnings,
    )


def _recorded_main(transcript: Transcript, prepared: Prepared) -> Recorded:
    """The recorded bill of the requests replayed (and the sub-agents', apart)."""
    kept = {r.index for r in prepared.requests}
    return _recorded(
        dataclasses.replace(
            transcript, requests=[r for r in transcript.requests if r.index in kept]
        )
    )


def _setup(
    transcript: Transcript,
    prepared: Prepared,
    profile: dict[str, Any],
    store: Store,
    expire: bool,
    warnings: list[str],
) -> SidecarSetup:
    """The sidecar's profile and tools, its system prompt sized to the recorded one."""
    tools = tool_definitions(prepared.messages)
    fragments: dict[str, str | None] = dict.fromkeys(FRAGMENT_IDS)
    logged = (transcript.system_prompt or "").strip()
    target = transcript.system_tokens
    if target is None and not logged:
        target = DEFAULT_SYSTEM_TOKENS
        warnings.append(f"the log does not say the system prompt's size: {target} tokens taken")
    fragments["base_identity"] = logged or "x"
    probe = SidecarSetup({**profile, "fragments": fragments}, tools, expire=expire)
    if target is not None:  # filler for what the log does not hold (the tool schemas)
        missing = target - system_size(store, probe)
        if missing > 0:
            pad = filler(missing if logged else missing + 1, seed=1)
            fragments["base_identity"] = f"{logged}\n\n{pad}" if logged else pad
    return SidecarSetup({**profile, "fragments": fragments}, tools, expire=expire)


def _system_blocks(
    store: Store, setup: SidecarSetup
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The tools and system blocks the sidecar sends (the references send the same)."""
    body = probe_body(store, setup)
    if setup.profile.get("provider") == "openai":  # the system and developer messages
        head = [m for m in body["messages"] if m.get("role") in ("system", "developer")]
        return list(body.get("tools", [])), head
    system = body.get("system", [])
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    return list(body.get("tools", [])), list(system)
