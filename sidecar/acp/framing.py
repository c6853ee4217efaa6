"""ACP's framing: one JSON-RPC message per line on stdin/stdout, made hostile-input proof.

This is the official SDK's message-level ``Transport`` (``send`` / ``receive`` / ``close``
of decoded messages), so the SDK's ``Connection`` does the JSON-RPC dispatch while the bytes
stay ours.  Ours because the SDK's own newline transport (0.12) skips a line that is not JSON
without an answer, ends the connection on a line that is JSON but not an object (``[]``,
``42``: its receive loop calls ``.get`` on it), and buffers a line of any length.  Here:

- a line that is not JSON gets ``-32700`` (``id: null``), one that is not a request,
  notification or response object gets ``-32600`` (with its ``id`` when one can be read),
  a batch (``[...]``; ACP has none) gets ``-32600``; the connection goes on in every case;
- a line longer than ``max_line_bytes`` is never buffered whole: its bytes are dropped up
  to the next newline and it is answered ``-32600`` (``id: null``, the id was not read);
- blank lines and a trailing ``\\r`` are tolerated; an unterminated last line at EOF is
  read as a line;
- responses from the client with an id that cannot be one of ours (not a string or an
  integer) are dropped with a log line, never handed to the SDK (it would index a dict with
  an unhashable key);
- output goes to the protocol fd only (``serve_acp`` points fd 1 at stderr); strings keep
  their newlines escaped, so one message is always one line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import selectors
from collections import deque
from typing import Any

from protocol.errors import INVALID_REQUEST, PARSE_ERROR, ErrorCode
from sidecar.fdio import pump_in_thread, write_all

__all__ = ["NdjsonStdio"]

logger = logging.getLogger(__name__)

_READ_CHUNK = 256 * 1024
#: Bytes buffered for the client before ``send`` waits for it to read.
_HIGH_WATER = 1024 * 1024


class _Writer(asyncio.Protocol):
    """Pipe protocol with flow control: ``send`` waits while the client is not reading."""

    def __init__(self) -> None:
        self._room = asyncio.Event()
        self._room.set()
        self.lost = False

    def pause_writing(self) -> None:
        self._room.clear()

    def resume_writing(self) -> None:
        self._room.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._room.set()

    async def room(self) -> None:
        await self._room.wait()


class NdjsonStdio:
    """Newline-delimited JSON-RPC messages over an input fd and an output fd."""

    def __init__(self, in_fd: int, out_fd: int, *, max_line_bytes: int) -> None:
        self._in_fd = in_fd
        self._out_fd = out_fd
        self._max = max_line_bytes
        self._buffer = bytearray()
        self._skipping = False
        """Inside an oversized line: drop bytes up to its newline."""
        self._ready: deque[dict[str, Any]] = deque()
        self._errors: deque[dict[str, Any]] = deque()
        self._eof = False
        self._reader: asyncio.StreamReader | None = None
        self._thread_chunks: asyncio.Queue[bytes] | None = None
        self._pipe: asyncio.WriteTransport | None = None
        self._writer = _Writer()
        self._closed = False

    async def open(self) -> None:
        """Watch the fds with asyncio where they allow it (pipes, sockets), else fall back to
        a reading thread and blocking writes (regular files, some terminals)."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_READ_CHUNK)
        inp = os.fdopen(os.dup(self._in_fd), "rb", buffering=0)
        try:
            if not _pollable(self._in_fd):  # /dev/null: asyncio takes it, epoll does not
                raise ValueError("not pollable")
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), inp)
            self._reader = reader
        except (ValueError, OSError):
            inp.close()
            self._start_reading_thread(loop)
        out = os.fdopen(os.dup(self._out_fd), "wb", buffering=0)
        try:
            pipe, _ = await loop.connect_write_pipe(lambda: self._writer, out)
            self._pipe = pipe
        except (ValueError, OSError):
            out.close()

    def _start_reading_thread(self, loop: asyncio.AbstractEventLoop) -> None:
        queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=16)
        self._thread_chunks = queue

        pump_in_thread(self._in_fd, _READ_CHUNK, queue.put, loop, "acp-stdin")

    # --- the SDK's Transport -----------------------------------------------------------------

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:  # an answer after the end: nobody reads it any more
            logger.debug("not sent, the connection is closed: %s", message.get("id"))
            return
        # default=str: a pydantic error's ``ctx`` may hold an exception object
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=str)
        data = line.encode("utf-8") + b"\n"
        if self._pipe is None:
            write_all(self._out_fd, data)
            return
        if self._writer.lost or self._pipe.is_closing():
            raise ConnectionError("the client closed its end of the pipe")
        self._pipe.write(data)
        if self._pipe.get_write_buffer_size() > _HIGH_WATER:
            await self._writer.room()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            while self._errors:
                await self.send(self._errors.popleft())
            if self._ready:
                return self._ready.popleft()
            if self._eof:
                return None
            chunk = await self._read()
            if not chunk:
                self._eof = True
                if self._buffer and not self._skipping:
                    self._line(bytes(self._buffer))
                self._buffer.clear()
                continue
            self._feed(chunk)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._pipe is not None:
            self._pipe.close()

    def backlog(self) -> int:
        """Bytes written but not yet taken by the client."""
        return 0 if self._pipe is None else self._pipe.get_write_buffer_size()

    # --- lines -------------------------------------------------------------------------------

    async def _read(self) -> bytes:
        if self._reader is not None:
            return await self._reader.read(_READ_CHUNK)
        assert self._thread_chunks is not None
        return await self._thread_chunks.get()

    def _feed(self, chunk: bytes) -> None:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            piece = chunk[start:end]
            start = end + 1
            if self._skipping:
                self._skipping = False
                continue
            if len(self._buffer) + len(piece) > self._max:
                self._buffer.clear()
                self._too_long()
                continue
            self._buffer += piece
            self._line(bytes(self._buffer))
            self._buffer.clear()
        rest = chunk[start:]
        if self._skipping or not rest:
            return
        if len(self._buffer) + len(rest) > self._max:
            self._buffer.clear()
            self._skipping = True
            self._too_long()
            return
        self._buffer += rest

    def _too_long(self) -> None:
        logger.warning("dropped a line over %d bytes", self._max)
        self._error(
            None,
            INVALID_REQUEST,
            f"message over {self._max} bytes; dropped",
            ErrorCode.REQUEST_TOO_LARGE,
        )

    def _line(self, line: bytes) -> None:
        line = line.strip()
        if not line:
            return
        try:
            message = json.loads(line)
        except ValueError as exc:
            logger.warning("a line that is not JSON: %s", exc)
            self._error(None, PARSE_ERROR, f"parse error: {exc}", ErrorCode.PARSE_ERROR)
            return
        except RecursionError:
            self._error(None, INVALID_REQUEST, "nested too deep", ErrorCode.REQUEST_TOO_DEEP)
            return
        if isinstance(message, list):
            self._error(None, INVALID_REQUEST, "batches are not supported by ACP")
            return
        if not isinstance(message, dict):
            self._error(None, INVALID_REQUEST, "a message must be a JSON object")
            return
        problem = _envelope_problem(message)
        if problem is None:
            self._ready.append(message)
            return
        msg_id = message.get("id")
        if "method" not in message and msg_id is None and "id" in message and "error" in message:
            # JSON-RPC's answer to what could not be tied to a request (a line it could not
            # parse; Toad answers a notification it does not know this way): nothing to
            # deliver, nothing wrong with the connection
            logger.info("the client answered an error with id null: %s", _brief(message["error"]))
            return
        if "method" not in message and isinstance(msg_id, (str, int)):
            # a malformed response: JSON-RPC never answers a response
            logger.warning("dropped a malformed response (id %r): %s", msg_id, problem)
            return
        if "method" not in message and ("result" in message or "error" in message):
            logger.warning("dropped a response: %s", problem)
            return
        self._error(msg_id if _valid_id(msg_id) else None, INVALID_REQUEST, problem)

    def _error(
        self, msg_id: Any, code: int, message: str, data_code: str = ErrorCode.INVALID_REQUEST
    ) -> None:
        error = {"code": code, "message": message, "data": {"code": data_code}}
        self._errors.append({"jsonrpc": "2.0", "id": msg_id, "error": error})


