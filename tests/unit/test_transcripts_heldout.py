"""The held-out real sessions (``tests/data/transcripts/heldout``, issue 41) are the bytes their
README names, each beside its repository's MIT licence, and read into transcripts that agree
with a separate plain scan of each file: requests and their usage, calls and results,
compactions — the line holding two entries included; for the Claude Code ones, one request a
``requestId`` with its usage once, as for the public Claude Code sessions."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench.real import DEFAULT_DATA, HELDOUT_DATA, SESSIONS, heldout_sessions
from protocol.entries import ToolCallPart, ToolResultPart
from sidecar.transcripts.read import read_transcript
from tests.unit.test_transcripts_real import claude_scan

HELDOUT = Path(__file__).resolve().parents[1] / "data" / "transcripts" / "heldout"
PI = sorted((HELDOUT / "pi-mono").glob("*.jsonl"))
CLAUDE = sorted((HELDOUT / "claude-code").glob("*/session.jsonl"))


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
    assert len(PI) == 2 and len(CLAUDE) == 2
    for path in [*PI, *CLAUDE]:
        assert (path.parent / "LICENSE").read_text().startswith("MIT License")
        name = path.relative_to(HELDOUT).as_posix()
        entry = re.search(rf"`{re.escape(name)}`.*?blob\s+`([0-9a-f]{{40}})`", readme, re.S)
        assert entry is not None, f"{name} not in the README"
        assert blob_id(path) == entry.group(1)


def test_the_bench_replays_every_held_out_file_and_none_of_the_public_five() -> None:
    assert HELDOUT_DATA == HELDOUT
    held = sorted(p.relative_to(HELDOUT).as_posix() for p in [*PI, *CLAUDE])
    assert heldout_sessions() == tuple(held)
    public = {blob_id(DEFAULT_DATA / s) for s in SESSIONS if (DEFAULT_DATA / s).exists()}
    assert not public & {blob_id(p) for p in [*PI, *CLAUDE]}


@pytest.mark.parametrize("path", CLAUDE, ids=lambda p: p.parent.name)
def test_a_held_out_claude_code_session_agrees_with_a_plain_scan(path: Path) -> None:
    scan = claude_scan(path)
    t = read_transcript(path)
    assert t.format == "claude-code" and t.requests
    assert len(t.requests) == len(scan["main"])
    for r, group in zip(t.requests, scan["main"].values(), strict=True):
        usage = group[0]["message"]["usage"]
        assert (r.usage.input, r.usage.cache_read) == (
            usage["input_tokens"],
            usage["cache_read_input_tokens"],
        )
        assert r.usage.cache_write == usage["cache_creation_input_tokens"]
        assert r.model == group[0]["message"]["model"]
    results = [p for m in t.messages for p in m.content if isinstance(p, ToolResultPart)]
    assert len(results) == scan["results"]
    assert len(t.subagents) == scan["roots"]


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
