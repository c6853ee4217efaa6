"""kill -9 in the middle of a stream of appends loses no acknowledged entry (DESIGN.md §8)."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import pytest

from tests.e2e.crashkit import Appends, kill_after_progress

if TYPE_CHECKING:
    from pathlib import Path

    from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio

KILLS = 24
IN_FLIGHT = 8
MIN_ACKS_PER_KILL = 5


@pytest.mark.slow
async def test_kill_9_during_appends_loses_nothing_acknowledged(
    sidecars: SidecarFactory, store_dir: Path
) -> None:
    rng = random.Random(20261130)
    appends = Appends(rng)
    kills_mid_stream = 0
    for _ in range(KILLS):
        client = await sidecars.start()
        await appends.restart(client)
        kill = await kill_after_progress(
            client,
            appends.operation(client),
            rng=rng,
            concurrency=IN_FLIGHT,
            min_acks=MIN_ACKS_PER_KILL,
            max_extra_s=0.15,
        )
        kills_mid_stream += kill.in_flight > 0
    assert kills_mid_stream >= KILLS // 2, "the kills should land while appends are in flight"
    assert len(appends.acked) >= KILLS * MIN_ACKS_PER_KILL
    final = await sidecars.start()
    await appends.check_final(final, store_dir)
