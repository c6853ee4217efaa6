"""Many requests in flight at once over real stdio, and two sidecars on one store.

One client keeps hundreds of appends and assemblies for dozens of sessions in flight at
once, then runs scripted model/tool loops on several sessions in parallel.  Nothing may be
interleaved across sessions: each session holds exactly its own entries, in the order they
were sent, with seq 1..n and no gap or duplicate; each assembled prompt holds only its own
session's text; each run's events arrive complete and in order, as journaled.

A second sidecar on the same store writes the store too, but not a session the first holds:
every method that writes that session is refused with ``session.held`` (retryable, naming the
first) and writes nothing, every method that writes only what any process may write (new
sessions, forks, blobs, snapshots, profiles, presets, gc) works, every read works, and it
takes the session over once the first exits.  ``SESSION_WRITES``, ``STORE_WRITES`` and
``NO_STORE_WRITES`` classify every method, so a new one must be placed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from protocol.methods import ALL_METHODS
from sidecar.client import RpcError, SidecarClient
from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio

SESSIONS = 30
APPENDS = 6  # requests per session, each with 1..3 entries
RUNS = 8
TIMEOUT = 60.0


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def entry_text(session: int, append: int, index: int) -> str:
    """A distinctive text: its session, its place, and characters that break naive framing
    (multi-byte, newlines, quotes, a line separator), some of them long."""
    body = f'ünï "cødé" ✓ 🧪 \\ \n\t\u2028 {session}/{append}/{index}'
    size = 200 if (append + index) % 5 == 0 else 1
    return f"s{session:02d}-a{append}-e{index} " + body * size


def tag_of(message_text: str) -> str:
    return message_text.split(" ", 1)[0]


async def gather(futures: list[asyncio.Future[Any]]) -> list[Any]:
    return await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT)


def transcript_texts(prompt: dict[str, Any]) -> list[str]:
    """Texts of the transcript messages of an assembled prompt (the user turn left out)."""
    return [
        part["text"]
        for message in prompt["messages"]
        if message["provenance"][0]["kind"] == "transcript"
        for part in message["content"]
        if part["type"] == "text"
    ]


async def test_many_sessions_appended_and_assembled_at_once(sidecar: SidecarClient) -> None:
    created = await gather(
        [sidecar.start_request("session/create", {"title": f"s{i}"})[1] for i in range(SESSIONS)]
    )
    sids = [c["sessionId"] for c in created]
    assert len(set(sids)) == SESSIONS

    sent: dict[int, list[dict[str, Any]]] = defaultdict(list)  # per session, in send order
    appends: dict[int, list[asyncio.Future[Any]]] = defaultdict(list)
    midway: dict[int, asyncio.Future[Any]] = {}
    for k in range(APPENDS):  # round-robin: every session's requests interleave on the wire
        for i, sid in enumerate(sids):
            entries = []
            for j in range(1 + (i + k) % 3):
                role = "user" if len(sent[i]) % 2 == 0 else "assistant"
                entries.append(
                    {"kind": "message", "role": role, "content": [text(entry_text(i, k, j))]}
                )
                sent[i].append(entries[-1])
            appends[i].append(
                sidecar.start_request("session/append", {"sessionId": sid, "entries": entries})[1]
            )
            if k == APPENDS // 2:  # assemblies race the appends still in flight
                midway[i] = sidecar.start_request(
                    "context/assemble",
                    {"sessionId": sid, "userTurn": [text(f"s{i:02d}-turn mid")]},
                )[1]
    in_flight = [f for fs in appends.values() for f in fs] + list(midway.values())
    assert len(in_flight) == SESSIONS * (APPENDS + 1)
    await gather(in_flight)

    for i, sid in enumerate(sids):
        texts = [e["content"][0]["text"] for e in sent[i]]
        # acknowledged seqs: in send order, 1..n, no gap, no duplicate
        acked = [ref["seq"] for f in appends[i] for ref in f.result()["appended"]]
        assert acked == list(range(1, len(texts) + 1)), (i, acked)
        assert [f.result()["headSeq"] for f in appends[i]] == [
            f.result()["appended"][-1]["seq"] for f in appends[i]
        ]
        # the history: exactly this session's entries, in send order, contents intact
        page = await sidecar.request("session/read", {"sessionId": sid, "limit": 1000})
        assert page["headSeq"] == len(texts) and page["hasMore"] is False
        assert [e["seq"] for e in page["entries"]] == list(range(1, len(texts) + 1))
        assert [(e["role"], e["content"]) for e in page["entries"]] == [
            (e["role"], e["content"]) for e in sent[i]
        ]
        # an assembly made mid-way saw a consistent prefix of this session only
        mid = midway[i].result()
        seen = transcript_texts(mid)
        assert seen == texts[: mid["throughSeq"]], i
        assert mid["messages"][-1]["content"][0]["text"] == f"s{i:02d}-turn mid"

    # all at once again: live assemblies and frozen inputs of every session
    finals = await gather(
        [
            sidecar.start_request(
                "context/assemble", {"sessionId": sid, "userTurn": [text(f"s{i:02d}-turn")]}
            )[1]
            for i, sid in enumerate(sids)
        ]
    )
    frozen = await gather(
        [
            sidecar.start_request(
                "input/freeze", {"sessionId": sid, "userTurn": [text(f"s{i:02d}-turn")]}
            )[1]
            for i, sid in enumerate(sids)
        ]
    )
    snaps = await gather(
        [
            sidecar.start_request(
                "snapshot/assemble", {"sessionId": sid, "inputId": frozen[i]["inputId"]}
            )[1]
            for i, sid in enumerate(sids)
        ]
    )
    stored = await gather(
        [sidecar.start_request("snapshot/get", {"snapshotId": s["snapshotId"]})[1] for s in snaps]
    )
    assert len({s["snapshotId"] for s in snaps}) == SESSIONS
    for i, sid in enumerate(sids):
        texts = [e["content"][0]["text"] for e in sent[i]]
        for prompt in (finals[i], stored[i]):
            assert prompt["throughSeq"] == len(texts)
            assert transcript_texts(prompt) == texts, i
            everything = json.dumps(prompt, ensure_ascii=False)
            tags = {tag_of(t) for t in transcript_texts(prompt)}
            assert all(t.startswith(f"s{i:02d}-") for t in tags)
            others = {f"s{o:02d}-a" for o in range(SESSIONS) if o != i}
            assert not any(o in everything for o in others), f"session {i} shows another's text"
        assert stored[i]["sessionId"] == sid and stored[i]["inputId"] == frozen[i]["inputId"]


# --- parallel runs ------------------------------------------------------------------------------


class RunHost:
    """Collects every run event and answers every tool call (with the path it was asked)."""

    def __init__(self, client: SidecarClient) -> None:
        self.events: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.tool_calls: list[dict[str, Any]] = []
        client.on_notification(self._notified)
        client.on_request("tool/execute", self._execute)

    def _notified(self, method: str, params: Any) -> None:
        if method == "run/event":
            self.events[params["runId"]].append(params)

    async def _execute(self, params: Any) -> Any:
        self.tool_calls.append(params)
        await asyncio.sleep(0.005 * (len(self.tool_calls) % 3))  # answers out of order
        return {"content": [text(f"contents of {params['arguments']['path']}")]}

    def done(self, run_id: str) -> bool:
        return any(e["type"] == "run.completed" for e in self.events[run_id])


def script_for(i: int) -> dict[str, Any]:
    return {
        "rounds": [
            {
                "deltas": [f"r{i}-d{k} " for k in range(6)],
                "delayMs": 3 + i % 4,
                "toolCalls": [
                    {"id": f"c{i}", "name": "read_file", "arguments": {"path": f"s{i}.py"}}
                ],
            },
            {"deltas": [f"done-{i}"]},
        ]
    }


async def test_parallel_runs_keep_their_events_and_history_apart(
    sidecar: SidecarClient, store_dir: Path
) -> None:
    host = RunHost(sidecar)
    created = await gather(
        [sidecar.start_request("session/create", {"title": f"run{i}"})[1] for i in range(RUNS)]
    )
    sids = [c["sessionId"] for c in created]
    tools = [{"name": "read_file", "parameters": {"type": "object"}}]
    started = await gather(
        [
            sidecar.start_request(
                "run/start",
                {
                    "sessionId": sid,
                    "userTurn": [text(f"go {i}")],
                    "tools": tools,
                    "script": script_for(i),
                },
            )[1]
            for i, sid in enumerate(sids)
        ]
    )
    run_ids = [s["runId"] for s in started]
    assert len(set(run_ids)) == RUNS

    async def all_done() -> None:
        while not all(host.done(r) for r in run_ids):
            await asyncio.sleep(0.01)

    await asyncio.wait_for(all_done(), TIMEOUT)
    await asyncio.sleep(0.1)  # an event sent after run.completed would arrive meanwhile
    assert sorted(c["arguments"]["path"] for c in host.tool_calls) == sorted(
        f"s{i}.py" for i in range(RUNS)
    )
    for i, (sid, run_id) in enumerate(zip(sids, run_ids, strict=True)):
        events = host.events[run_id]
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), i
        assert {e["sessionId"] for e in events} == {sid}
        types = [e["type"] for e in events]
        assert types[0] == "run.created" and types.count("run.completed") == 1
        assert types[-1] == "run.completed" and events[-1]["payload"] == {"status": "completed"}
        deltas = [e["payload"]["text"] for e in events if e["type"] == "model.delta"]
        assert deltas == [f"r{i}-d{k} " for k in range(6)] + [f"done-{i}"]
        stored = [e["payload"] for e in events if e["type"] == "tool.resultStored"]
        assert len(stored) == 1
        # what the client got is exactly what was journaled, in order
        journal = (store_dir / "runs" / run_id / "events.jsonl").read_text().splitlines()
        assert [json.loads(line) for line in journal] == events
        run = await sidecar.request("run/get", {"runId": run_id})
        assert run["status"] == "completed" and run["headSeq"] == len(events)
        assert run["sessionId"] == sid and run["rounds"] == 2

        history = await sidecar.request("session/read", {"sessionId": sid})
        parts = [e["content"][-1] for e in history["entries"]]
        assert [e["seq"] for e in history["entries"]] == [1, 2, 3, 4]
        assert parts[0] == text(f"go {i}")
        assert parts[1]["type"] == "toolCall" and parts[1]["arguments"] == {"path": f"s{i}.py"}
        assert parts[2]["type"] == "toolResult"
        assert parts[2]["content"] == [text(f"contents of s{i}.py")]
        assert parts[3] == text(f"done-{i}")


# --- two sidecars, one store --------------------------------------------------------------------


@dataclass(frozen=True)
class Shared:
    """What the writer made, for the reader to read and to try to overwrite."""

    sid: str
    input_id: str
    snapshot_id: str
    run_id: str
    profile_id: str
    preset_id: str
    blob: str
    checkpoint_id: str


Build = Callable[[Shared], dict[str, Any]]

#: Methods that write a session: refused by a sidecar that does not hold it.
SESSION_WRITES: dict[str, Build] = {
    "session/append": lambda s: {"sessionId": s.sid, "entries": [{"kind": "note", "text": "x"}]},
    "session/rename": lambda s: {"sessionId": s.sid, "title": "renamed"},
    "session/delete": lambda s: {"sessionId": s.sid},
    **{
        f"session/{verb}": (
            lambda s: {"sessionId": s.sid, "target": {"kind": "file", "locator": "notes.md"}}
        )
        for verb in ("pin", "unpin", "drop", "recover")
    },
    "session/compact": lambda s: {"sessionId": s.sid, "summary": "sum", "throughSeq": 1},
    "skills/activate": lambda s: {"sessionId": s.sid, "name": "notes"},
    "run/start": lambda s: {
        "sessionId": s.sid,
        "userTurn": [text("x")],
        "script": {"rounds": [{"text": "y"}]},
    },
    "run/resume": lambda s: {"runId": s.run_id},
    "checkpoint/restore": lambda s: {
        "sessionId": s.sid,
        "checkpointId": s.checkpoint_id,
        "files": True,
        "conversation": False,
    },
}

#: Methods that write what any process may write (new sessions, content-addressed objects,
#: whole documents, gc under its own lock): answered by every sidecar on the store.
STORE_WRITES: dict[str, Build] = {
    "session/create": lambda s: {"title": "x"},
    "session/fork": lambda s: {"sessionId": s.sid},
    "input/freeze": lambda s: {"sessionId": s.sid, "userTurn": [text("x")]},
    "snapshot/assemble": lambda s: {"sessionId": s.sid, "inputId": s.input_id},
    "profile/create": lambda s: {"name": "x"},
    "profile/update": lambda s: {"id": s.profile_id, "profile": {"name": "y"}},
    "profile/delete": lambda s: {"id": s.profile_id},
    "preset/create": lambda s: {"name": "x"},
    "preset/update": lambda s: {"id": s.preset_id, "preset": {"name": "y"}},
    "preset/delete": lambda s: {"id": s.preset_id},
    "store/gc": lambda s: {},
}

#: Methods that write nothing to the store: answered by a read-only sidecar.
NO_STORE_WRITES: dict[str, Build] = {
    "session/release": lambda s: {"sessionId": s.sid},  # not held here: nothing to give back
    "session/list": lambda s: {},
    "session/get": lambda s: {"sessionId": s.sid},
    "session/read": lambda s: {"sessionId": s.sid},
    "context/sources": lambda s: {"sessionId": s.sid},
    "context/assemble": lambda s: {"sessionId": s.sid, "userTurn": [text("x")]},
    "context/registerSource": lambda s: {"sessionId": s.sid, "source": {"id": "r", "text": "t"}},
    "context/unregisterSource": lambda s: {"sessionId": s.sid, "id": "r"},
    "skills/list": lambda s: {"sessionId": s.sid},
    "input/get": lambda s: {"inputId": s.input_id},
    "snapshot/get": lambda s: {"snapshotId": s.snapshot_id},
    "snapshot/lower": lambda s: {"snapshotId": s.snapshot_id, "target": "openai-chat"},
    "snapshot/diff": lambda s: {"to": s.snapshot_id},
    "blob/read": lambda s: {"blob": s.blob},
    "profile/get": lambda s: {"id": s.profile_id},
    "profile/list": lambda s: {},
    "preset/get": lambda s: {"id": s.preset_id},
    "preset/list": lambda s: {},
    "run/get": lambda s: {"runId": s.run_id},
    "run/list": lambda s: {"sessionId": s.sid},
    "run/subscribe": lambda s: {"runId": s.run_id, "afterSeq": 0},
    "run/unsubscribe": lambda s: {"runId": s.run_id},
    "run/cancel": lambda s: {"runId": s.run_id},  # already completed: nothing to write
    "tokens/count": lambda s: {"texts": ["x"]},
    "server/info": lambda s: {},
    "server/ping": lambda s: {},
    "server/sleep": lambda s: {"ms": 1},
    "checkpoint/list": lambda s: {"sessionId": s.sid},
    "checkpoint/diff": lambda s: {"sessionId": s.sid, "checkpointId": s.checkpoint_id},
    "store/stats": lambda s: {},
}


def test_every_method_is_classified_as_writing_or_not() -> None:
    requests = {
        m.name for m in ALL_METHODS if m.kind == "request" and m.direction == "clientToServer"
    }
    groups = (SESSION_WRITES.keys(), STORE_WRITES.keys(), NO_STORE_WRITES.keys())
    assert sum(map(len, groups)) == len(set().union(*groups))  # no method in two
    assert set().union(*groups) == requests


def _session_state(root: Path, sid: str) -> dict[str, str]:
    """Every file of a session, and of the runs, and a digest of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for folder in (root / "sessions" / sid, root / "runs")
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def notes_workspace(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("# notes\n")
    (root / "notes.md").write_text("remember\n")
    skill = root / ".agents" / "skills" / "notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: notes\ndescription: Take notes.\n---\nWrite.\n")
    return root


