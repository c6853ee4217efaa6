"""A blocking JSON-RPC client over a child's pipes, for figures the client must not set.

The asyncio :class:`sidecar.client.SidecarClient` costs ~0.15-0.25 ms of a round trip on this
machine (two event-loop wake-ups and its own dispatch; a ``server/ping`` takes 0.05 ms to a
client that writes and then blocks in ``read``).  Where a figure is about the server — how
long a durable append takes it — this client sends a request and reads until its answer, with
no event loop: what remains is the server's time and the pipes'.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from typing import Any

__all__ = ["RawClient"]


class RawClient:
    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self._process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, env=env
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._in = self._process.stdin.fileno()
        self._out = self._process.stdout.fileno()
        self._buf = b""
        self._ids = itertools.count(1)
        self.request("initialize", {"processId": None, "capabilities": {}})
        self._send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, separators=(",", ":")).encode()
        data = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        while data:
            data = data[os.write(self._in, data) :]

    def _message(self) -> dict[str, Any]:
        while True:
            sep = self._buf.find(b"\r\n\r\n")
            if sep >= 0:
                colon = self._buf.index(b":")
                length = int(self._buf[colon + 1 : self._buf.index(b"\r\n", colon)])
                end = sep + 4 + length
                if len(self._buf) >= end:
                    body, self._buf = self._buf[sep + 4 : end], self._buf[end:]
                    message: dict[str, Any] = json.loads(body)
                    return message
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                raise ConnectionError("the server exited")
            self._buf += chunk

    def request(self, method: str, params: Any) -> Any:
        msg_id = next(self._ids)
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        while True:
            message = self._message()
            if message.get("id") == msg_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self._send({"jsonrpc": "2.0", "method": "exit"})
        except (ConnectionError, OSError):
            pass
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        assert self._process.stdout is not None
        self._process.stdout.close()
