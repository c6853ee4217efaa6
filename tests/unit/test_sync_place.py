"""Where a durable write waits for the disk (``sidecar/store/sync_place.py``).

A write whose disk has been fast runs on the event loop (a worker thread's hop costs as much
as a fast fsync); one slow write sends the next ones to a worker thread at once, and they come
back once the disk is fast again.  The writes here are real sleeps, timed by the real clock.
"""

from __future__ import annotations

import threading
import time

import pytest

from sidecar.store.sync_place import INLINE_LIMIT_S, SyncPlace

pytestmark = pytest.mark.anyio


def _slow() -> None:
    time.sleep(INLINE_LIMIT_S * 3)


async def test_writes_run_on_the_loop_while_the_disk_is_fast_and_in_a_thread_after_a_slow_one() -> (
    None
):
    place = SyncPlace()
    threads: list[bool] = []

    def write() -> None:
        threads.append(threading.current_thread() is not threading.main_thread())

    def inline() -> bool:  # a call, so that the type checker does not narrow the property
        return place.inline

    await place.run(write)  # nothing timed yet: the first goes to a thread
    await place.run(write)  # fast: on the loop
    assert threads == [True, False]
    assert inline()

    await place.run(_slow)  # a slow one (on the loop: it could not be known)
    assert not inline()
    await place.run(write)
    assert threads[-1] is True  # the next went to a thread

    fast_again = 0
    while not inline():
        await place.run(write)
        fast_again += 1
        assert fast_again < 50, "never back on the loop"
    assert fast_again > 1  # it forgets a slow write slowly
    await place.run(write)
    assert threads[-1] is False


async def test_a_failed_write_raises_and_is_timed() -> None:
    place = SyncPlace()

    def refused() -> None:
        time.sleep(INLINE_LIMIT_S * 2)
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        await place.run(refused)
    assert not place.inline