async def _shared(writer: SidecarClient, workspace: Path) -> Shared:
    created = await writer.request(
        "session/create", {"title": "shared", "workspaceRoots": [str(workspace)]}
    )
    sid = created["sessionId"]
    await writer.request(
        "session/append",
        {
            "sessionId": sid,
            "entries": [
                {"kind": "message", "role": "user", "content": [text("first")]},
                {"kind": "message", "role": "assistant", "content": [text("second")]},
            ],
        },
    )
    frozen = await writer.request(
        "input/freeze",
        {
            "sessionId": sid,
            "userTurn": [text("turn")],
            "attachments": [{"kind": "snippet", "path": "log", "content": "shared blob"}],
        },
    )
    snap = await writer.request(
        "snapshot/assemble", {"sessionId": sid, "inputId": frozen["inputId"]}
    )
    profile = await writer.request("profile/create", {"name": "p"})
    preset = await writer.request("preset/create", {"name": "p"})
    run = await writer.request(
        "run/start",
        {"sessionId": sid, "userTurn": [text("go")], "script": {"rounds": [{"text": "ok"}]}},
    )
    for _ in range(1000):
        if (await writer.request("run/get", {"runId": run["runId"]}))["status"] == "completed":
            break
        await asyncio.sleep(0.01)
    # the writer's own live assembly first: token counts are cached before the reader reads
    await writer.request("context/assemble", {"sessionId": sid, "userTurn": [text("x")]})
    checkpoints = await writer.request("checkpoint/list", {"sessionId": sid})
    return Shared(
        sid=sid,
        input_id=frozen["inputId"],
        snapshot_id=snap["snapshotId"],
        run_id=run["runId"],
        profile_id=profile["profileId"],
        preset_id=preset["presetId"],
        blob=frozen["input"]["attachments"][0]["blob"],
        checkpoint_id=checkpoints["checkpoints"][0]["checkpointId"],  # the run's turn
    )


