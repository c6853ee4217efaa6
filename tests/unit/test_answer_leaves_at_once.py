"""An answer leaves as soon as it is sent, not at the end of the event loop's turn.

The transport joins the frames of one turn of the loop into one write (a run's events come
in bursts).  An answer is different: the client waits on it, and the rest of the turn may be
long (other handlers resuming beside it, a large answer being serialised), so the protocol
flushes once an answer is sent.  Here the real protocol, attached to the real transport over
a real pipe, answers a real request; what runs right after the answer (where ``run/start``
starts its run) must already find it in the pipe, after the frame sent before it.
"""

from __future__ import annotations

import fcntl
import json
import os
from typing import TYPE_CHECKING

import anyio
import pytest

from protocol.framing import FrameDecoder
from sidecar.rpc.early import EarlyDispatch
from sidecar.rpc.protocol import SidecarProtocol
from sidecar.rpc.server import attach_server
from sidecar.rpc.transport import StdioTransport

if TYPE_CHECKING:
    from sidecar.methods.state import SidecarState

pytestmark = pytest.mark.anyio


def _drain(fd: int) -> bytes:
    data = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return data
        if not chunk:
            return data
        data += chunk


async def test_what_runs_after_an_answer_finds_it_on_the_wire(state: SidecarState) -> None:
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(read_fd, fcntl.F_SETFL, os.O_NONBLOCK)
    transport = StdioTransport(
        in_fd=-1,
        out_fd=write_fd,
        max_message_bytes=1 << 20,
        interim=EarlyDispatch(None, lambda: state),
    )
    try:
        await transport._open_writer()  # the non-blocking pipe writer of a served connection
        attach_server(state, transport)
        protocol = transport._receiver
        assert isinstance(protocol, SidecarProtocol)
        on_the_wire: list[bytes] = []
        protocol._after_answer[7] = [lambda: on_the_wire.append(_drain(read_fd))]
        transport.send_body(b'{"jsonrpc":"2.0","method":"x/before"}')  # held for the turn
        protocol.handle_body(b'{"jsonrpc":"2.0","id":7,"method":"session/list","params":{}}')
        with anyio.fail_after(10):
            while not on_the_wire:
                await anyio.sleep(0.005)
        decoder = FrameDecoder(1 << 20)
        messages = [json.loads(b) for b in decoder.feed(on_the_wire[0]) if isinstance(b, bytes)]
        assert [m.get("method", m.get("id")) for m in messages] == ["x/before", 7], (
            "the answer was still waiting for the end of the loop's turn"
        )
        assert "sessions" in messages[1]["result"]
    finally:
        if transport._writer is not None:
            transport._writer.close()
        os.close(read_fd)
        os.close(write_fd)
