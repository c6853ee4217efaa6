"""Whatever arrives before ``initialize`` — the frames the early handshake reads itself,
before the server has loaded — is answered exactly as the server would, and nothing read with
it is lost (``sidecar/rpc/handshake.py``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.framing import encode_frame
from sidecar.client import SidecarClient
from tests.conftest import SidecarFactory, assert_valid_frames

pytestmark = pytest.mark.anyio


def _frame(message: dict[str, Any]) -> bytes:
    return encode_frame(json.dumps(message).encode())


INITIALIZE: dict[str, Any] = {"processId": None, "capabilities": {}}

#: First bytes a confused or hostile client might send before its ``initialize``.
PREFIXES = st.one_of(
    st.binary(max_size=64).map(lambda b: b.replace(b"Content-Length", b"")),
    st.just(b"Content-Length: 5\r\n\r\n{bad}"),
    st.just(b"Content-Length: nope\r\n\r\n"),
    st.just(_frame({"jsonrpc": "2.0", "id": "x", "method": "initialize", "params": 5})),
    st.just(_frame({"jsonrpc": "2.0", "id": 9, "method": "session/list", "params": {}})),
    st.just(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})),
    st.just(encode_frame(b"[" * 5000 + b"]" * 5000)),
    st.just(_frame({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": INITIALIZE})[:-3]),
)


async def _first_frame_then_initialize(prefix: bytes) -> None:
    client = await SidecarClient.spawn(initialize=False, record=True)
    try:
        client.send_raw(prefix + b"\r\n\r\n" if prefix.endswith(b"\r\n") else prefix)
        # A well-formed initialize.  A prefix that announced a body longer than it sent
        # swallows the start of it (the server answers that garbage with an error and
        # resyncs), so the client sends it again, as a real one would after a timeout.
        result = None
        for _ in range(3):
            _, future = client.start_request("initialize", INITIALIZE)
            try:
                result = await asyncio.wait_for(future, 5)
                break
            except TimeoutError:
                continue
        assert result is not None and "contextSidecar" in result["capabilities"]["experimental"]
        client.notify("initialized", {})
        assert "time" in await asyncio.wait_for(client.request("server/ping", {}), 15)
    finally:
        await client.close()
    messages = assert_valid_frames(client.stdout_bytes)
    assert all("traceback" not in json.dumps(m).lower() for m in messages)
    assert all(
        m["error"].get("data", {}).get("code") not in (None, "server.internal")
        for m in messages
        if "error" in m
    )


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(prefix=PREFIXES)
def test_anything_before_initialize_is_answered_and_the_connection_lives(prefix: bytes) -> None:
    asyncio.run(_first_frame_then_initialize(prefix))


async def test_a_request_before_initialize_pipelined_with_it(sidecars: SidecarFactory) -> None:
    """``session/list`` first (refused: not initialized), ``initialize`` right behind it in the
    same write: the server, not the early path, answers both."""
    client = await sidecars.start(initialize=False)
    client.send_raw(
        _frame({"jsonrpc": "2.0", "id": 101, "method": "session/list", "params": {}})
        + _frame({"jsonrpc": "2.0", "id": 102, "method": "initialize", "params": INITIALIZE})
    )
    for _ in range(300):
        answered = [m for m in assert_valid_frames(client.stdout_bytes) if "id" in m]
        if len(answered) == 2:
            break
        await asyncio.sleep(0.05)
    by_id = {m["id"]: m for m in answered}
    assert sorted(by_id) == [101, 102]  # (JSON-RPC answers need not come in order)
    assert by_id[101]["error"]["data"]["code"] == "server.not_initialized"
    assert "contextSidecar" in by_id[102]["result"]["capabilities"]["experimental"]