async def test_a_second_sidecar_writes_the_store_but_not_a_session_the_first_holds(
    sidecars: SidecarFactory, store_dir: Path, notes_workspace: Path
) -> None:
    writer = await sidecars.start()
    shared = await _shared(writer, notes_workspace)
    reader = await sidecars.start()
    assert (await writer.request("server/info", {}))["storeWritable"] is True
    assert (await reader.request("server/info", {}))["storeWritable"] is True
    listed = (await reader.request("session/list", {}))["sessions"]
    assert [s["heldBy"]["pid"] for s in listed if s["sessionId"] == shared.sid] == [
        writer.process.pid
    ]

    before = _session_state(store_dir, shared.sid)
    for method, build in SESSION_WRITES.items():
        with pytest.raises(RpcError) as err:
            await reader.request(method, build(shared))
        assert err.value.data_code == "session.held", (method, err.value.message)
        assert err.value.data["retryable"] is True and err.value.data["retryAfterMs"] > 0
        held = err.value.data["details"]["heldBy"]
        assert (held["pid"], held["face"]) == (writer.process.pid, "serve"), method
        assert str(writer.process.pid) in err.value.message
    assert _session_state(store_dir, shared.sid) == before, "a refused write changed the session"
    for method, build in NO_STORE_WRITES.items():
        await reader.request(method, build(shared))  # raises on any error
    for method, build in STORE_WRITES.items():  # (deletes last: after the reads of the same)
        await reader.request(method, build(shared))  # raises on any error
    assert (await reader.request("session/read", {"sessionId": shared.sid})) == (
        await writer.request("session/read", {"sessionId": shared.sid})
    )
    assert (await reader.request("snapshot/get", {"snapshotId": shared.snapshot_id})) == (
        await writer.request("snapshot/get", {"snapshotId": shared.snapshot_id})
    )

    # the writer keeps appending while the reader reads: every page is a consistent prefix
    head = (await writer.request("session/get", {"sessionId": shared.sid}))["headSeq"]
    writes = [
        writer.start_request(
            "session/append",
            {
                "sessionId": shared.sid,
                "entries": [{"kind": "note", "text": f"n{k} " + "é" * (k * 50)}],
            },
        )[1]
        for k in range(40)
    ]
    reads = []
    for _ in range(20):
        reads.append(reader.start_request("session/read", {"sessionId": shared.sid})[1])
        await asyncio.sleep(0.002)
    await gather(writes + reads)
    for page in (f.result() for f in reads):
        notes = [e for e in page["entries"] if e["seq"] > head]
        assert [e["seq"] for e in page["entries"]] == list(range(1, page["headSeq"] + 1))
        assert [e["text"] for e in notes] == [f"n{k} " + "é" * (k * 50) for k in range(len(notes))]
    final = await reader.request("session/read", {"sessionId": shared.sid})
    assert final["headSeq"] == head + 40

    # once the writer is gone the reader takes the session on its next write
    await writer.close()
    appended = await reader.request(
        "session/append", {"sessionId": shared.sid, "entries": [{"kind": "note", "text": "mine"}]}
    )
    assert appended["appended"][0]["seq"] == head + 41
    assert (await reader.request("server/info", {}))["storeWritable"] is True
    profile = await reader.request("profile/create", {"name": "now mine"})
    assert (await reader.request("profile/get", {"id": profile["profileId"]}))["name"] == "now mine"
