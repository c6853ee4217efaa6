"""An incremental Server-Sent Events parser (the WHATWG ``text/event-stream`` rules).

:class:`SSEDecoder` takes bytes in chunks of any size and returns the events they complete:

- lines end with LF, CRLF or a lone CR, and a CRLF split across two chunks is one line end;
- ``event:``, ``data:``, ``id:`` and ``retry:`` fields, one optional space after the colon
  removed; several ``data:`` lines join with ``\\n``; unknown fields are ignored;
- a line starting with ``:`` is a comment (keep-alives such as ``: ping``) and is skipped;
- a blank line dispatches the event; an event without ``data`` is dropped, as the standard
  says;
- bytes are decoded as UTF-8 line by line (a line end never splits a character), invalid
  sequences replaced; a leading byte-order mark is removed;
- at the end of the stream an event that no blank line finished is discarded (the standard's
  rule): a stream cut in the middle of an event loses that event rather than delivering half
  of it, and the provider then sees that its terminator never came.

A line longer than ``max_line`` bytes raises :class:`SSEError` instead of growing without
bound.  Interpreting ``data`` (JSON or not) is the provider's business, not this module's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterable

__all__ = ["ServerSentEvent", "SSEDecoder", "SSEError", "aiter_sse"]

logger = logging.getLogger(__name__)

#: Default longest line accepted (bytes).
MAX_LINE = 16 * 1024 * 1024
_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event; ``event`` is ``"message"`` when the stream named none."""

    event: str
    data: str
    id: str | None = None
    retry: int | None = None


class SSEError(ValueError):
    """The byte stream is not a usable event stream."""


class SSEDecoder:
    """Feed bytes with :meth:`feed`; call :meth:`close` at the end of the stream."""

    def __init__(self, *, max_line: int = MAX_LINE) -> None:
        self._max_line = max_line
        self._buffer = bytearray()
        self._skip_lf = False  # the previous chunk ended with CR: a leading LF belongs to it
        self._first_line = True
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """The events completed by ``chunk``."""
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        self._buffer += chunk
        events: list[ServerSentEvent] = []
        start = 0
        buffer = self._buffer
        cr = lf = -2  # next CR / LF at or after start; -1 = none left, -2 = not looked yet
        while True:
            if cr != -1 and cr < start:
                cr = buffer.find(b"\r", start)
            if lf != -1 and lf < start:
                lf = buffer.find(b"\n", start)
            if cr == -1 and lf == -1:
                break
            if cr == -1 or (lf != -1 and lf < cr):
                line, start = bytes(buffer[start:lf]), lf + 1
            elif cr + 1 < len(buffer):
                line = bytes(buffer[start:cr])
                start = cr + 2 if buffer[cr + 1] == 0x0A else cr + 1
            else:  # CR is the last byte: the LF may come with the next chunk
                line, start = bytes(buffer[start:cr]), cr + 1
                self._skip_lf = True
            event = self._line(line)
            if event is not None:
                events.append(event)
        del self._buffer[:start]
        if len(self._buffer) > self._max_line:
            raise SSEError(f"event-stream line longer than {self._max_line} bytes")
        return events

    def close(self) -> None:
        """End of stream: an unfinished event is discarded (see the module docstring)."""
        if self._buffer or self._data:
            logger.debug(
                "event stream ended inside an event (%d bytes, %d data lines dropped)",
                len(self._buffer),
                len(self._data),
            )
        self._buffer.clear()
        self._data = []
        self._event = ""

    def _line(self, raw: bytes) -> ServerSentEvent | None:
        line = raw.decode("utf-8", errors="replace")
        if self._first_line:
            self._first_line = False
            line = line.removeprefix(_BOM)
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        event, data = self._event, self._data
        self._event, self._data = "", []
        if not data:
            return None
        return ServerSentEvent(
            event=event or "message", data="\n".join(data), id=self._id, retry=self._retry
        )


async def aiter_sse(
    chunks: AsyncIterable[bytes], *, max_line: int = MAX_LINE
) -> AsyncGenerator[ServerSentEvent, None]:
    """The events of a byte stream (for example ``httpx.Response.aiter_bytes()``)."""
    decoder = SSEDecoder(max_line=max_line)
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    decoder.close()
