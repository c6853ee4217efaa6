"""Cold sessions shared by appends and assemblies at once, over real stdio (issue 11 item 1).

More sessions than ``CONTEXT_SIDECAR_MAX_LOADED_SESSIONS``, each with a large history already
in the store; a sidecar starts cold and receives every request at once: appends
(event loop) racing assemblies and token-counted reads (worker threads) of the same sessions,
first loads and evictions included.  Then: every session's acknowledged seqs are unique and
gap-free, no request failed, no history file was ever open twice (one loaded state per
session) and no more than the bound stay open once idle; after a restart every acknowledged
entry is there, at its seq, and the store opens clean.
"""

from __future__ import annotations

import asyncio
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from protocol.entries import MessageInput
from sidecar.defaults import MAX_LOADED_SESSIONS_ENV
from sidecar.store import Store
from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio

SESSIONS = 6
MAX_LOADED = 2
HISTORY = 1000  # entries per session before the storm
ROUNDS = 4
TIMEOUT = 45.0
#: A small window: each assembly walks the newest few hundred entries, not all of them.
PROFILE = {"model": "stress", "window": 8000, "maxOutput": 1000}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def message(role: str, t: str) -> dict[str, Any]:
    return {"kind": "message", "role": role, "content": [text(t)]}


def history_fds(pid: int) -> list[str]:
    """The history files the sidecar process has open (one per loaded session)."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.endswith("history.jsonl"):
            out.append(target)
    return out


async def write_histories(root: Path) -> list[str]:
    """The sessions a previous sidecar left behind (written by its store, in-process: the
    same files, quicker than over the wire)."""
    store = Store(root)
    try:
        sids = []
        for i in range(SESSIONS):
            session = await store.sessions.create(
                title=f"s{i}", workspace_roots=[], profile_id=None, meta=None
            )
            batch = [
                MessageInput.model_validate(
                    message(
                        "user" if n % 2 == 0 else "assistant", f"s{i}-h{n} " + "lorem " * (n % 7)
                    )
                )
                for n in range(HISTORY)
            ]
            await store.sessions.append(session.session_id, batch)
            sids.append(session.session_id)
        return sids
    finally:
        store.close()


async def test_cold_sessions_beyond_the_bound_under_concurrent_appends_and_assemblies(
    sidecars: SidecarFactory,
) -> None:
    sids = await write_histories(sidecars.store)

    env = {MAX_LOADED_SESSIONS_ENV: str(MAX_LOADED)}
    client = await sidecars.start(env=env)  # every session cold
    pid = client.process.pid
    sent: dict[str, list[tuple[asyncio.Future[Any], list[str]]]] = defaultdict(list)
    others: list[asyncio.Future[Any]] = []
    for k in range(ROUNDS):
        for i, sid in enumerate(sids):
            texts = [f"s{i}-k{k}-e{j}" for j in range(1 + (i + k) % 2)]
            entries = [message("user", t) for t in texts]
            _, appended = client.start_request(
                "session/append", {"sessionId": sid, "entries": entries}
            )
            sent[sid].append((appended, texts))
            target = sids[(i + k) % SESSIONS]
            others.append(
                client.start_request(
                    "context/assemble",
                    {"sessionId": target, "userTurn": [text(f"turn {k}")], "profile": PROFILE},
                )[1]
            )
            reader = sids[(i + 2 * k + 1) % SESSIONS]
            others.append(
                client.start_request(
                    "session/read",
                    {"sessionId": reader, "afterSeq": HISTORY - 40, "withTokens": True},
                )[1]
            )

    everything = [f for futures in sent.values() for f, _ in futures] + others
    most_open_at_once = 0
    async with asyncio.timeout(TIMEOUT):
        for done in asyncio.as_completed(everything):
            await done  # an error answer raises here
            files = history_fds(pid)
            assert len(files) == len(set(files)), f"a history file open twice: {files}"
            most_open_at_once = max(most_open_at_once, len(files))
    assert most_open_at_once <= SESSIONS
    idle = history_fds(pid)
    assert len(idle) <= MAX_LOADED, idle

    acked: dict[str, dict[int, str]] = {}
    for i, sid in enumerate(sids):
        seqs: dict[int, str] = {}
        for future, texts in sent[sid]:
            refs = future.result()["appended"]
            assert len(refs) == len(texts)
            for ref, t in zip(refs, texts, strict=True):
                assert ref["seq"] not in seqs, f"session {i}: seq {ref['seq']} acknowledged twice"
                seqs[ref["seq"]] = t
        assert sorted(seqs) == list(range(HISTORY + 1, HISTORY + 1 + len(seqs))), i
        acked[sid] = seqs
    for future in others:
        result = future.result()
        if "throughSeq" in result:  # an assembly: a consistent head of its own session
            assert result["throughSeq"] >= HISTORY
    log = sidecars.stderr_of(client)
    for bad in ("Traceback", "Bad file descriptor", "store.corrupt", "store.io_error"):
        assert bad not in log, log[-2000:]
    await client.close()

    again = await sidecars.start(env=env)  # loading checks every line's seq: corrupt fails
    for i, sid in enumerate(sids):
        page = await again.request(
            "session/read", {"sessionId": sid, "afterSeq": HISTORY - 1, "limit": 1000}
        )
        entries = page["entries"]
        assert page["headSeq"] == HISTORY + len(acked[sid]) and not page["hasMore"]
        assert [e["seq"] for e in entries] == list(range(HISTORY, page["headSeq"] + 1))
        assert entries[0]["content"][0]["text"].startswith(f"s{i}-h{HISTORY - 1} ")
        for entry in entries[1:]:
            assert entry["content"][0]["text"] == acked[sid][entry["seq"]]
