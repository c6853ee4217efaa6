"""The held-out real sessions (``tests/data/transcripts/heldout``, issue 41) are the bytes their
README names, and read into transcripts that agree with a separate plain scan of each file:
requests and their usage, calls and results, compactions — the line holding two entries
included."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench.real import HELDOUT_DATA, SESSIONS, heldout_sessions
from protocol.entries import ToolCallPart, ToolResultPart
from sidecar.transcripts.read import read_transcript

HELDOUT = Path(__file__).resolve().parents[1] / "data" / "transcripts" / "heldout"
PI = sorted((HELDOUT / "pi-mono").glob("*.jsonl"))


def blob_id(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def scan(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Every object with its line number, several to a line where the file has them."""
    decoder = json.JSONDecoder()
    out = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        pos = 0
        while pos < len(line.strip()):
            obj, pos = decoder.raw_decode(line, pos)
            out.append((number, obj))
    return out


def test_the_held_out_files_are_the_bytes_the_readme_names() -> None:
    readme = (HELDOUT / "README.md").read_text()
    assert len(PI) == 2 and (HELDOUT / "pi-mono" / "LICENSE").read_text().startswith("MIT")
    for path in PI:
        entry = re.search(rf"`pi-mono/{path.name}`.*?blob `([0-9a-f]{{40}})`", readme, re.S)
        assert entry is not None, f"{path.name} not in the README"
        assert blob_id(path) == entry.group(1)


def test_the_bench_replays_every_held_out_file_and_none_of_the_public_five() -> None:
    assert HELDOUT_DATA == HELDOUT
    assert heldout_sessions() == tuple(f"pi-mono/{p.name}" for p in PI)
    assert not {Path(s).name for s in SESSIONS} & {p.name for p in PI}


@pytest.mark.parametrize("path", PI, ids=lambda p: p.name)
def test_a_held_out_pi_session_agrees_with_a_plain_scan(path: Path) -> None:
    objs = scan(path)
    glued = sorted({n for n, _ in objs if sum(m == n for m, _ in objs) > 1})
    messages = [o["message"] for _, o in objs if o["type"] == "message"]
    assistants = [m for m in messages if m["role"] == "assistant"]
    t = read_transcript(path)
    assert t.session_id == objs[0][1]["id"] and len(glued) == 1
    assert f"line {glued[0]}: 2 entries written on one line (each read)" in t.warnings
    assert len(t.requests) == len(assistants)
    assert [
        (r.usage.input, r.usage.cache_read, r.usage.cache_write_5m, r.usage.output)
        for r in t.requests
    ] == [
        (
            a["usage"]["input"],
            a["usage"]["cacheRead"],
            a["usage"]["cacheWrite"],
            a["usage"]["output"],
        )
        for a in assistants
    ]
    calls = [b["id"] for a in assistants for b in a["content"] if b["type"] == "toolCall"]
    results = [m["toolCallId"] for m in messages if m["role"] == "toolResult"]
    parts = [p for m in t.messages for p in m.content]
    assert [p.call_id for p in parts if isinstance(p, ToolCallPart)] == calls
    assert [p.call_id for p in parts if isinstance(p, ToolResultPart)] == results
    assert len(t.compactions) == sum(o["type"] == "compaction" for _, o in objs) >= 1
