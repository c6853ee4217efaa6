"""Three sidecars on one store, written at once (issue 43, acceptance): two ``serve`` processes
and one ``acp`` process (through the official ACP SDK: ``session/new``, then ``serve``'s
methods as extension methods) each create 50 sessions and append 1,000 entries to them
(batches of 5, every session of a process in flight at once), all three at the same time.

Then: every write was acknowledged; every acknowledged entry is on disk at its seq, in the
order it was sent, read back through a process that did not write it; ``session/list`` from
any of the three shows all 150 sessions, each held by the process that created it; a
session handed from one process to another (``session/release`` in A, an append in B)
continues at the next seq; two processes appending to one free session at once: one wins,
the other gets ``session.held`` naming the winner, and nothing is lost or reordered.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest
from acp.exceptions import RequestError

from sidecar.client import RpcError
from tests.e2e.acp_kit import acp_agent, initialize
from tests.e2e.crashkit import jsonl_records

if TYPE_CHECKING:
    from pathlib import Path

    from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio

SESSIONS = 50
ENTRIES = 1000  # per process, over its sessions
BATCH = 5
PER_SESSION = ENTRIES // SESSIONS
TIMEOUT = 120.0

Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


def note(t: str) -> dict[str, Any]:
    return {"kind": "message", "role": "user", "content": [{"type": "text", "text": t}]}


@dataclass
class Writer:
    """One process: how to call it, and what it was acknowledged."""

    name: str
    pid: int
    call: Call
    create: Callable[[], Awaitable[str]]
    acked: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    """sessionId -> (seq, text) of every acknowledged entry, in the order acknowledged."""

    async def run(self) -> None:
        sids = [await self.create() for _ in range(SESSIONS)]
        for sid in sids:
            self.acked[sid] = []
        await asyncio.gather(*(self._fill(i, sid) for i, sid in enumerate(sids)))

    async def _fill(self, index: int, sid: str) -> None:
        for start in range(0, PER_SESSION, BATCH):
            texts = [f"{self.name}/{index}/{k}" for k in range(start, start + BATCH)]
            answer = await self.call(
                "session/append", {"sessionId": sid, "entries": [note(t) for t in texts]}
            )
            self.acked[sid] += [
                (ref["seq"], t) for ref, t in zip(answer["appended"], texts, strict=True)
            ]


async def read_all(call: Call, sid: str) -> list[dict[str, Any]]:
    page = await call("session/read", {"sessionId": sid, "limit": 1000})
    assert not page["hasMore"]
    entries: list[dict[str, Any]] = page["entries"]
    return entries


async def list_all(call: Call) -> list[dict[str, Any]]:
    listed = await call("session/list", {"limit": 500})
    assert "nextCursor" not in listed
    sessions: list[dict[str, Any]] = listed["sessions"]
    return sessions


@pytest.mark.timeout(180)
async def test_three_processes_write_one_store_at_once(
    sidecars: SidecarFactory, store_dir: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    one, two = await sidecars.start(), await sidecars.start()
    async with acp_agent(tmp_path, store_dir) as (conn, editor):
        await initialize(conn)

        async def acp_call(method: str, params: dict[str, Any]) -> Any:
            return await conn.ext_method(f"context-sidecar/{method}", params)

        async def acp_create() -> str:
            return (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id

        def serve_writer(name: str, client: Any) -> Writer:
            async def create() -> str:
                return str((await client.request("session/create", {"title": name}))["sessionId"])

            return Writer(name, client.process.pid, client.request, create)

        assert editor.process is not None
        writers = [
            serve_writer("one", one),
            serve_writer("two", two),
            Writer("acp", editor.process.pid, acp_call, acp_create),
        ]
        started = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(w.run() for w in writers)), TIMEOUT)
        elapsed = time.monotonic() - started
        assert sum(len(t) for w in writers for t in w.acked.values()) == 3 * ENTRIES

        # every acknowledged entry, at its seq, in the order sent: read by another process
        for i, writer in enumerate(writers):
            reader = writers[(i + 1) % 3]
            for sid, acked in writer.acked.items():
                assert [seq for seq, _ in acked] == list(range(1, PER_SESSION + 1))
                entries = await read_all(reader.call, sid)
                assert [(e["seq"], e["content"][0]["text"]) for e in entries] == acked
                records = jsonl_records(store_dir / "sessions" / sid / "history.jsonl")
                assert [r["seq"] for r in records] == list(range(1, PER_SESSION + 1))

        # every process lists all 150, each held by its creator
        holders = {sid: w.pid for w in writers for sid in w.acked}
        for writer in writers:
            listed = await list_all(writer.call)
            assert len(listed) == 3 * SESSIONS
            assert {s["sessionId"]: s["heldBy"]["pid"] for s in listed} == holders
            assert {s["heldBy"]["face"] for s in listed} == {"serve", "acp"}

        # handed over: released in one, written in the acp process at the next seq
        a, b, c = writers
        handed = next(iter(a.acked))
        assert (await a.call("session/release", {"sessionId": handed}))["released"] is True
        answer = await c.call("session/append", {"sessionId": handed, "entries": [note("c1")]})
        assert answer["appended"][0]["seq"] == PER_SESSION + 1
        with pytest.raises(RpcError) as held:
            await a.call("session/append", {"sessionId": handed, "entries": [note("a1")]})
        assert held.value.data_code == "session.held"
        assert held.value.data["details"]["heldBy"]["pid"] == c.pid
        assert held.value.data["details"]["heldBy"]["face"] == "acp"

        # two processes appending to one free session at once: one wins, one is told who
        contested = next(iter(b.acked))
        assert (await b.call("session/release", {"sessionId": contested}))["released"] is True
        outcomes = await asyncio.gather(
            a.call("session/append", {"sessionId": contested, "entries": [note("A")] * 3}),
            c.call("session/append", {"sessionId": contested, "entries": [note("C")] * 3}),
            return_exceptions=True,
        )
        won = [o for o in outcomes if isinstance(o, dict)]
        lost = [o for o in outcomes if not isinstance(o, dict)]
        assert len(won) == 1 and len(lost) == 1, outcomes
        error = lost[0]
        if isinstance(error, RequestError):  # the ACP process lost: the same error data
            data: dict[str, Any] = error.data or {}
        else:
            assert isinstance(error, RpcError), error
            data = error.data
        assert data["code"] == "session.held"
        winner = a if outcomes[0] is won[0] else c
        assert data["details"]["heldBy"]["pid"] == winner.pid
        entries = await read_all(b.call, contested)
        expected = [t for _, t in b.acked[contested]] + ["A" if winner is a else "C"] * 3
        assert [e["content"][0]["text"] for e in entries] == expected
        assert [e["seq"] for e in entries] == list(range(1, PER_SESSION + 4))

        # one process ends: what it held is free, and taken over at the next seq
        await one.close()
        taken = next(sid for sid in a.acked if sid not in (handed, contested))
        by_id = {s["sessionId"]: s for s in await list_all(b.call)}
        assert "heldBy" not in by_id[taken]
        answer = await b.call("session/append", {"sessionId": taken, "entries": [note("b")]})
        assert answer["appended"][0]["seq"] == PER_SESSION + 1
    # (reported: the time three processes took to write 3 x 1,000 entries into 150 sessions)
    print_free = f"3 x {ENTRIES} entries in {3 * SESSIONS} sessions: {elapsed:.1f} s"
    assert elapsed < TIMEOUT, print_free