def _pollable(fd: int) -> bool:
    """Whether the event loop's selector can watch ``fd``: asyncio accepts any character
    device as a pipe, but epoll refuses some (``/dev/null`` as stdin: EPERM, raised in a
    callback, and the connection would never read)."""
    with selectors.DefaultSelector() as probe:
        try:
            probe.register(fd, selectors.EVENT_READ)
        except (OSError, ValueError):
            return False
    return True


def _brief(error: Any) -> str:
    """An error object as a log line says it (code and message, cut)."""
    if isinstance(error, dict):
        return f"{error.get('code')!r} {str(error.get('message', ''))[:200]!r}"
    return repr(error)[:200]


def _valid_id(value: Any) -> bool:
    return value is None or (isinstance(value, (str, int)) and not isinstance(value, bool))


def _envelope_problem(message: dict[str, Any]) -> str | None:
    """Why ``message`` is not a JSON-RPC request, notification or response (None: it is)."""
    if "id" in message and not _valid_id(message["id"]):
        return "id must be a string, an integer or null"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "method must be a string"
        params = message.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            return "params must be an object or an array"
        return None
    if "id" not in message or message["id"] is None:
        return "neither a request (method) nor a response (id)"
    if "result" not in message and "error" not in message:
        return "a response needs result or error"
    return None
