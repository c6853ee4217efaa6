"""Store benchmark, several writers: appends from 3 processes on one store, against 3
processes each on its own sqlite WAL database (DESIGN.md §7), in the same run.

Ours: three real ``context-sidecar serve`` processes on one store root, each appending the
same entries into its own session, batches of :data:`bench.store.BATCH` awaited one after the
other (an answer means fsynced), all three at once.  The peer: three Python processes, each
with its own sqlite3 database (WAL, ``synchronous=FULL``), committing the same JSON entries
in transactions of the same size, all three at once (a host per window, each with its own
database: what a shared store must not be slower than).  Every process of a side is ready
(started, opened) before a run begins; a run starts all three at one instant and ends when
the last is done.  Figures: total entries/s of the three, the median of the runs.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

from bench.common import Row
from sidecar.client import SidecarClient

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

__all__ = ["PROCESSES", "shared_rows"]

PROCESSES = 3

#: One peer process: its own sqlite database; a run starts on a line from stdin and ends by
#: writing ``done``.
_PEER = r"""
import json, sqlite3, sys
db, entries_path, batch, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open(entries_path) as f:
    entries = json.load(f)
conn = sqlite3.connect(db, isolation_level=None)
if conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] != "wal":
    raise SystemExit("no WAL")
conn.execute("PRAGMA synchronous=FULL")
conn.execute(
    "CREATE TABLE IF NOT EXISTS entries (session TEXT NOT NULL, seq INTEGER NOT NULL,"
    " body TEXT NOT NULL, PRIMARY KEY (session, seq)) WITHOUT ROWID"
)
sys.stdout.write("ready\n")
sys.stdout.flush()
for index in range(runs + 1):
    sys.stdin.readline()
    session, seq = f"s{index}", 0
    for start in range(0, len(entries), batch):
        rows = []
        for entry in entries[start : start + batch]:
            seq += 1
            rows.append((session, seq, json.dumps(entry, separators=(",", ":"))))
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO entries VALUES (?, ?, ?)", rows)
        conn.execute("COMMIT")
    stored = conn.execute("SELECT count(*) FROM entries WHERE session = ?", (session,))
    if stored.fetchone()[0] != len(entries):
        raise SystemExit("lost entries")
    sys.stdout.write("done\n")
    sys.stdout.flush()
"""


def _batches(entries: Sequence[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    return [list(entries[i : i + size]) for i in range(0, len(entries), size)]


def sidecars_on_one_store(
    root: Path, entries: Sequence[dict[str, Any]], batch: int, runs: int
) -> list[float]:
    """Total entries/s of :data:`PROCESSES` sidecars appending at once, one per run (the
    first run warms the processes and is not counted)."""
    chunks = _batches(entries, batch)

    async def fill(client: SidecarClient, session_id: str) -> None:
        head = 0
        for chunk in chunks:
            answer = await client.request(
                "session/append", {"sessionId": session_id, "entries": chunk}
            )
            head += len(chunk)
            if answer["headSeq"] != head:
                raise RuntimeError(f"session/append answered {answer['headSeq']}, not {head}")

    async def main() -> list[float]:
        clients = [await SidecarClient.spawn(store=root) for _ in range(PROCESSES)]
        try:
            rates: list[float] = []
            for index in range(runs + 1):
                sids = [
                    (await c.request("session/create", {"title": f"shared-{index}"}))["sessionId"]
                    for c in clients
                ]
                started = time.perf_counter()
                await asyncio.gather(*(fill(c, s) for c, s in zip(clients, sids, strict=True)))
                elapsed = time.perf_counter() - started
                if index:
                    rates.append(PROCESSES * len(entries) / elapsed)
            return rates
        finally:
            for client in clients:
                await client.close()

    return asyncio.run(main())


def sqlite_processes(
    work: Path, entries: Sequence[dict[str, Any]], batch: int, runs: int
) -> list[float]:
    """Total entries/s of :data:`PROCESSES` processes, each on its own sqlite database."""
    entries_path = work / "shared-entries.json"
    entries_path.write_text(json.dumps(list(entries)))
    peers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _PEER,
                str(work / f"peer-{i}.sqlite3"),
                str(entries_path),
                str(batch),
                str(runs),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(PROCESSES)
    ]
    try:
        for peer in peers:
            assert peer.stdout is not None and peer.stdout.readline() == "ready\n"
        rates: list[float] = []
        for index in range(runs + 1):
            started = time.perf_counter()
            for peer in peers:
                assert peer.stdin is not None
                peer.stdin.write("go\n")
                peer.stdin.flush()
            for peer in peers:
                assert peer.stdout is not None
                if peer.stdout.readline() != "done\n":
                    raise RuntimeError("a sqlite peer failed")
            elapsed = time.perf_counter() - started
            if index:
                rates.append(PROCESSES * len(entries) / elapsed)
        return rates
    finally:
        for peer in peers:
            for pipe in (peer.stdin, peer.stdout):
                if pipe is not None:
                    pipe.close()
            peer.wait(timeout=60)


def shared_rows(
    work: Path, entries: Sequence[dict[str, Any]], batch: int, runs: int, common: dict[str, Any]
) -> list[Row]:
    ours = sidecars_on_one_store(work / "shared-store", entries, batch, runs)
    peer = sqlite_processes(work, entries, batch, runs)
    return [
        Row(
            suite="store",
            what=f"durable appends from {PROCESSES} processes on one store ({batch}/request, RPC)",
            ours=float(statistics.median(ours)),
            unit="entries/s",
            better="higher",
            peer_name=f"{PROCESSES} processes, each its own sqlite3 WAL synchronous=FULL, "
            f"{batch}/txn",
            peer=float(statistics.median(peer)),
            notes=f"{PROCESSES} serve processes, each appending to its own session of one "
            "store at once; total entries/s",
            extra={
                **common,
                "processes": PROCESSES,
                "entries_per_process": len(entries),
                "batch": batch,
                "ours_runs": ours,
                "peer_runs": peer,
            },
        )
    ]
