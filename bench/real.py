"""Real: what the sessions real agents had would have cost through the sidecar, beside what the
agents paid and beside the simplest policy of the leading agent.

Five session logs written by real agents during real work (two long pi sessions on Claude
Opus 4.5 / Sonnet 4.5, three Claude Code sessions on Sonnet 4; MIT-licensed, vendored once
under ``tests/data/transcripts/real/`` with their licences and a README of their origins), each
replayed request by request in the order the agent made them
(:func:`sidecar.transcripts.replay.replay`, what ``context-sidecar replay`` runs): the
sidecar with the default profile (compacting when it advises, as a run does), keeping
everything and compacting at the window with Claude Code's marker layout, LangChain's
``trim_messages``, and the recorded bill (the logged usage at list prices).  Every policy is
priced by the same Anthropic cache simulator with a 5-minute TTL from the recorded timestamps,
with the thinking recent models keep in the prompt sized from the recorded output.

Rows per session and in total: cost (input side; the recorded output is the same for every
policy and is noted), read share, writes per new token, mean tokens / user turns / tool-result
tokens in view, with the issue-41 targets: the default profile at most 0.75x keep-everything's
cost and 0.6x the recorded bill, no request with fewer user turns in view than keep-everything
shows, and no request over the window once the output reserve is added, counted as the
provider counted (our count scaled by the provider's count over ours for the agent's own
request).  ``--quick``: the three Claude Code sessions and the first 60 requests of each pi
session.

Held out: the sessions of ``tests/data/transcripts/heldout/`` (every ``*.jsonl`` under it;
``CS_HELDOUT_SESSIONS`` names another folder, e.g. sessions that may not be vendored), found
after the policy was set and never to tune it, get the same rows under their own "held-out"
total with the same targets: a miss there is reported, not tuned away.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from bench.common import Options, Row, Target
from sidecar.transcripts.read import read_transcript
from sidecar.transcripts.replay import Replay, ReplayOptions, replay
from sidecar.transcripts.replay_report import (
    KEEP_EVERYTHING,
    RECORDED,
    SIDECAR,
    PolicyFigures,
    figures,
)

__all__ = ["HELDOUT_DATA", "SESSIONS", "heldout_sessions", "replay_all", "run"]

#: The vendored sessions (``CS_REAL_SESSIONS`` names another folder of the same layout): one
#: copy in the repository, beside the transcript readers' tests that read it too.
DEFAULT_DATA = Path(__file__).parents[1] / "tests" / "data" / "transcripts" / "real"
DATA = Path(os.environ.get("CS_REAL_SESSIONS", DEFAULT_DATA))
SESSIONS = (
    "pi-mono/before-compaction.jsonl",
    "pi-mono/large-session.jsonl",
    "claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    "claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    "claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
)
QUICK_REQUESTS = 60
LANGCHAIN = "LangChain trim_messages"
#: The held-out sessions (issue 41): real sessions the policy was not tuned on.
DEFAULT_HELDOUT = DEFAULT_DATA.parent / "heldout"
HELDOUT_DATA = Path(os.environ.get("CS_HELDOUT_SESSIONS", DEFAULT_HELDOUT))
HELDOUT = "held-out"


def heldout_sessions(folder: Path = HELDOUT_DATA) -> tuple[str, ...]:
    """Every session log under ``folder`` (relative paths, sorted); none when it is absent."""
    if not folder.is_dir():
        return ()
    return tuple(sorted(str(p.relative_to(folder)) for p in folder.rglob("*.jsonl")))


def _label(name: str) -> str:
    return Path(name).stem[:18]


def replay_all(
    quick: bool = False,
    options: ReplayOptions | None = None,
    data: Path = DATA,
    sessions: tuple[str, ...] = SESSIONS,
) -> list[Replay]:
    """Every session replayed (the first :data:`QUICK_REQUESTS` requests of the long ones when
    ``quick``)."""
    out = []
    for name in sessions:
        transcript = read_transcript(data / name)
        if quick and len(transcript.requests) > QUICK_REQUESTS:
            transcript = dataclasses.replace(
                transcript, requests=transcript.requests[:QUICK_REQUESTS]
            )
        out.append(replay(transcript, options or ReplayOptions(ttl="5m", thinking=True)))
    return out


def _rows(where: str, replays: list[Replay], total: bool) -> list[Row]:
    rows = figures(replays)
    ours, keep, recorded = rows[SIDECAR], rows[KEEP_EVERYTHING], rows[RECORDED]
    lang = rows.get(LANGCHAIN)
    output = sum(r.recorded.output_cost for r in replays)
    suite = "real"
    out = [
        Row(
            suite,
            f"cost, {where}, default profile vs keep-everything-then-compact",
            ours.cost,
            "USD",
            peer_name="keep everything, compact at the window (Claude Code's markers)",
            peer=keep.cost,
            ratio_target=1 / 0.75 if total else None,
            notes=f"summaries: ours {ours.summaries} (${ours.summary_cost:.2f}), "
            f"keep-everything {keep.summaries} (${keep.summary_cost:.2f})",
            extra={"policies": {name: f.to_json() for name, f in rows.items()}},
        ),
        Row(
            suite,
            f"cost, {where}, default profile vs the recorded bill",
            ours.cost,
            "USD",
            peer_name="what the agent paid (recorded usage, input side)",
            peer=recorded.input_cost,
            ratio_target=1 / 0.6 if total else None,
            notes=f"recorded output ${output:.2f} (the same for every policy, not counted)",
        ),
    ]
    if lang is not None:
        out.append(
            Row(
                suite,
                f"cost, {where}, default profile vs LangChain",
                ours.cost,
                "USD",
                peer_name=LANGCHAIN,
                peer=lang.cost,
            )
        )
    out.append(
        Row(
            suite,
            f"requests with fewer user turns in view than keep-everything, {where}",
            ours.fewer_turns,
            "requests",
            target=Target(0, "0 (>= the reference's at every request)") if total else None,
            notes=f"of {ours.requests}; mean user turns in view: ours "
            f"{ours.mean(ours.user_turns):.1f}, keep-everything {keep.mean(keep.user_turns):.1f}",
        )
    )
    for label, value, peer, unit, better in (
        ("read share", ours.read_share, keep.read_share, "%", "higher"),
        (
            "writes per new token",
            ours.writes_per_new_token,
            keep.writes_per_new_token,
            "x",
            "lower",
        ),
        (
            "mean tokens in view",
            ours.mean(ours.view_tokens),
            keep.mean(keep.view_tokens),
            "tokens",
            "higher",
        ),
        (
            "mean user turns in view",
            ours.mean(ours.user_turns),
            keep.mean(keep.user_turns),
            "turns",
            "higher",
        ),
        (
            "mean tool-result tokens in view",
            ours.mean(ours.tool_result_tokens),
            keep.mean(keep.tool_result_tokens),
            "tokens",
            "higher",
        ),
    ):
        out.append(
            Row(
                suite,
                f"{label}, {where}, default profile",
                value,
                unit,
                better=better,  # type: ignore[arg-type]
                peer_name=KEEP_EVERYTHING,
                peer=peer,
                notes=_others(label, rows) if total else "",
            )
        )
    if not total:
        return out
    moves = [r.window_moves_back() for r in replays]
    out.append(
        Row(
            suite,
            f"requests whose history window starts before the previous one's, {where}",
            sum(m for m, _ in moves),
            "requests",
            target=Target(0, "0: the start never moves back"),
            notes=f"those requests wrote {sum(w for _, w in moves):,} tokens to the cache",
        )
    )
    out.append(
        Row(
            suite,
            f"largest request + output reserve over the window (provider's count), {where}",
            100 * ours.window_worst,
            "%",
            target=Target(100, "<= 100% of the window"),
            peer_name=KEEP_EVERYTHING,
            peer=100 * keep.window_worst,
            notes=f"{ours.window_over} of {ours.requests} requests over the window",
        )
    )
    return out


def _others(label: str, rows: dict[str, PolicyFigures]) -> str:
    """The same figure for LangChain and the recorded bill (where the log has it)."""
    lang = rows.get(LANGCHAIN)
    recorded = rows[RECORDED]
    parts = []
    if lang is not None:
        parts.append(f"LangChain {_figure(label, lang):,.2f}")
    if label in ("read share", "writes per new token"):
        parts.append(f"recorded {_figure(label, recorded):,.2f}")
    return "; ".join(parts)


def _figure(label: str, row: PolicyFigures) -> float:
    return {
        "read share": row.read_share,
        "writes per new token": row.writes_per_new_token,
        "mean tokens in view": row.mean(row.view_tokens),
        "mean user turns in view": row.mean(row.user_turns),
        "mean tool-result tokens in view": row.mean(row.tool_result_tokens),
    }[label]


def run(options: Options) -> list[Row]:
    rows = _set_rows(SESSIONS, replay_all(options.quick), "")
    held = heldout_sessions()
    if held:
        replays = replay_all(options.quick, data=HELDOUT_DATA, sessions=held)
        rows += _set_rows(held, replays, f"{HELDOUT} ")
    return rows


def _set_rows(sessions: tuple[str, ...], replays: list[Replay], prefix: str) -> list[Row]:
    """A set's rows: one block per session, then its total (``prefix`` marks the held-out
    set's, which also carry ``extra["heldOut"]``)."""
    rows: list[Row] = []
    for name, one in zip(sessions, replays, strict=True):
        label = str(Path(name).with_suffix(""))[:30] if prefix else _label(name)
        rows += _rows(prefix + label, [one], total=False)
    rows += _rows(f"{prefix}total over {len(replays)} sessions", replays, total=True)
    if prefix:
        for row in rows:
            row.extra["heldOut"] = True
    return rows
