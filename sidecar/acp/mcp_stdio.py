"""The stdio transport of a session's MCP servers: the ``mcp`` SDK's ``stdio_client`` with
the two bounds it lacks.  POSIX only (process groups, ``killpg``), as the sidecar's own
``run_command`` is.

A message is one line of the server's stdout.  The SDK's client keeps a line however long
it grows (a 20 MB tool result is held, re-joined chunk by chunk, parsed and handed on whole)
and logs a traceback for every line that is not JSON-RPC (a server printing a banner or its
debug output to stdout: 42,800 tracebacks in 25 s).  Here:

- **At most** :data:`MAX_MESSAGE_BYTES` **(8 MiB) per message.**  The bytes of a longer line
  are read and dropped as they come (its first bytes are kept to name the request it
  answers), and that request fails with an error saying how large the answer was and that
  the tool can be asked for less; the server stays connected.  8 MiB holds any result a
  model could be shown (results are cut to about 30,000 characters anyway,
  :mod:`sidecar.tools.bounds`) and a few screenshots' worth of base64, and keeps one server's
  message from costing more than tens of MB of memory.
- **Junk on stdout is logged once-ish, never as a traceback.**  The first line that is not a
  JSON-RPC message is logged as a warning with the server's name and its first 200
  characters; later ones are counted, and the count is logged at most once every
  :data:`JUNK_REPORT_S` seconds and when the server closes.  The lines are ignored: a server
  that also speaks JSON-RPC keeps working.

The process is started in its own process group (``start_new_session``) with the SDK's
default environment plus the server's ``env``, its stderr read into the sidecar's log
(:mod:`sidecar.acp.mcp_stderr`: redacted, cut, bounded in rate); on close
its stdin is closed, it has :data:`EXIT_GRACE_S` to exit, then its whole group is ended (the
SDK's ``terminate_posix_process_tree``: SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import json
import logging
import re
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from sidecar.acp.mcp_stderr import StderrLog, received
from sidecar.redact import redact_text

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from anyio.abc import ByteReceiveStream, Process
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.client.stdio import StdioServerParameters
    from mcp.shared.message import SessionMessage

__all__ = ["EXIT_GRACE_S", "JUNK_REPORT_S", "MAX_MESSAGE_BYTES", "stdio_transport"]

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 8 * 1024 * 1024
#: How often, at most, the count of ignored stdout lines is logged.
JUNK_REPORT_S = 10.0
#: How long a server has to exit once its stdin is closed, before its group is ended.
EXIT_GRACE_S = 2.0

_HEAD = 512
"""Bytes kept of an oversized line: enough to find its ``id``."""
_PARSE_IN_THREAD = 1024 * 1024
"""Lines longer than this are parsed in a worker thread (a few ms per MB)."""
_PREVIEW = 200
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


class _Lines:
    """Turns the server's stdout into messages for the client session (the reader task)."""

    def __init__(self, name: str, deliver: MemoryObjectSendStream[SessionMessage | Exception]):
        self.name = name
        self._deliver = deliver
        self._open = True
        """The session still reads; once it does not, stdout is drained and dropped."""
        self.junk = 0
        self._reported = 0
        self._next_report = 0.0

    async def run(self, stdout: ByteReceiveStream) -> None:
        line = bytearray()
        head = b""
        size = 0  # the current line's length so far
        async with self._deliver:
            async for chunk in received(stdout):
                start = 0
                while start <= len(chunk):
                    end = chunk.find(b"\n", start)
                    piece = chunk[start:] if end < 0 else chunk[start:end]
                    if size + len(piece) <= MAX_MESSAGE_BYTES:
                        line += piece
                    elif size <= MAX_MESSAGE_BYTES:  # crossing the cap: keep its head only
                        head = bytes((line + piece)[:_HEAD])
                        line.clear()
                    size += len(piece)
                    if end < 0:
                        break
                    if size > MAX_MESSAGE_BYTES:
                        await self._oversized(head, size)
                    else:
                        await self._line(bytes(line))
                    line.clear()
                    head, size, start = b"", 0, end + 1
        self.report()

    async def _line(self, data: bytes) -> None:
        if not data.strip() or not self._open:
            return
        from mcp import types as mcp_types
        from mcp.shared.message import SessionMessage

        def parse() -> SessionMessage | None:
            try:
                message = mcp_types.jsonrpc_message_adapter.validate_json(data, by_name=False)
            except ValueError:  # not JSON, or not JSON-RPC (pydantic's errors are ValueErrors)
                return None
            return SessionMessage(message)

        parsed = await anyio.to_thread.run_sync(parse) if len(data) > _PARSE_IN_THREAD else parse()
        if parsed is None:
            self._junk(data)
        else:
            await self._send(parsed)

    async def _oversized(self, head: bytes, size: int) -> None:
        """A line over the cap: an error answer to the request it answers, if it names one."""
        from mcp import types as mcp_types
        from mcp.shared.message import SessionMessage

        found = _ID.search(head)
        if found is None or b'"method"' in head:
            logger.warning(
                "MCP server %r sent a message of %d bytes, over the %d MiB one may be; dropped",
                self.name,
                size,
                MAX_MESSAGE_BYTES >> 20,
            )
            return
        request_id = json.loads(found.group(1))
        logger.warning(
            "MCP server %r answered request %s with %d bytes, over the %d MiB an answer may "
            "be; not read",
            self.name,
            request_id,
            size,
            MAX_MESSAGE_BYTES >> 20,
        )
        error = mcp_types.JSONRPCError(
            jsonrpc="2.0",
            id=request_id,
            error=mcp_types.ErrorData(
                code=mcp_types.INTERNAL_ERROR,
                message=(
                    f"the answer was {size:,} bytes, over the {MAX_MESSAGE_BYTES >> 20} MiB an "
                    "MCP message may be here, and was not read; ask the tool for less (a "
                    "narrower query, a page, a limit)"
                ),
            ),
        )
        await self._send(SessionMessage(error))

    async def _send(self, message: SessionMessage) -> None:
        if not self._open:
            return
        try:
            await self._deliver.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._open = False  # the session is gone: drain what is left and drop it

    def _junk(self, data: bytes) -> None:
        self.junk += 1
        now = anyio.current_time()
        if self.junk == 1:
            preview = data[:_PREVIEW].decode("utf-8", "replace")
            logger.warning(
                "MCP server %r wrote a line to stdout that is not JSON-RPC (ignored; a server "
                "logs to stderr; further lines are only counted): %r",
                self.name,
                redact_text(preview),
            )
            self._reported, self._next_report = 1, now + JUNK_REPORT_S
        elif now >= self._next_report:
            self.report()
            self._next_report = now + JUNK_REPORT_S

    def report(self) -> None:
        """Log how many junk lines came since the last report (if any did)."""
        if self.junk > self._reported:
            logger.warning(
                "MCP server %r: %d more lines on stdout that are not JSON-RPC, ignored",
                self.name,
                self.junk - self._reported,
            )
            self._reported = self.junk


