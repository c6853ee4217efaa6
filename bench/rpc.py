"""RPC: round trip, event throughput and start-up, against a plain pygls server.

The peer (``bench/peers/pygls_server.py``) is what a host author gets from the same framework
without the sidecar: same stdio framing, same client, no store, no journal, no pipeline.

- trivial round trip: ``server/ping`` one at a time, p50 and p99 of ``options.runs`` x 400
  samples — DESIGN.md §7: p50 <= 0.5 ms, p99 <= 2 ms;
- ``run/event`` notifications delivered: a scripted run streaming 20,000 deltas, from the
  first event to ``run.completed``, every ``seq`` checked present and in order (the sidecar
  journals each event before sending it) — target >= 20,000/s; the peer floods the same
  number of notifications of the same shape with nothing behind them;
- process start to ``initialize`` answered — target <= 300 ms; and, for honesty, start to the
  first real request answered (the server finishes loading after ``initialize``).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Options, Row, Target, percentile
from sidecar.client import SidecarClient

__all__ = ["run"]

PEER = [sys.executable, "-m", "bench.peers.pygls_server"]
PEER_NAME = "plain pygls 2 server"
EVENTS = 20_000


async def _spawn(peer: bool, store: Path, *, initialize: bool = True) -> SidecarClient:
    if peer:
        return await SidecarClient.spawn(command=PEER, initialize=initialize)
    return await SidecarClient.spawn(store=store, initialize=initialize)


async def round_trips(peer: bool, store: Path, samples: int) -> list[float]:
    client = await _spawn(peer, store)
    try:
        for _ in range(200):  # warm
            await client.request("server/ping", {})
        out: list[float] = []
        for _ in range(samples):
            started = time.perf_counter()
            await client.request("server/ping", {})
            out.append((time.perf_counter() - started) * 1000)
        return out
    finally:
        await client.close()


async def event_rate(peer: bool, store: Path, count: int) -> float:
    """Notifications per second received by the client, all of them, in order."""
    client = await _spawn(peer, store)
    seqs: list[int] = []
    done = asyncio.Event()
    first: list[float] = []

    def notified(method: str, params: Any) -> None:
        if method != "run/event":
            return
        if not first:
            first.append(time.perf_counter())
        seqs.append(params["seq"])
        if params.get("type") == "run.completed" or (peer and params["seq"] == count):
            done.set()

    client.on_notification(notified)
    try:
        if peer:
            await client.request("bench/flood", {"count": count, "textBytes": 8})
        else:
            session = await client.request("session/create", {"title": "events"})
            script = {"rounds": [{"deltas": [f"d{i:07d}" for i in range(count)]}]}
            await client.request(
                "run/start",
                {
                    "sessionId": session["sessionId"],
                    "userTurn": [{"type": "text", "text": "stream"}],
                    "script": script,
                },
            )
        await asyncio.wait_for(done.wait(), 120)
        elapsed = time.perf_counter() - first[0]
        if seqs != list(range(1, len(seqs) + 1)):
            raise AssertionError("events lost or out of order")
        if len(seqs) < count:
            raise AssertionError(f"only {len(seqs)} of {count} events arrived")
        return len(seqs) / elapsed
    finally:
        await client.close()


async def start_up(peer: bool, store: Path) -> tuple[float, float]:
    """(ms to ``initialize`` answered, ms to the first request after it answered)."""
    started = time.perf_counter()
    client = await _spawn(peer, store, initialize=False)
    await client.initialize()
    ready = (time.perf_counter() - started) * 1000
    await client.request("server/ping", {})
    first = (time.perf_counter() - started) * 1000
    await client.close()
    return ready, first


def run(options: Options) -> list[Row]:
    samples = 400 * (1 if options.quick else max(options.runs, 5))
    events = 5_000 if options.quick else EVENTS

    async def main() -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="cs-bench-rpc-") as tmp:
            store = Path(tmp)
            out: dict[str, Any] = {}
            for peer in (False, True):
                key = "peer" if peer else "ours"
                trips = await round_trips(peer, store, samples)
                rates = [await event_rate(peer, store, events) for _ in range(options.runs)]
                starts = [await start_up(peer, store) for _ in range(max(options.runs, 5))]
                out[key] = {
                    "p50": statistics.median(trips),
                    "p99": percentile(trips, 99),
                    "events": statistics.median(rates),
                    "start": statistics.median(s[0] for s in starts),
                    "first": statistics.median(s[1] for s in starts),
                }
                sys.stderr.write(f"rpc: measured {'peer' if peer else 'sidecar'}\n")
            return out

    m = asyncio.run(main())
    ours, peer = m["ours"], m["peer"]
    return [
        Row(
            "rpc",
            "trivial round trip p50",
            ours["p50"],
            "ms",
            peer_name=PEER_NAME,
            peer=peer["p50"],
            target=Target(0.5, "<= 0.5 ms"),
        ),
        Row(
            "rpc",
            "trivial round trip p99",
            ours["p99"],
            "ms",
            peer_name=PEER_NAME,
            peer=peer["p99"],
            target=Target(2, "<= 2 ms"),
        ),
        Row(
            "rpc",
            "`run/event` notifications delivered (journaled, in order)",
            ours["events"],
            "events/s",
            better="higher",
            peer_name=f"{PEER_NAME} (notify loop, no journal)",
            peer=peer["events"],
            target=Target(20_000, ">= 20,000/s"),
        ),
        Row(
            "rpc",
            "process start to `initialize` answered",
            ours["start"],
            "ms",
            peer_name=PEER_NAME,
            peer=peer["start"],
            target=Target(300, "<= 300 ms"),
        ),
        Row(
            "rpc",
            "process start to first request answered",
            ours["first"],
            "ms",
            peer_name=PEER_NAME,
            peer=peer["first"],
            notes="the server finishes loading after answering initialize",
        ),
    ]


if __name__ == "__main__":
    from bench.common import render_table

    sys.stdout.write(render_table(run(Options(quick="--quick" in sys.argv))) + "\n")
