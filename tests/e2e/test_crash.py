"""kill -9 in the middle of a stream of appends loses no acknowledged entry (DESIGN.md §8)."""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from sidecar.client import SidecarClient
from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio

KILLS = 24
IN_FLIGHT = 8
MIN_ACKS_PER_KILL = 5


#: Every few batches is large (~1 MB): a kill can then land between the pages of one
#: ``write`` and leave a torn tail, which the next open must repair.
BIG_EVERY = 10
BIG_SIZE = 100
PAD = "p" * 8000


def _batch(marker: str, size: int) -> list[dict[str, Any]]:
    pad = PAD if size >= BIG_SIZE else ""
    return [
        {
            "kind": "message",
            "role": "user",
            "content": [{"type": "text", "text": f"{marker}/{i}"}],
            **({"meta": {"pad": pad}} if pad else {}),
        }
        for i in range(size)
    ]


async def _read_all(client: SidecarClient, sid: str, after: int = 0) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    while True:
        page = await client.request(
            "session/read", {"sessionId": sid, "afterSeq": after, "limit": 1000}
        )
        entries += page["entries"]
        if not page["hasMore"]:
            return entries
        after = entries[-1]["seq"]


def _check(entries: list[dict[str, Any]], acked: dict[int, str], after: int = 0) -> None:
    """``entries`` are everything after seq ``after``; check the acknowledged ones among them."""
    expected = list(range(after + 1, after + len(entries) + 1))
    assert [e["seq"] for e in entries] == expected, "seq gap or reuse"
    texts = {e["seq"]: e["content"][0]["text"] for e in entries}
    lost = {seq: text for seq, text in acked.items() if seq > after and texts.get(seq) != text}
    assert not lost, f"acknowledged entries lost or changed: {sorted(lost.items())[:5]}"
    assert len(set(texts.values())) == len(texts), "an entry was written twice"


@pytest.mark.slow
async def test_kill_9_during_appends_loses_nothing_acknowledged(
    sidecars: SidecarFactory, store_dir: Path
) -> None:
    rng = random.Random(20261130)
    acked: dict[int, str] = {}  # seq -> text, for every append whose answer arrived
    sid: str | None = None
    verified = 0  # seqs up to here were checked after an earlier restart
    kills_mid_stream = 0
    for rep in range(KILLS):
        client = await sidecars.start()
        if sid is None:
            sid = (await client.request("session/create", {"title": "crash"}))["sessionId"]
        else:
            fresh = await _read_all(client, sid, after=verified)
            _check(fresh, acked, after=verified)
            verified += len(fresh)
        in_flight: dict[asyncio.Future[Any], list[str]] = {}
        # Kill after real progress, not after wall-clock time: on a loaded machine a fixed
        # delay could pass before any append is acknowledged.
        acked_before = len(acked)
        extra = rng.uniform(0.0, 0.15)
        deadline: float | None = None
        n = 0
        while deadline is None or time.monotonic() < deadline:
            if deadline is None and len(acked) - acked_before >= MIN_ACKS_PER_KILL:
                deadline = time.monotonic() + extra
            while len(in_flight) < IN_FLIGHT:
                marker = f"r{rep}-{n}"
                n += 1
                size = BIG_SIZE if n % BIG_EVERY == 0 else rng.randint(1, 5)
                _, future = client.start_request(
                    "session/append", {"sessionId": sid, "entries": _batch(marker, size)}
                )
                in_flight[future] = [f"{marker}/{i}" for i in range(size)]
            done, _ = await asyncio.wait(
                list(in_flight), timeout=0.005, return_when=asyncio.FIRST_COMPLETED
            )
            for future in done:
                texts = in_flight.pop(future)
                result = future.result()
                for ref, text in zip(result["appended"], texts, strict=True):
                    acked[ref["seq"]] = text
        kills_mid_stream += bool(in_flight)
        client.kill()
        await client.wait()
        for future, texts in in_flight.items():  # answers that arrived before the kill
            if future.done() and future.exception() is None:
                for ref, text in zip(future.result()["appended"], texts, strict=True):
                    acked[ref["seq"]] = text
    assert sid is not None
    assert kills_mid_stream >= KILLS // 2, "the kills should land while appends are in flight"
    final = await sidecars.start()
    entries = await _read_all(final, sid)
    _check(entries, acked)
    assert len(acked) >= KILLS * MIN_ACKS_PER_KILL
    # the file itself is readable line by line, every line a complete record
    history = store_dir / "sessions" / sid / "history.jsonl"
    lines = history.read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert [json.loads(line)["seq"] for line in lines[:-1]] == list(range(1, len(entries) + 1))