@asynccontextmanager
async def stdio_transport(
    name: str, params: StdioServerParameters
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
    ]
]:
    """The server ``name`` started with ``params``: the read and write streams of a
    ``ClientSession``.  Raises ``OSError`` when it cannot be started."""
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(
        [params.command, *params.args],
        env=get_default_environment() | (params.env or {}),
        cwd=params.cwd,
        start_new_session=True,
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    lines = _Lines(name, read_writer)
    writer_done = anyio.Event()

    async def write() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    body = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((body + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the server stopped reading: the session sees the end
        finally:
            writer_done.set()

    assert process.stdout is not None and process.stderr is not None
    async with anyio.create_task_group() as tg:
        tg.start_soon(lines.run, process.stdout)
        tg.start_soon(StderrLog(name).run, process.stderr)
        tg.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(0.5):
                    await writer_done.wait()
                await _stop(process)
                for stream in (read_stream, write_stream, read_writer, write_reader):
                    await stream.aclose()
            tg.cancel_scope.cancel()
    lines.report()


async def _stop(process: Process) -> None:
    """Stdin closed, a grace to exit, then the whole process group ended."""
    from mcp.os.posix.utilities import terminate_posix_process_tree

    assert process.stdin is not None and process.stdout is not None
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, EXIT_GRACE_S):
        await terminate_posix_process_tree(process, EXIT_GRACE_S)
        await _exited(process, EXIT_GRACE_S)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.aclose()


async def _exited(process: Process, timeout_s: float) -> bool:
    """Whether the process ended within ``timeout_s``.  Polled, not ``process.wait()``: on
    asyncio that also waits for its pipes to close, which a child that inherited them keeps
    open after the server itself is gone."""
    with anyio.move_on_after(timeout_s):
        while process.returncode is None:  # noqa: ASYNC110 (see above)
            await anyio.sleep(0.01)
    return process.returncode is not None
