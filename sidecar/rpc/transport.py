"""The stdio transport: frames in from stdin, frames out to the protocol fd, nothing else.

- Reads stdin asynchronously (an asyncio pipe where the fd allows it, a daemon thread
  otherwise) through :class:`protocol.framing.FrameDecoder`, so oversized and malformed frames
  are answered and skipped without ever being buffered whole.
- Writes frames to the protocol fd (a private duplicate of the original stdout; fd 1 itself
  is pointed at stderr by ``serve`` so stray prints can't corrupt the stream): through a
  non-blocking asyncio pipe, the frames of one event-loop iteration joined into one write, in
  the order they were sent; an answer leaves at once, with the frames sent before it
  (:meth:`StdioTransport.send_answer`, or the protocol's :meth:`StdioTransport.flush` after it).
- Starts before pygls has loaded: frames go to :class:`sidecar.rpc.early.EarlyDispatch` until
  :meth:`StdioTransport.attach` hands them to the protocol (held ones first, in order).
- Stops on stdin EOF (once what was held is handled), on ``exit``, or when the client
  process (``initialize.processId``) dies.
- With ``CONTEXT_SIDECAR_TRACE=<path>`` every frame, both directions, is appended to a JSONL
  trace: ``{"time", "dir": "recv"|"send", "message"}``.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
from typing import IO, TYPE_CHECKING, Any, Protocol

import anyio
import anyio.abc

from protocol.framing import FrameDecoder, encode_frame
from sidecar.fdio import pump_in_thread, write_all
from sidecar.ids import now_iso
from sidecar.jsonbytes import dumps_bytes

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
    from pathlib import Path

    from protocol.framing import BadHeader, TooLarge
    from sidecar.rpc.early import EarlyDispatch as Interim
    from sidecar.rpc.handshake import EarlyStart
    from sidecar.rpc.protocol import SidecarProtocol

__all__ = ["Receiver", "StdioTransport", "Tracer"]

logger = logging.getLogger(__name__)

_READ_CHUNK = 256 * 1024
PARENT_POLL_SECONDS = 0.5
#: Frames of one loop iteration written together, at most: a longer burst (a run streaming
#: thousands of deltas between two turns of the loop) is written as it goes.
_BURST_BYTES = 256 * 1024


class Tracer:
    """Appends every frame to a JSONL file, for debugging a host's conversation."""

    def __init__(self, path: Path) -> None:
        self._file: IO[bytes] = open(path, "ab", buffering=0)  # noqa: SIM115 (closed in close())

    def record(self, direction: str, body: bytes) -> None:
        from protocol.inputs import SECRET_KEY  # the wire models load only when tracing

        try:
            message = json.loads(body)
            payload = (
                dumps_bytes(_redact(message))
                if SECRET_KEY.search(body.decode("utf-8", errors="replace"))
                else body
            )
        except ValueError:
            payload = json.dumps(body.decode("utf-8", errors="replace")).encode()
            direction += "-raw"
        self._file.write(
            b'{"time":"%s","dir":"%s","message":%s}\n'
            % (now_iso().encode(), direction.encode(), payload)
        )

    def close(self) -> None:
        self._file.close()


def _redact(node: Any) -> Any:
    """Replace the values of credential-shaped keys (a client that sends one is refused, but
    the trace must not keep it either)."""
    from protocol.inputs import SECRET_KEY

    if isinstance(node, dict):
        return {
            k: "[redacted]" if SECRET_KEY.search(str(k)) else _redact(v) for k, v in node.items()
        }
    if isinstance(node, list):
        return [_redact(v) for v in node]
    return node


class _WriterProtocol(asyncio.Protocol):
    """Flow control is read from the transport's buffer size; this only notices the client
    closing its end of the pipe, which stops the server."""

    def __init__(self, on_lost: Callable[[], None]) -> None:
        self._on_lost = on_lost

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:  # None: we closed it ourselves, at exit
            logger.warning("the client closed its end of the pipe; stopping (%s)", exc)
        self._on_lost()


class Receiver(Protocol):
    """Where incoming frames go: the pygls protocol, or :class:`sidecar.rpc.early.EarlyDispatch`
    while pygls loads."""

    def handle_body(self, body: bytes) -> None: ...

    def handle_frame_error(self, error: TooLarge | BadHeader) -> None: ...


