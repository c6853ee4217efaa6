"""RPC: round trip, event throughput and start-up, against a plain pygls server.

The peer (``bench/peers/pygls_server.py``) is what a host author gets from the same framework
without the sidecar: same stdio framing, same client, no store, no journal, no pipeline.

- trivial round trip: ``server/ping`` one at a time, p50 and p99 of ``options.runs`` x 400
  samples — DESIGN.md §7: p50 <= 0.5 ms, p99 <= 2 ms;
- ``run/event`` notifications delivered: a scripted run streaming 20,000 deltas, from the
  first event to ``run.completed``, every ``seq`` checked present and in order (the sidecar
  journals each event before sending it) — target >= 20,000/s; the peer floods the same
  number of notifications of the same shape with nothing behind them.  The same figure again
  with a reader that does not decode events (``bench/raw_events.py``): the Python client
  costs about what the server does per event, so this row is the server's own rate.  The
  runs of the sidecar and the peer are interleaved;
- process start to ``initialize`` answered — target <= 300 ms; and process start to the first
  request answered — target <= 250 ms — for a real first request (``session/list``, what an
  editor's session picker sends) and for ``server/ping``; the peer's first request is its
  ``server/ping`` (it has no sessions).  Each start is a new process, measured after one
  warm-up start (byte code cached, as an installed package has it);
- process start to the first ``session/create`` (target <= 0.35x the peer's first answer),
  ``context/assemble`` and ``run/start`` answered.  The start-ups of every first request
  and the peer's are interleaved, one of each per round.

A figure that fails (a server that dies, a client that times out) becomes a failed row with
the reason; the other figures are still measured and the table still printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.common import Options, Row, Target, percentile
from bench.raw_events import raw_event_rate
from sidecar.client import RpcError, SidecarClient

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["run"]

PEER = [sys.executable, "-m", "bench.peers.pygls_server"]
PEER_NAME = "plain pygls 2 server"
EVENTS = 20_000


#: Environment of the servers started (see :func:`_bytecode_env`).
_ENV: dict[str, str] = {}


async def _spawn(peer: bool, store: Path, *, initialize: bool = True) -> SidecarClient:
    if peer:
        return await SidecarClient.spawn(command=PEER, initialize=initialize, env=_ENV)
    return await SidecarClient.spawn(store=store, initialize=initialize, env=_ENV)


async def round_trips(peer: bool, store: Path, samples: int) -> list[float]:
    client = await _spawn(peer, store)
    try:
        if not peer:  # steady state: a run/* request is held until pygls has loaded behind
            # the early dispatch (sidecar/rpc/early.py), so the samples do not share the GIL
            # with that import (the start-up rows measure it)
            with contextlib.suppress(RpcError):
                await client.request("run/get", {"runId": "run_warmup"})
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


@dataclass
class EventRate:
    """One run of the ``run/event`` figure, with what catching up cost."""

    rate: float
    #: ``run/lagged`` notifications received (each followed by a ``run/subscribe``).
    recoveries: int = 0
    #: Events sent again by those re-subscriptions (already seen ones are dropped).
    replayed: int = 0


async def event_rate(peer: bool, store: Path, count: int) -> EventRate:
    """Notifications per second received by the client, all of them, in order.

    A client that reads too slowly gets ``run/lagged {lastSentSeq, retryAfterMs}`` and live
    events pause; like every front end it then re-subscribes from the last seq it has, after
    ``retryAfterMs``, and drops what it already saw.  The time that takes is in the figure."""
    client = await _spawn(peer, store)
    seqs: list[int] = []
    done = asyncio.Event()
    first: list[float] = []
    cost = EventRate(0.0)
    tasks: set[asyncio.Task[None]] = set()
    failure: list[BaseException] = []

    async def resubscribe(run_id: str, after_seq: int, delay_ms: int) -> None:
        try:
            await asyncio.sleep(max(delay_ms, 0) / 1000)
            answer = await client.request("run/subscribe", {"runId": run_id, "afterSeq": after_seq})
            cost.replayed += answer["replayed"]
        except Exception as exc:  # reported by the waiting side
            failure.append(exc)
            done.set()

    def notified(method: str, params: Any) -> None:
        if method == "run/lagged":
            cost.recoveries += 1
            last = seqs[-1] if seqs else 0
            task = asyncio.get_running_loop().create_task(
                resubscribe(params["runId"], last, params["retryAfterMs"])
            )
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            return
        if method != "run/event":
            return
        if not first:
            first.append(time.perf_counter())
        seq = params["seq"]
        if seqs and seq <= seqs[-1]:
            return  # replayed again by a re-subscription: already counted
        seqs.append(seq)
        if params.get("type") == "run.completed" or (peer and seq == count):
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
        if failure:
            raise failure[0]
        elapsed = time.perf_counter() - first[0]
        if seqs != list(range(1, len(seqs) + 1)):
            raise AssertionError("events lost or out of order")
        if len(seqs) < count:
            raise AssertionError(f"only {len(seqs)} of {count} events arrived")
        cost.rate = len(seqs) / elapsed
        return cost
    finally:
        for task in tasks:
            task.cancel()
        await client.close()


async def start_up(
    peer: bool, store: Path, method: str, params: dict[str, Any] | None = None
) -> tuple[float, float]:
    """(ms to ``initialize`` answered, ms to the first request after it answered), from the
    moment the process is started; the first request is ``method`` with ``params``, sent as
    soon as the ``initialize`` answer is in, as a host sends it."""
    started = time.perf_counter()
    client = await _spawn(peer, store, initialize=False)
    try:
        await client.initialize()
        ready = (time.perf_counter() - started) * 1000
        await client.request(method, params or {})
        first = (time.perf_counter() - started) * 1000
    finally:
        await client.close()
    return ready, first


def _bytecode_env(tmp: Path) -> dict[str, str]:
    """Let the servers keep byte code (in a private cache) when the environment forbids it:
    an installed package has its ``.pyc`` files, and a start-up figure that includes
    compiling every module measures the compiler, for the peer as for us."""
    if not (sys.flags.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE")):
        return {}
    return {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(tmp / "pycache")}


#: What an editor extension sends first (its session picker), and the trivial request.
FIRST_REAL_REQUEST = "session/list"

#: The first requests whose start-up is measured (issue 20 item 6): ``(key, method, params)``;
#: ``{session}`` stands for a session made beforehand.  A host's first write (a new chat),
#: its first assembly and its first run (a scripted one: no provider, two deltas).
FIRST_REQUESTS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("ping", "server/ping", {}),
    ("real", FIRST_REAL_REQUEST, {}),
    ("create", "session/create", {"title": "first", "workspaceRoots": ["/tmp"]}),
    (
        "assemble",
        "context/assemble",
        {"sessionId": "{session}", "userTurn": [{"type": "text", "text": "hello"}]},
    ),
    (
        "run",
        "run/start",
        {
            "sessionId": "{session}",
            "userTurn": [{"type": "text", "text": "hello"}],
            "script": {"rounds": [{"deltas": ["d1", "d2"]}]},
        },
    ),
)


def _with_session(params: dict[str, Any], session_id: str) -> dict[str, Any]:
    return {k: session_id if v == "{session}" else v for k, v in params.items()}


async def start_ups(store: Path, starts: int, out: dict[str, Any]) -> None:
    """Every first request of :data:`FIRST_REQUESTS` and the peer's first ``server/ping``,
    ``starts`` new processes each, interleaved (one of each per round, the peer in the
    middle), after one warm-up start each (byte code written, disk cache)."""
    client = await _spawn(False, store)
    try:
        session_id = (await client.request("session/create", {"title": "start-up"}))["sessionId"]
    finally:
        await client.close()
    ours = [(key, method, _with_session(p, session_id)) for key, method, p in FIRST_REQUESTS]
    middle = len(ours) // 2
    rounds: list[tuple[str, str, str, dict[str, Any]]] = [
        *(("ours", k, m, p) for k, m, p in ours[:middle]),
        ("peer", "ping", "server/ping", {}),
        *(("ours", k, m, p) for k, m, p in ours[middle:]),
    ]
    for side, key, method, params in rounds:
        out[side][key] = []
        try:
            await start_up(side == "peer", store, method, params)
        except Exception as exc:
            sys.stderr.write(f"rpc: {side} {key} start-up failed: {exc!r}\n")
            out[side][key] = exc
    for _ in range(starts):
        for side, key, method, params in rounds:
            if isinstance(out[side][key], BaseException):
                continue
            try:
                out[side][key].append(await start_up(side == "peer", store, method, params))
            except Exception as exc:
                sys.stderr.write(f"rpc: {side} {key} start-up failed: {exc!r}\n")
                out[side][key] = exc


async def _measure(
    out: dict[str, Any], key: str, what: str, measure: Callable[[], Awaitable[Any]]
) -> None:
    """``out[key][what]`` = the figure, or the exception that stopped it (a failed figure is
    a failed row, never a failed table)."""
    try:
        out[key][what] = await measure()
    except Exception as exc:
        sys.stderr.write(f"rpc: {key} {what} failed: {exc!r}\n")
        out[key][what] = exc


async def _measure_run(
    out: dict[str, Any], key: str, what: str, measure: Callable[[], Awaitable[Any]]
) -> None:
    """One more run of a repeated figure into the list ``out[key][what]``; the figure fails
    (the exception replaces the list) at the first run that does."""
    runs = out[key].setdefault(what, [])
    if isinstance(runs, BaseException):
        return
    try:
        runs.append(await measure())
    except Exception as exc:
        sys.stderr.write(f"rpc: {key} {what} failed: {exc!r}\n")
        out[key][what] = exc


def run(options: Options) -> list[Row]:
    samples = 400 * (1 if options.quick else max(options.runs, 5))
    events = 5_000 if options.quick else EVENTS
    starts = max(options.runs, 5)

    async def main() -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="cs-bench-rpc-") as tmp:
            store = Path(tmp) / "store"
            _ENV.update(_bytecode_env(Path(tmp)))
            out: dict[str, Any] = {"ours": {}, "peer": {}}
            for peer in (False, True):
                key = "peer" if peer else "ours"

                async def trips(peer: bool = peer) -> list[float]:
                    return await round_trips(peer, store, samples)

                await _measure(out, key, "trips", trips)
            # event rates: the sidecar's and the peer's runs interleaved, with each client
            for _ in range(options.runs):
                for peer in (False, True):
                    key = "peer" if peer else "ours"

                    async def rate(peer: bool = peer) -> EventRate:
                        return await event_rate(peer, store, events)

                    async def raw(peer: bool = peer) -> float:
                        command = PEER if peer else None
                        return await raw_event_rate(command, store, events, {**os.environ, **_ENV})

                    await _measure_run(out, key, "events", rate)
                    await _measure_run(out, key, "raw_events", raw)
            sys.stderr.write("rpc: measured round trips and events\n")
            # the peer serves no sessions: its first request is the ping
            await start_ups(store, starts, out)
            sys.stderr.write("rpc: measured start-ups\n")
            return out

    m = asyncio.run(main())
    ours, peer = m["ours"], m["peer"]

    def row(what: str, unit: str, pick: Callable[[dict[str, Any]], float], **kw: Any) -> Row:
        keys = kw.pop("keys")
        failed = [
            f"{side}: {v!r}"
            for side, d in (("ours", ours), ("peer", peer))
            for k in keys[side]
            if isinstance(v := d.get(k), BaseException)
        ]
        if failed:
            return Row("rpc", what, math.nan, unit, error="; ".join(failed), **kw)
        return Row("rpc", what, pick(ours), unit, peer=pick(peer) if keys["peer"] else None, **kw)

    def starts_of(d: dict[str, Any], k: str, i: int) -> float:
        return float(statistics.median(s[i] for s in d[k]))

    rates_ours = ours.get("events")
    recovered = (
        f"{sum(r.recoveries for r in rates_ours)} `run/lagged` recoveries over {options.runs} "
        f"runs, {sum(r.replayed for r in rates_ours)} events replayed"
        if isinstance(rates_ours, list)
        else ""
    )
    return [
        row(
            "trivial round trip p50",
            "ms",
            lambda d: statistics.median(d["trips"]),
            keys={"ours": ["trips"], "peer": ["trips"]},
            peer_name=PEER_NAME,
            target=Target(0.5, "<= 0.5 ms"),
        ),
        row(
            "trivial round trip p99",
            "ms",
            lambda d: percentile(d["trips"], 99),
            keys={"ours": ["trips"], "peer": ["trips"]},
            peer_name=PEER_NAME,
            target=Target(2, "<= 2 ms"),
        ),
        row(
            "`run/event` notifications delivered (journaled, in order)",
            "events/s",
            lambda d: statistics.median(r.rate for r in d["events"]),
            keys={"ours": ["events"], "peer": ["events"]},
            better="higher",
            peer_name=f"{PEER_NAME} (notify loop, no journal)",
            target=Target(20_000, ">= 20,000/s"),
            notes=f"a client that falls behind catches up as front ends do ({recovered})",
            extra={"lagged_recoveries": recovered},
        ),
        row(
            "`run/event` notifications, read by a raw reader (journaled, in order)",
            "events/s",
            lambda d: statistics.median(d["raw_events"]),
            keys={"ours": ["raw_events"], "peer": ["raw_events"]},
            better="higher",
            peer_name=f"{PEER_NAME} (notify loop, no journal)",
            target=Target(20_000, ">= 20,000/s"),
            notes="frames split on Content-Length, seq found by a byte search: the server's "
            "rate, not the client's (bench/raw_events.py)",
        ),
        row(
            "process start to `initialize` answered",
            "ms",
            lambda d: starts_of(d, "ping", 0),
            keys={"ours": ["ping"], "peer": ["ping"]},
            peer_name=PEER_NAME,
            target=Target(300, "<= 300 ms"),
        ),
        row(
            f"process start to first request answered: `{FIRST_REAL_REQUEST}`",
            "ms",
            lambda d: starts_of(d, "real" if d is ours else "ping", 1),
            keys={"ours": ["real"], "peer": ["ping"]},
            peer_name=f"{PEER_NAME} (`server/ping`)",
            target=Target(250, "<= 250 ms"),
            notes=(
                "answered from the store before pydantic, the wire models and pygls load "
                "(sidecar/methods/light.py), before the event loop when it comes right behind "
                "`initialize` (sidecar/rpc/first_requests.py)"
            ),
        ),
        row(
            "process start to first request answered: `server/ping`",
            "ms",
            lambda d: starts_of(d, "ping", 1),
            keys={"ours": ["ping"], "peer": ["ping"]},
            peer_name=PEER_NAME,
        ),
        row(
            "process start to first request answered: `session/create`",
            "ms",
            lambda d: starts_of(d, "create" if d is ours else "ping", 1),
            keys={"ours": ["create"], "peer": ["ping"]},
            peer_name=f"{PEER_NAME} (`server/ping`)",
            ratio_target=2.86,  # ours <= 0.35x the peer's time (DESIGN.md §7)
            notes=(
                "plain params are written before pydantic and the wire models load "
                "(sidecar/methods/light.py), anything else goes to the model"
            ),
        ),
        row(
            "process start to first request answered: `context/assemble`",
            "ms",
            lambda d: starts_of(d, "assemble" if d is ours else "ping", 1),
            keys={"ours": ["assemble"], "peer": ["ping"]},
            peer_name=f"{PEER_NAME} (`server/ping`)",
        ),
        row(
            "process start to first request answered: `run/start`",
            "ms",
            lambda d: starts_of(d, "run" if d is ours else "ping", 1),
            keys={"ours": ["run"], "peer": ["ping"]},
            peer_name=f"{PEER_NAME} (`server/ping`)",
        ),
    ]


if __name__ == "__main__":
    from bench.common import render_table

    sys.stdout.write(render_table(run(Options(quick="--quick" in sys.argv))) + "\n")
