"""``context-sidecar replay FILE [--store DIR] [--profile P] [--json] [--ttl 5m|1h|none]``.

Reads a session log (Claude Code, pi, Codex, OpenCode:
:func:`sidecar.transcripts.read.read_transcript`), replays it request by request
(:func:`sidecar.transcripts.replay.replay`) and prints what the sidecar would have sent and
cost, beside keeping everything, LangChain and what the agent paid
(:func:`sidecar.transcripts.replay_report.render`; ``--json``: the figures).  The replayed
session is written to ``--store`` when given (else to a temporary store).  ``--profile``: a
profile JSON file (a stored profile's shape, whose ``assembly`` is used, or a prompt profile
itself) or the id of a profile stored in ``--store`` (default: the default store).

A log that cannot be read is one line on stderr naming the file and line, exit code 2 (as
``import``).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

__all__ = ["add_replay_parser", "run_replay"]

logger = logging.getLogger(__name__)


def add_replay_parser(sub: Any) -> None:
    """The ``replay`` subcommand's arguments (``sub``: the CLI's subparsers)."""
    replay = sub.add_parser(
        "replay", help="replay a recorded agent session: what the sidecar would have cost"
    )
    replay.add_argument("file", type=Path, help="a session log (Claude Code, pi, Codex, OpenCode)")
    replay.add_argument(
        "--store", type=Path, default=None, help="write the replayed session here (default: temp)"
    )
    replay.add_argument(
        "--profile", default=None, metavar="ID|FILE", help="a stored profile's id or a JSON file"
    )
    replay.add_argument("--json", action="store_true", help="the figures as JSON")
    replay.add_argument(
        "--ttl",
        choices=("5m", "1h", "none"),
        default="5m",
        help="cache TTL of every policy's markers, expiring from the recorded timestamps "
        "(none: nothing expires); default 5m",
    )
    replay.add_argument(
        "--no-thinking",
        action="store_true",
        help="do not synthesize the thinking recent models keep in the prompt",
    )
    replay.add_argument(
        "--no-compaction",
        action="store_true",
        help="the sidecar never compacts (a host that ignores its advice)",
    )
    replay.add_argument("--format", default=None, help="the log's format (default: sniffed)")


def _profile(spec: str | None, store: Path | None) -> dict[str, Any]:
    """The prompt profile (wire JSON, only what the user set) ``--profile`` names."""
    if spec is None:
        return {}
    path = Path(spec)
    if path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"{spec}: a profile is a JSON object")
        inner = data.get("assembly", data)
        if not isinstance(inner, dict):
            raise ValueError(f"{spec}: assembly is not an object")
        return dict(inner)
    from protocol.snapshots import Profile
    from sidecar.defaults import default_store_root
    from sidecar.store import Store

    opened = Store(store or default_store_root(), read_only=True)
    try:
        profile = Profile.model_validate(opened.profiles.get(spec), by_alias=True)
    finally:
        opened.close()
    assembly: dict[str, Any] = profile.assembly.model_dump(
        mode="json", by_alias=True, exclude_unset=True
    )
    return assembly


def run_replay(args: argparse.Namespace) -> int:
    from sidecar.errors import SidecarError
    from sidecar.transcripts.model import TranscriptError
    from sidecar.transcripts.read import read_transcript
    from sidecar.transcripts.replay import ReplayOptions, replay
    from sidecar.transcripts.replay_report import render, report_json

    try:
        profile = _profile(args.profile, args.store)
    except (OSError, ValueError, SidecarError) as exc:
        sys.stderr.write(f"--profile {args.profile}: {exc}\n")
        return 2
    try:
        transcript = read_transcript(args.file, args.format)
    except TranscriptError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    options = ReplayOptions(
        profile=profile,
        ttl=args.ttl,
        thinking=not args.no_thinking,
        follow_advice=not args.no_compaction,
        store=args.store,
    )
    try:
        result = replay(transcript, options)
    except ValueError as exc:  # a profile the pipeline refuses
        sys.stderr.write(f"cannot replay {args.file}: {exc}\n")
        return 2
    except Exception as exc:  # a log the replay cannot follow: one line, the details logged
        logger.debug("replay of %s failed", args.file, exc_info=True)
        sys.stderr.write(f"cannot replay {args.file}: {type(exc).__name__}: {exc}\n")
        return 1
    if args.json:
        sys.stdout.write(json.dumps(report_json(result), indent=2) + "\n")
    else:
        sys.stdout.write(render(result))
    return 0