class StdioTransport:
    """Connects an input fd and an output fd to a :class:`SidecarProtocol`.

    It starts before the protocol exists: frames go to ``interim`` (which serves what it can
    and holds the rest) until :meth:`attach` hands the protocol over."""

    def __init__(
        self,
        *,
        in_fd: int,
        out_fd: int,
        max_message_bytes: int,
        interim: Interim,
        tracer: Tracer | None = None,
        early: EarlyStart | None = None,
    ) -> None:
        """``early``: what :func:`sidecar.rpc.handshake.answer_initialize_early` read (and
        answered) before the server existed; the transport continues from there."""
        self._receiver: Receiver = interim
        self._interim = interim
        self._attached = anyio.Event()
        self._watched: int | None = None
        self.started = anyio.Event()
        """Set once :meth:`run` is serving (:meth:`spawn` works)."""
        self._in_fd = in_fd
        self._out_fd = out_fd
        self._early = early
        self._decoder = early.decoder if early else FrameDecoder(max_message_bytes)
        self._tracer = tracer
        self._stopped = anyio.Event()
        self._exit_code = 0
        self._tg: anyio.abc.TaskGroup | None = None
        self._closed_out = False
        self._writer: asyncio.WriteTransport | None = None
        self._pending: list[bytes] = []
        """Frames of this loop iteration, written together at its end."""
        self._pending_bytes = 0
        self._before: list[Callable[[], None]] = []
        """What must run before the pending frames leave (a run journal's write)."""

    def attach(self, protocol: SidecarProtocol) -> None:
        """Hand incoming frames to the loaded protocol: first ``initialize`` when it was
        answered early (for pygls' own state), then what the interim receiver held, in order."""
        protocol.send_body = self.send_body
        protocol.flush = self.flush
        protocol.before_write = self.before_write
        protocol.on_exit = self.stop
        protocol.on_initialized = self._watch_client
        early = self._early
        if early is not None and early.initialize is not None and early.answer is not None:
            protocol.adopt_initialize(early.initialize, early.answer, early.process_id)
        self._receiver = protocol
        self._handle(self._interim.release(), trace=False)
        self._attached.set()

    # --- output --------------------------------------------------------------------------

    def before_write(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` before the next frames are written (once, however many ask)."""
        if fn not in self._before:
            self._before.append(fn)

    def _run_before(self) -> None:
        before, self._before = self._before, []
        for fn in before:
            try:
                fn()
            except Exception:  # the disk refused a journal: its run stops at its next event
                logger.exception("could not write ahead of the frames")

    def send_body(self, body: bytes) -> None:
        if self._closed_out:
            return
        if self._tracer is not None:
            self._tracer.record("send", body)
        frame = encode_frame(body)
        if self._writer is not None and not self._writer.is_closing():
            # non-blocking; the frames of one loop iteration leave in one write (a run's
            # events come in bursts: one syscall and one wake-up of the client per burst)
            if not self._pending:
                asyncio.get_running_loop().call_soon(self.flush)
            self._pending.append(frame)
            self._pending_bytes += len(frame)
            if self._pending_bytes >= _BURST_BYTES:
                # a burst longer than that leaves now: what the client has not taken yet
                # is then the writer's buffer (the backlog the run bounds), not frames that
                # never had a chance to leave because the loop did not turn
                self.flush()
            return
        try:
            self._run_before()
            write_all(self._out_fd, frame)
        except OSError as exc:
            if exc.errno in (errno.EPIPE, errno.EBADF):
                logger.warning("the client closed its end of the pipe; stopping")
                self._closed_out = True
                self.stop(0)
            else:
                raise

    def send_answer(self, body: bytes) -> None:
        """Send an answer to a request: it leaves now, with the frames sent before it."""
        self.send_body(body)
        self.flush()

    def flush(self) -> None:
        """Write the frames this loop iteration has sent so far, now.

        Called at the iteration's end (scheduled by the first frame), when a burst reaches
        :data:`_BURST_BYTES`, and by the protocol once an answer is sent: the client waits on
        it, and the rest of the iteration may be long (other handlers resuming beside it, a
        large answer being encoded) — in ``make soak`` that wait was part of the tail of every
        method.  A run's events still leave in bursts; an answer only ends its burst early."""
        if not self._pending:
            return  # written already (a long burst, an answer)
        frames, self._pending, self._pending_bytes = self._pending, [], 0
        self._run_before()
        if self._writer is not None and not self._writer.is_closing():
            self._writer.write(b"".join(frames))  # buffered while the client is slow

    def backlog(self) -> int:
        """Bytes written but not yet taken by the client (0 with a blocking writer)."""
        if self._writer is None:
            return 0
        return self._writer.get_write_buffer_size() + self._pending_bytes

    async def _open_writer(self) -> None:
        """Write through an asyncio pipe transport when the fd allows it, so a client that
        stops reading never blocks the event loop; the backlog is bounded by the callers
        (live run events are dropped past a limit and replayed from the journal)."""
        loop = asyncio.get_running_loop()
        pipe = os.fdopen(os.dup(self._out_fd), "wb", buffering=0)
        try:
            transport, _ = await loop.connect_write_pipe(
                lambda: _WriterProtocol(lambda: self.stop(0)), pipe
            )
        except (ValueError, OSError):
            pipe.close()
            return
        self._writer = transport

    async def _flush(self, timeout_s: float = 2.0) -> None:
        """Give the client a moment to take what is buffered (the answer to shutdown...)."""
        with anyio.move_on_after(timeout_s):
            writer = self._writer
            # the pipe transport offers no "drained" event to wait on: poll, briefly, at exit
            while self.backlog() and writer is not None and not writer.is_closing():  # noqa: ASYNC110
                await anyio.sleep(0.01)

    # --- lifecycle -----------------------------------------------------------------------

    def stop(self, exit_code: int) -> None:
        self._exit_code = exit_code
        self._stopped.set()

    async def stopping(self) -> int:
        """Wait until the transport is told to stop (EOF, ``exit``, the client's death);
        the exit code it was told."""
        await self._stopped.wait()
        return self._exit_code

    async def run(self) -> int:
        """Serve until EOF, ``exit`` or the client's death; return the process exit code."""
        await self._open_writer()
        async with anyio.create_task_group() as tg:
            self._tg = tg
            if self._early is not None and self._early.answer is not None:
                # answered before pygls loaded: watch the client from now, not from attach
                self._watch_client(self._early.process_id)
            self.started.set()
            tg.start_soon(self._read_loop)
            await self._stopped.wait()
            tg.cancel_scope.cancel()
        await self._flush()
        if self._writer is not None:
            self._writer.close()
        return self._exit_code

    def spawn(self, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``fn()`` as a task of the transport's task group (cancelled when it stops)."""
        assert self._tg is not None, "spawn before run()"
        self._tg.start_soon(fn)

    def _watch_client(self, pid: int | None) -> None:
        if pid is not None and self._tg is not None and pid > 0 and pid != self._watched:
            self._watched = pid
            self._tg.start_soon(self._watch_pid, pid)

    async def _watch_pid(self, pid: int) -> None:
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                logger.warning("client process %d is gone; exiting", pid)
                self.stop(0)
                return
            except PermissionError:
                pass  # exists, owned by someone else
            await anyio.sleep(PARENT_POLL_SECONDS)

    # --- input ---------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        try:
            if self._early is not None:
                self._continue_from(self._early)
            if self._early is None or not self._early.eof:
                async for chunk in self._chunks():
                    self._handle(self._decoder.feed(chunk))
                    if self._stopped.is_set():
                        return
            if self._interim.holds_frames():
                # What was read before EOF is still handled, as it would have been had the
                # server been loaded when it arrived.
                await self._attached.wait()
        finally:
            if not self._stopped.is_set():
                logger.info("stdin closed; exiting")
                self.stop(0)

    def _continue_from(self, early: EarlyStart) -> None:
        tracer = self._tracer
        if tracer is not None and early.initialize is not None and early.answer is not None:
            tracer.record("recv", early.initialize)
            tracer.record("send", early.answer)
        self._handle(early.pending)
        early.pending.clear()

    def _handle(self, items: Iterable[bytes | TooLarge | BadHeader], *, trace: bool = True) -> None:
        for item in items:
            try:
                if isinstance(item, bytes):
                    if trace and self._tracer is not None:
                        self._tracer.record("recv", item)
                    self._receiver.handle_body(item)
                else:
                    self._receiver.handle_frame_error(item)
            except Exception:  # one bad message must never end the connection
                logger.exception("could not handle an incoming message")
            if self._stopped.is_set():
                return

    async def _chunks(self) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_READ_CHUNK)
        pipe = os.fdopen(os.dup(self._in_fd), "rb", buffering=0)
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        except (ValueError, OSError):
            pipe.close()
            async for chunk in self._thread_chunks():
                yield chunk
            return
        while True:
            chunk = await reader.read(_READ_CHUNK)
            if not chunk:
                return
            yield chunk

    async def _thread_chunks(self) -> AsyncIterator[bytes]:
        """Fallback for fds asyncio cannot watch (regular files, some ttys)."""
        send, receive = anyio.create_memory_object_stream[bytes](16)
        pump_in_thread(
            self._in_fd, _READ_CHUNK, send.send, asyncio.get_running_loop(), "stdin-reader"
        )
        async with receive:
            async for chunk in receive:
                if not chunk:
                    return
                yield chunk
