"""Work that must not run on the event loop, and how it runs beside it (``sidecar/aio.py``).

- The CPU lane runs one job at a time per event loop (``in_cpu_lane``), while ``in_thread``
  jobs overlap: the jobs here sleep (they let the interpreter go), so only the lane's limit
  keeps them apart.
- A run's journal is created on disk from a worker thread (``RunStore.create_in_thread``):
  every fsync of the creation runs off the event loop's thread.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from sidecar.aio import in_cpu_lane, in_thread
from sidecar.runs.journal import RunStore

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from pathlib import Path

pytestmark = pytest.mark.anyio

JOBS = 4


async def _most_at_once(run: Callable[[Callable[[], None]], Coroutine[Any, Any, None]]) -> int:
    inside, most = 0, 0
    lock = threading.Lock()

    def job() -> None:
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        time.sleep(0.02)
        with lock:
            inside -= 1

    async with anyio.create_task_group() as tg:
        for _ in range(JOBS):
            tg.start_soon(run, job)
    return most


async def test_the_cpu_lane_runs_one_job_at_a_time_where_worker_threads_overlap() -> None:
    assert await _most_at_once(in_thread) > 1  # the jobs can overlap...
    assert await _most_at_once(in_cpu_lane) == 1  # ...the lane keeps them apart


def test_each_event_loop_has_its_own_lane() -> None:
    async def main() -> int:
        return await in_cpu_lane(lambda: 1)

    assert anyio.run(main) == 1
    assert anyio.run(main) == 1  # a lane bound to the first loop would fail here


async def test_a_runs_journal_is_created_with_no_fsync_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    fsyncs: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        fsyncs.append(threading.get_ident())
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    runs = RunStore(tmp_path / "runs")
    journal = await runs.create_in_thread({"runId": "run_01", "sessionId": "ses_01"})
    assert fsyncs, "the creation is durable"
    assert loop_thread not in fsyncs
    assert (journal.dir / "run.json").is_file()
    assert (journal.dir / "events.jsonl").is_file()
    assert runs.get("run_01") is journal  # an open journal, as create() leaves it
