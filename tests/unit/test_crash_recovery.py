"""The moments the crash matrix (tests/e2e/test_crash_matrix.py) hits at random, reproduced
directly on the store: the defects it found stay fixed even on a run where no kill lands on
them."""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pytest

from protocol.snapshots import StoreGcResult
from sidecar.ids import new_id, now_iso
from sidecar.runs.journal import RunStore
from sidecar.store.blobs import BlobStore, git_blob_id
from sidecar.store.gc import collect
from sidecar.store.root import Store

if TYPE_CHECKING:
    from pathlib import Path


def _files(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.is_file())


def test_many_threads_storing_the_same_blob_at_once(tmp_path: Path) -> None:
    """Each writer has its own temporary file: with one shared name, a writer truncated the
    file another had just renamed into place (a torn object under its final id) and the
    other's rename failed."""
    blobs = BlobStore(tmp_path / "blobs")
    blobs.init()
    data = os.urandom(1 << 20)
    start = threading.Barrier(8)

    def put(_: int) -> str:
        start.wait()
        return blobs.put(data)

    for _ in range(5):
        with ThreadPoolExecutor(8) as pool:
            ids = set(pool.map(put, range(8)))
        assert ids == {git_blob_id(data)}
        assert blobs.get(git_blob_id(data)) == data
        path = blobs.root / "objects" / git_blob_id(data)[:2] / git_blob_id(data)[2:]
        assert os.listdir(path.parent) == [path.name], "no temporary file left behind"
        path.unlink()


def test_gc_takes_temporary_files_of_killed_writes_not_of_writes_in_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "store")
    folder = store.blobs.root / "objects" / "ab"
    folder.mkdir(parents=True)
    stale = folder / ".tmp-99999999-0-cdef"  # what a process killed mid-write left
    stale.write_bytes(b"half an object")
    data = b"written while gc runs"
    results: list[StoreGcResult] = []
    real_replace = os.replace

    def replace_after_gc(src: Any, dst: Any) -> None:
        # gc runs between this write's last byte and its rename: its temporary file exists,
        # nothing refers to it yet, and there is no grace
        if not results:
            results.append(collect(store, keep_recent=20, grace_seconds=0, dry_run=False))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_after_gc)
    blob_id = store.blobs.put(data)
    monkeypatch.undo()
    assert not stale.exists()
    assert results[0].collected == 1 and results[0].collected_bytes == len(b"half an object")
    assert store.blobs.get(blob_id) == data
    store.close()


def _run(runs: RunStore) -> Any:
    now = now_iso()
    record = {
        "runId": new_id("run"),
        "sessionId": new_id("ses"),
        "inputId": "0" * 40,
        "status": "created",
        "rounds": 0,
        "headSeq": 0,
        "createdAt": now,
        "updatedAt": now,
        "usage": {},
    }
    journal = runs.create(record)
    journal.append("run.created", {})
    journal.record["status"] = "callingModel"
    journal.sync()
    journal.append("model.completed", {"round": 1, "usage": {"inputTokens": 7}})
    return journal


def test_a_run_killed_between_its_terminal_event_and_its_record_ends_once(
    tmp_path: Path,
) -> None:
    """Recovery believes the journal: the run finished; a second, contradicting terminal
    event ("failed: interrupted" after "completed") must not be appended."""
    journal = _run(RunStore(tmp_path / "runs"))
    journal.append("run.completed", {"status": "completed"})
    journal.close()  # killed here: run.json still says callingModel
    run_id = journal.run_id

    runs = RunStore(tmp_path / "runs")
    assert runs.recover_interrupted() == []
    events = runs.get(run_id).events_after(0)
    assert [e["type"] for e in events] == ["run.created", "model.completed", "run.completed"]
    record = json.loads((tmp_path / "runs" / run_id / "run.json").read_bytes())
    assert record["status"] == "completed" and "failure" not in record
    assert record["usage"] == {"inputTokens": 7}  # the last round's usage was not synced


def test_a_run_killed_mid_round_fails_as_interrupted_once(tmp_path: Path) -> None:
    journal = _run(RunStore(tmp_path / "runs"))
    journal.close()
    run_id = journal.run_id
    runs = RunStore(tmp_path / "runs")
    assert runs.recover_interrupted() == [run_id]
    assert RunStore(tmp_path / "runs").recover_interrupted() == []  # settled for good
    events = RunStore(tmp_path / "runs").get(run_id).events_after(0)
    assert [e["type"] for e in events][-2:] == ["model.completed", "run.completed"]
    assert events[-1]["payload"]["failure"]["code"] == "agent.interrupted"
    record = json.loads((tmp_path / "runs" / run_id / "run.json").read_bytes())
    assert record["status"] == "failed" and record["usage"] == {"inputTokens": 7}
