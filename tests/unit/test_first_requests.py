"""The requests right behind ``initialize`` that ``serve`` answers before the event loop
starts, and what it leaves for the transport, in order (``sidecar/rpc/first_requests.py``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.framing import BadHeader, FrameDecoder, encode_frame
from sidecar.methods.light import LightServer
from sidecar.rpc import first_requests
from sidecar.rpc.first_requests import answer_first_requests
from sidecar.rpc.handshake import EarlyStart
from sidecar.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    store = Store(tmp_path / "store")
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def server(store: Store) -> LightServer:
    return LightServer(store, 1 << 20, "2026-01-01T00:00:00.000Z")


@pytest.fixture
def pipes() -> Iterator[tuple[int, int, int, int]]:
    """(client writes, server reads, server writes, client reads)."""
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    try:
        yield in_write, in_read, out_write, out_read
    finally:
        for fd in (in_read, in_write, out_read, out_write):
            os.close(fd)


@pytest.fixture(autouse=True)
def _short_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    # the test's frames are all written before the step starts: no need to wait for more
    monkeypatch.setattr(first_requests, "QUIET_S", 0.01)


def body(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode()


def decoded(data: bytes) -> list[dict[str, Any]]:
    frames = FrameDecoder(1 << 20).feed(data)
    assert all(isinstance(frame, bytes) for frame in frames)
    return [json.loads(frame) for frame in frames if isinstance(frame, bytes)]


def answers(fd: int) -> list[dict[str, Any]]:
    """What the server wrote so far."""
    os.set_blocking(fd, False)
    try:
        return decoded(os.read(fd, 1 << 20))
    except BlockingIOError:
        return []


def early(*items: bytes | BadHeader) -> EarlyStart:
    start = EarlyStart(FrameDecoder(1 << 20))
    start.pending.extend(items)
    return start


INITIALIZED = body({"method": "initialized", "params": {}})
LIST = body({"id": 2, "method": "session/list", "params": {}})
PING = body({"id": "p", "method": "server/ping"})
CREATE = body({"id": 3, "method": "session/create", "params": {"title": "x"}})
SOURCES = body({"id": 4, "method": "context/sources", "params": {"sessionId": "ses_x"}})


def test_light_requests_are_answered_and_the_rest_left_in_order(
    server: LightServer, pipes: tuple[int, int, int, int]
) -> None:
    _, server_in, server_out, client_out = pipes
    start = early(INITIALIZED, LIST, PING, CREATE, SOURCES, LIST)
    assert answer_first_requests(start, server, in_fd=server_in, out_fd=server_out) == 3
    sent = answers(client_out)
    assert [(m["id"], set(m["result"]) >= {"sessionId"} or set(m["result"])) for m in sent] == [
        (2, {"sessions"}),
        ("p", {"time"}),
        (3, True),
    ]
    # the session is written: listed as any other
    [created] = server.store.sessions.list_page_wire(cursor=None, limit=5)[0]
    assert created == sent[2]["result"] and created["title"] == "x"
    # the notification stays for the transport (pygls hears of it), before what stopped it
    assert start.pending == [INITIALIZED, SOURCES, LIST]
    # server/info's latencies count what was answered here (the state shares them)
    counts = server.latencies.wire()["counts"]
    assert isinstance(counts, dict)
    assert {m: sum(row) for m, row in counts.items()} == {
        "server/ping": 1,
        "session/create": 1,
        "session/list": 1,
    }


def test_frames_that_arrive_later_are_read_and_answered(
    server: LightServer, pipes: tuple[int, int, int, int]
) -> None:
    client_in, server_in, server_out, client_out = pipes
    os.write(client_in, encode_frame(INITIALIZED) + encode_frame(PING))
    start = early()
    assert answer_first_requests(start, server, in_fd=server_in, out_fd=server_out) == 1
    assert [m["id"] for m in answers(client_out)] == ["p"]
    assert start.pending == [INITIALIZED] and not start.eof


def test_eof_is_noted_for_the_transport(server: LightServer, tmp_path: Path) -> None:
    path = tmp_path / "stdin"
    path.write_bytes(encode_frame(PING))
    out = tmp_path / "stdout"
    with path.open("rb") as stdin, out.open("wb") as stdout:
        start = early()
        answer_first_requests(start, server, in_fd=stdin.fileno(), out_fd=stdout.fileno())
    assert start.eof and start.pending == []
    assert [m["id"] for m in decoded(out.read_bytes())] == ["p"]


@pytest.mark.parametrize(
    "stop",
    [
        body({"method": "exit"}),
        body({"id": 4, "method": "shutdown"}),
        body({"id": 4, "method": "run/list", "params": {}}),
        body({"id": 4, "method": "session/list", "params": {"limit": "x"}}),  # the model's error
        body({"id": True, "method": "server/ping"}),
        body({"id": 4, "result": None}),
        b"{not json",
        BadHeader("no length"),
    ],
)
def test_anything_else_stops_it_with_everything_after(
    server: LightServer, pipes: tuple[int, int, int, int], stop: bytes | BadHeader
) -> None:
    _, server_in, server_out, client_out = pipes
    start = early(PING, stop, LIST)
    assert answer_first_requests(start, server, in_fd=server_in, out_fd=server_out) == 1
    assert [m["id"] for m in answers(client_out)] == ["p"]
    assert start.pending == [stop, LIST]


def test_a_light_route_that_fails_leaves_the_request_to_the_full_one(
    server: LightServer, pipes: tuple[int, int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, server_in, server_out, client_out = pipes

    def broken(**_: Any) -> Any:
        raise OSError("disk")

    monkeypatch.setattr(server.store.sessions, "list_page_wire", broken)
    start = early(LIST, PING)
    assert answer_first_requests(start, server, in_fd=server_in, out_fd=server_out) == 0
    assert answers(client_out) == [] and start.pending == [LIST, PING]
