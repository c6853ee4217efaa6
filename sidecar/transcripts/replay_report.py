"""A replay's figures: per policy, beside the recorded bill, as JSON and as a readable report.

:func:`figures` sums one or several replays (the bench's total over sessions is the same sum
as one session's): per policy its cost (the requests' input, plus its compaction summary
calls' input and output), read share, writes per new token, means per request of the tokens,
user turns and tool-result tokens in view, and how many of its requests show fewer user turns
than keeping everything does.  :func:`report_json` is ``replay --json``; :func:`render` the
readable report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sidecar.context.cache_sim import Bill

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sidecar.transcripts.replay import Replay

__all__ = ["KEEP_EVERYTHING", "SIDECAR", "PolicyFigures", "figures", "render", "report_json"]

SIDECAR = "context-sidecar"
KEEP_EVERYTHING = "keep everything, compact at the window"
RECORDED = "recorded bill"


@dataclass(slots=True)
class PolicyFigures:
    name: str
    requests: int = 0
    input_cost: float = 0.0
    summary_cost: float = 0.0
    summaries: int = 0
    read: int = 0
    write: int = 0
    write_1h: int = 0
    uncached: int = 0
    new_tokens: int = 0
    view_tokens: int = 0
    user_turns: int = 0
    tool_result_tokens: int = 0
    fewer_turns: int = 0
    """Requests with fewer user turns in view than keeping everything shows."""
    window_worst: float = 0.0
    window_over: int = 0

    @property
    def cost(self) -> float:
        return self.input_cost + self.summary_cost

    @property
    def read_share(self) -> float:
        total = self.read + self.write + self.uncached
        return 100 * self.read / total if total else 0.0

    @property
    def writes_per_new_token(self) -> float:
        return self.write / self.new_tokens if self.new_tokens else 0.0

    def mean(self, total: int) -> float:
        return total / self.requests if self.requests else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "policy": self.name,
            "requests": self.requests,
            "cost": self.cost,
            "inputCost": self.input_cost,
            "summaryCost": self.summary_cost,
            "summaries": self.summaries,
            "readShare": self.read_share,
            "read": self.read,
            "write": self.write,
            "write1h": self.write_1h,
            "uncached": self.uncached,
            "writesPerNewToken": self.writes_per_new_token,
            "meanTokensInView": self.mean(self.view_tokens),
            "meanUserTurnsInView": self.mean(self.user_turns),
            "meanToolResultTokensInView": self.mean(self.tool_result_tokens),
            "requestsWithFewerUserTurnsThanKeepEverything": self.fewer_turns,
            "worstRequestOverWindow": self.window_worst,
            "requestsOverWindow": self.window_over,
        }


def figures(replays: Sequence[Replay]) -> dict[str, PolicyFigures]:
    """Per policy (and ``recorded bill``), the figures summed over ``replays``."""
    out: dict[str, PolicyFigures] = {}
    for replay in replays:
        reference = replay.policy(KEEP_EVERYTHING)
        floor = {f.index: f.user_turns for f in reference.requests} if reference else {}
        for run in replay.policies:
            row = out.setdefault(run.name, PolicyFigures(run.name))
            bill = Bill()
            for request in run.requests:
                bill.add(request.bill)
                row.input_cost += request.cost
                row.view_tokens += request.view_tokens
                row.user_turns += request.user_turns
                row.tool_result_tokens += request.tool_result_tokens
                row.fewer_turns += request.user_turns < floor.get(request.index, 0)
            row.requests += len(run.requests)
            row.summary_cost += run.summary_cost
            row.summaries += run.summaries
            row.read += bill.read
            row.write += bill.write
            row.write_1h += bill.write_1h
            row.uncached += bill.uncached
            row.new_tokens += replay.new_tokens
            check = replay.window_checks[run.name]
            row.window_worst = max(row.window_worst, check.worst)
            row.window_over += check.over
        recorded = out.setdefault(RECORDED, PolicyFigures(RECORDED))
        rec = replay.recorded
        recorded.requests += replay.requests
        recorded.input_cost += rec.input_cost
        recorded.read += rec.read
        recorded.write += rec.write
        recorded.uncached += rec.uncached
        recorded.new_tokens += replay.new_tokens
    return out


def report_json(replay: Replay) -> dict[str, Any]:
    """``context-sidecar replay --json``."""
    rec = replay.recorded
    return {
        "path": replay.path,
        "format": replay.format,
        "model": replay.model,
        "window": replay.window,
        "outputReserve": replay.max_output,
        "budget": replay.budget,
        "systemTokens": replay.system_tokens,
        "requests": replay.requests,
        "newTokens": replay.new_tokens,
        "thinkingTokens": replay.thinking_tokens,
        "ttl": replay.ttl,
        "sessionId": replay.session_id,
        "recorded": {
            "inputCost": rec.input_cost,
            "outputCost": rec.output_cost,
            "loggedCost": rec.logged_cost,
            "read": rec.read,
            "write": rec.write,
            "uncached": rec.uncached,
            "readShare": rec.read_share,
            "outputTokens": rec.output_tokens,
            "subagentRequests": rec.subagent_requests,
            "subagentCost": rec.subagent_cost,
        },
        "policies": [f.to_json() for f in figures([replay]).values() if f.name != RECORDED],
        "perRequest": {
            run.name: [
                {
                    "request": f.index,
                    "at": f.at,
                    "read": f.bill.read,
                    "write5m": f.bill.write - f.bill.write_1h,
                    "write1h": f.bill.write_1h,
                    "uncached": f.bill.uncached,
                    "cost": f.cost,
                    "promptTokens": f.prompt_tokens,
                    "tokensInView": f.view_tokens,
                    "userTurnsInView": f.user_turns,
                    "toolResultTokensInView": f.tool_result_tokens,
                }
                for f in run.requests
            ]
            for run in replay.policies
        },
        "providerOverOurCount": replay.ratios,
        "sidecarTrace": replay.trace,
        "windowMovesBack": dict(
            zip(("requests", "written"), replay.window_moves_back(), strict=True)
        ),
        "warnings": replay.warnings,
    }


def render(replay: Replay) -> str:
    """The readable report."""
    rec = replay.recorded
    rows = figures([replay])
    lines = [
        f"{replay.path}",
        f"  {replay.format}, {replay.requests} requests replayed as {replay.model} "
        f"(window {replay.window:,}, output reserve {replay.max_output:,}); system prompt and "
        f"tools {replay.system_tokens:,} tokens; cache TTL {replay.ttl}"
        + (
            f"; {replay.thinking_tokens:,} thinking tokens synthesized"
            if replay.thinking_tokens
            else ""
        ),
        "",
        f"  {'policy':40} {'input $':>9} {'read':>6} {'w/new':>6} {'in view':>9} "
        f"{'turns':>6} {'results':>8} {'summaries':>9}",
    ]
    recorded = rows.pop(RECORDED)
    lines.append(
        f"  {'what the agent paid (recorded usage)':40} {recorded.input_cost:9.2f} "
        f"{recorded.read_share:5.1f}% {recorded.writes_per_new_token:6.2f}"
    )
    for row in rows.values():
        lines.append(
            f"  {row.name:40} {row.cost:9.2f} {row.read_share:5.1f}% "
            f"{row.writes_per_new_token:6.2f} {row.mean(row.view_tokens):9,.0f} "
            f"{row.mean(row.user_turns):6.1f} {row.mean(row.tool_result_tokens):8,.0f} "
            f"{row.summaries:9d}"
        )
    lines.append("")
    lines.append(
        f"  recorded output: {rec.output_tokens:,} tokens, ${rec.output_cost:.2f} at list prices "
        "(the same for every policy, not in the figures above)"
        + (f"; the log's own cost: ${rec.logged_cost:.2f}" if rec.logged_cost is not None else "")
    )
    if rec.subagent_requests:
        lines.append(
            f"  sub-agents: {rec.subagent_requests} requests, ${rec.subagent_cost:.2f} "
            "(not replayed)"
        )
    ours = rows.get(SIDECAR)
    if ours is not None:
        saved = recorded.input_cost - ours.cost
        share = 100 * saved / recorded.input_cost if recorded.input_cost else 0.0
        verb = "saves" if saved >= 0 else "costs"
        lines.append(
            f"  switching to context-sidecar {verb} ${abs(saved):.2f} of "
            f"${recorded.input_cost:.2f} input ({abs(share):.0f}%)"
        )
        keep = rows.get(KEEP_EVERYTHING)
        if keep is not None and keep.cost:
            lines.append(
                f"  against keeping everything: {ours.cost / keep.cost:.2f}x its cost; "
                f"{ours.fewer_turns} of {ours.requests} requests show fewer user turns"
            )
        moves, written = replay.window_moves_back()
        if moves:
            lines.append(
                f"  the history window's start moved back {moves} times "
                f"(those requests wrote {written:,} tokens to the cache)"
            )
        check = replay.window_checks[SIDECAR]
        lines.append(
            f"  largest request + output reserve, as the provider counts: "
            f"{100 * check.worst:.0f}% of the window ({check.over} over)"
        )
    for warning in replay.warnings:
        lines.append(f"  note: {warning}")
    return "\n".join(lines) + "\n"
