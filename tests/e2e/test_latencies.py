"""``server/info``'s ``latencies``: every request the sidecar answered, by method, counted by
how long it took inside the sidecar — so that a host (and ``make soak``) can tell its own
latency from the sidecar's."""

from __future__ import annotations

import pytest

from protocol import methods as m
from protocol.server import ServerInfo
from protocol.sessions import SessionAppendParams, SessionCreateParams
from sidecar.client import RpcError, SidecarClient
from tests.e2e.test_sessions import user

pytestmark = pytest.mark.anyio


async def test_each_answered_request_is_counted_by_how_long_it_took_inside(
    sidecar: SidecarClient,
) -> None:
    # served while pygls loads (right after initialize), or by pygls: counted alike
    created = await sidecar.call(m.SESSION_CREATE, SessionCreateParams(title="timed"))
    await sidecar.call(
        m.SESSION_APPEND, SessionAppendParams(session_id=created.session_id, entries=[user("a")])
    )
    await sidecar.request("run/list", {})  # held for pygls: what follows is pygls'
    for i in range(5):
        await sidecar.call(
            m.SESSION_APPEND,
            SessionAppendParams(session_id=created.session_id, entries=[user(str(i))]),
        )
    await sidecar.request("server/sleep", {"ms": 30})
    with pytest.raises(RpcError):  # answered with an error: counted as well
        await sidecar.call(
            m.SESSION_APPEND, SessionAppendParams(session_id="ses_nope", entries=[user("x")])
        )
    info = await sidecar.call(m.SERVER_INFO)
    assert isinstance(info, ServerInfo)
    bounds, counts = info.latencies.bounds_ms, info.latencies.counts
    assert all(len(row) == len(bounds) + 1 for row in counts.values())
    assert sum(counts["session/append"]) == 7
    assert sum(counts["server/sleep"]) == 1
    assert "server/info" not in counts  # this one is not answered yet
    # the sleep took 30 ms at least: its bucket's bound is not below that
    (slept,) = [i for i, n in enumerate(counts["server/sleep"]) if n]
    assert slept < len(bounds)  # not over 40 s either
    assert bounds[slept] >= 30
    again = await sidecar.call(m.SERVER_INFO)
    assert sum(again.latencies.counts["server/info"]) == 1
    assert again.latencies.counts["session/append"] == counts["session/append"]
