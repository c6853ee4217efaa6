"""The MCP stdio transport's reader (sidecar.acp.mcp_stdio): lines over the per-message cap
are not held and fail the request they answer; junk lines are counted, not logged one by one."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import pytest
from mcp import types as mcp_types
from mcp.shared.message import SessionMessage

from sidecar.acp import mcp_stdio
from sidecar.acp.mcp_stdio import MAX_MESSAGE_BYTES, _Lines

pytestmark = pytest.mark.anyio


class _Chunks:
    """A byte stream giving ``chunks`` one by one, then its end."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks
        self.largest = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._chunks:
            raise anyio.EndOfStream
        chunk = self._chunks.pop(0)
        self.largest = max(self.largest, len(chunk))
        return chunk


def _response(request_id: int, text: str) -> bytes:
    result = {"content": [{"type": "text", "text": text}], "isError": False}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


async def _read(chunks: list[bytes]) -> list[Any]:
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](100)
    await _Lines("srv", send).run(_Chunks(chunks))  # type: ignore[arg-type]
    async with receive:
        return [item.message async for item in receive if isinstance(item, SessionMessage)]


async def test_messages_split_across_chunks_and_crlf_lines_arrive_whole() -> None:
    one, two = _response(1, "a"), _response(2, "b")
    data = one + b"\r\n" + two + b"\n"
    messages = await _read([data[:7], data[7:50], data[50:]])
    assert [m.id for m in messages] == [1, 2]
    assert all(isinstance(m, mcp_types.JSONRPCResponse) for m in messages)


async def test_an_answer_over_the_cap_fails_its_request_and_the_next_arrives() -> None:
    big = _response(7, "x" * (MAX_MESSAGE_BYTES + 10))
    chunks = [big[i : i + 65536] for i in range(0, len(big), 65536)]
    messages = await _read([*chunks, b"\n", _response(8, "ok") + b"\n"])
    assert [type(m) for m in messages] == [mcp_types.JSONRPCError, mcp_types.JSONRPCResponse]
    error, ok = messages
    assert error.id == 7 and f"{len(big):,} bytes" in error.error.message
    assert "ask the tool for less" in error.error.message
    assert ok.id == 8


async def test_a_line_over_the_cap_is_never_held_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_stdio, "MAX_MESSAGE_BYTES", 1000)
    held: list[int] = []
    original = _Lines._oversized

    async def spy(self: _Lines, head: bytes, size: int) -> None:
        held.append(len(head))
        await original(self, head, size)

    monkeypatch.setattr(_Lines, "_oversized", spy)
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})
    messages = await _read([note.encode()[:-1] + b" " * 5000 + b"}\n", _response(3, "ok") + b"\n"])
    assert [m.id for m in messages] == [3]  # a notification over the cap: dropped
    assert held == [512]


async def test_junk_lines_are_logged_once_then_counted(caplog: pytest.LogCaptureFixture) -> None:
    junk = b"".join(b"debug: step %d\n" % i for i in range(10_000))
    with caplog.at_level(logging.WARNING, logger="sidecar.acp.mcp_stdio"):
        messages = await _read(
            [junk[:30_000], junk[30_000:], b"{not json\n", _response(1, "ok") + b"\n"]
        )
    assert [m.id for m in messages] == [1]
    assert [r.exc_info for r in caplog.records] == [None, None]
    first, count = (r.getMessage() for r in caplog.records)
    assert "'srv' wrote a line to stdout that is not JSON-RPC" in first
    assert "'debug: step 0'" in first
    assert "'srv': 10000 more lines on stdout that are not JSON-RPC" in count
