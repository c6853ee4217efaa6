"""``run/event`` throughput read by a client that is not the bottleneck.

:func:`bench.rpc.event_rate` reads with the Python client every front end's tests use: it
decodes each notification, which costs about as much as the server spends sending it, so on a
2-core machine that figure measures the client as much as the server.  This reader splits
frames on their ``Content-Length`` and finds an event's ``seq`` with a byte search; only
answers are decoded.  What it reports is how fast the server puts events on the wire.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import TYPE_CHECKING, Any

from sidecar.client import sidecar_command

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["raw_event_rate"]

_CHUNK = 1 << 20


class _RawConnection:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._ids = itertools.count(1)
        self._answers: dict[int, asyncio.Future[Any]] = {}
        self._buf = b""
        self.seqs: list[int] = []
        self.first = 0.0
        self.done = asyncio.Event()
        self._reader = asyncio.get_running_loop().create_task(self._read())
        self.end_seq: int | None = None
        """The seq that ends the stream for the peer (it sends no ``run.completed``)."""

    def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    async def request(self, method: str, params: Any) -> Any:
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._answers[msg_id] = future
        self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await asyncio.wait_for(future, 60)

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while chunk := await stdout.read(_CHUNK):
            self._frames(self._buf + chunk)

    def _frames(self, data: bytes) -> None:
        pos, end = 0, len(data)
        while True:
            sep = data.find(b"\r\n\r\n", pos)
            if sep < 0:
                break
            colon = data.index(b":", pos)  # Content-Length comes first; pygls adds a type
            length = int(data[colon + 1 : data.index(b"\r\n", colon)])
            start = sep + 4
            if start + length > end:
                break
            self._frame(data, start, start + length)
            pos = start + length
        self._buf = data[pos:]

    def _frame(self, data: bytes, start: int, stop: int) -> None:
        at = data.find(b'"seq":', start, stop)
        if at >= 0 and data.find(b'"run/event"', start, stop) >= 0:
            if not self.seqs:
                self.first = time.perf_counter()
            digits = at + 6
            seq = int(data[digits : data.find(b",", digits, stop)])
            self.seqs.append(seq)
            if seq == self.end_seq or data.find(b'"run.completed"', start, stop) >= 0:
                self.done.set()
            return
        message = json.loads(data[start:stop])
        future = self._answers.pop(message.get("id"), None) if "id" in message else None
        if future is not None and not future.done():
            if "error" in message:
                future.set_exception(RuntimeError(str(message["error"])))
            else:
                future.set_result(message.get("result"))
        elif message.get("method") == "run/lagged":
            self.done.set()  # this reader never falls behind; if it did, the figure is void
            self.seqs.append(-1)

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 10)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        self._reader.cancel()


async def raw_event_rate(
    command: list[str] | None, store: Path, count: int, env: dict[str, str]
) -> float:
    """Events per second from the first to the last, all present and in order.  ``command``
    None: the sidecar streams a scripted run of ``count`` deltas; otherwise the peer floods
    ``count`` notifications (``bench/flood``)."""
    argv = command or [*sidecar_command("serve"), "--store", str(store)]
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=env,
        limit=_CHUNK,
    )
    conn = _RawConnection(process)
    try:
        await conn.request("initialize", {"processId": None, "capabilities": {}})
        conn.notify("initialized", {})
        if command is not None:
            conn.end_seq = count
            await conn.request("bench/flood", {"count": count, "textBytes": 8})
        else:
            session = await conn.request("session/create", {"title": "events"})
            script = {"rounds": [{"deltas": [f"d{i:07d}" for i in range(count)]}]}
            await conn.request(
                "run/start",
                {
                    "sessionId": session["sessionId"],
                    "userTurn": [{"type": "text", "text": "stream"}],
                    "script": script,
                },
            )
        await asyncio.wait_for(conn.done.wait(), 120)
        elapsed = time.perf_counter() - conn.first
        if conn.seqs != list(range(1, len(conn.seqs) + 1)):
            raise AssertionError("events lost or out of order (or run/lagged)")
        if len(conn.seqs) < count:
            raise AssertionError(f"only {len(conn.seqs)} of {count} events arrived")
        return len(conn.seqs) / elapsed
    finally:
        await conn.close()
