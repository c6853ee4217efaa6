"""LSP base-protocol framing (``Content-Length`` headers), sans-IO.

:class:`FrameDecoder` turns a byte stream into frames.  It is the one place that knows the
framing rules, shared by the server's read loop and every Python client:

- ``Content-Length`` counts **bytes** of the body; header names are case-insensitive; lines
  end in ``\\r\\n`` (a bare ``\\n`` is tolerated); other headers (``Content-Type``) are ignored.
- A body larger than ``max_body`` is never buffered: it is skipped as it streams past and
  reported as :class:`TooLarge`, with the request ``id`` and ``method`` when they can be read
  from the first bytes, so the sender gets an error answer and the stream stays in sync.
- A malformed header block is reported as :class:`BadHeader` and the decoder resynchronises on
  the next ``Content-Length:``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["BadHeader", "FrameDecoder", "TooLarge", "encode_frame", "peek_members"]

_CONTENT_LENGTH = re.compile(rb"content-length", re.IGNORECASE)
#: An HTTP header name (RFC 7230 token).
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
#: Bytes of an oversized body kept to find its ``id`` and ``method``.
_PREFIX_KEEP = 64 * 1024


def encode_frame(body: bytes) -> bytes:
    """One frame: ``Content-Length`` (in bytes) + blank line + body."""
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


@dataclass(frozen=True, slots=True)
class TooLarge:
    """A frame whose body exceeded the limit; its body was discarded."""

    size: int
    limit: int
    request_id: int | str | None
    method: str | None


@dataclass(frozen=True, slots=True)
class BadHeader:
    """A header block that could not be understood; skipped."""

    reason: str


class FrameDecoder:
    """Feed bytes in, get complete bodies (``bytes``) and framing errors out, in order.

    The header block is parsed line by line, so whatever the stream's chunking, the same
    bytes give the same result.  After a bad header the decoder discards input until the
    next ``Content-Length`` (remembered across :meth:`feed` calls).
    """

    def __init__(self, max_body: int, max_header: int = 8192) -> None:
        self.max_body = max_body
        self.max_header = max_header
        self._buf = bytearray()
        self._pos = 0  # bytes of _buf already consumed (compacted once per feed)
        self._header_len = 0  # bytes of the current header block consumed so far
        self._length: int | None = None  # Content-Length seen in the current block
        self._in_header = False  # inside a header block (after its first line)
        self._need: int | None = None  # body length being read
        self._skip = 0  # bytes of an oversized body still to discard
        self._skip_size = 0
        self._prefix = bytearray()
        self._resyncing = False

    @property
    def pending(self) -> int:
        """Bytes held in memory towards an incomplete frame (bounded by the limits)."""
        return len(self._buf) - self._pos + len(self._prefix)

    @property
    def at_boundary(self) -> bool:
        """True between frames: nothing partial buffered, no body or skip in progress."""
        return (
            len(self._buf) == self._pos
            and self._need is None
            and not self._skip
            and not self._in_header
            and not self._resyncing
        )

    def feed(self, data: bytes) -> list[bytes | TooLarge | BadHeader]:
        self._buf += data
        out: list[bytes | TooLarge | BadHeader] = []
        while self._step(out):
            pass
        # One compaction per feed keeps decoding linear however many frames a chunk holds.
        del self._buf[: self._pos]
        self._pos = 0
        return out

    def _avail(self) -> int:
        return len(self._buf) - self._pos

    def _consume(self, n: int) -> None:
        self._pos += n

    def _step(self, out: list[bytes | TooLarge | BadHeader]) -> bool:
        """Make one unit of progress; False when more input is needed."""
        if self._resyncing:
            return self._resync()
        if self._skip:
            return self._skip_oversized(out)
        if self._need is not None:
            if self._avail() < self._need:
                return False
            out.append(bytes(self._buf[self._pos : self._pos + self._need]))
            self._consume(self._need)
            self._need = None
            return True
        return self._header_line(out)

    def _header_line(self, out: list[bytes | TooLarge | BadHeader]) -> bool:
        # A line is consumed only once it is known to be good: on a bad line the decoder
        # resyncs from that line's second byte, so a frame glued behind garbage survives.
        found = self._buf.find(b"\n", self._pos)
        nl = found - self._pos if found >= 0 else -1
        if nl < 0:
            if self._header_len + self._avail() > self.max_header:
                return self._bad(out, f"header block longer than {self.max_header} bytes", 1)
            return False
        if self._header_len + nl + 1 > self.max_header:
            return self._bad(out, f"header block longer than {self.max_header} bytes", 1)
        line = bytes(self._buf[self._pos : self._pos + nl]).rstrip(b"\r")
        if not line:
            self._consume(nl + 1)
            if not self._in_header:
                return True  # a blank line between frames is harmless
            return self._end_of_header(out)
        name, sep, value = line.partition(b":")
        if not sep:
            return self._bad(out, f"header line without a colon: {line[:80]!r}", 1)
        if not _TOKEN.fullmatch(name.strip()):
            return self._bad(out, f"not a header name: {name[:80]!r}", 1)
        if name.strip().lower() == b"content-length":
            text = value.strip()
            if not text.isdigit():
                return self._bad(out, f"Content-Length is not a number: {text[:40]!r}", 1)
            self._length = int(text)
        self._consume(nl + 1)
        self._header_len += nl + 1
        self._in_header = True
        return True

    def _end_of_header(self, out: list[bytes | TooLarge | BadHeader]) -> bool:
        length = self._length
        self._length, self._in_header, self._header_len = None, False, 0
        if length is None:
            return self._bad(out, "no Content-Length header")  # its lines are consumed
        if length > self.max_body:
            self._skip = self._skip_size = length
            self._prefix = bytearray()
        else:
            self._need = length
        return True

    def _bad(self, out: list[bytes | TooLarge | BadHeader], reason: str, skip: int = 0) -> bool:
        out.append(BadHeader(reason))
        self._consume(skip)
        self._length, self._in_header, self._header_len = None, False, 0
        self._resyncing = True
        return True

    def _resync(self) -> bool:
        """Drop input up to the next ``Content-Length``."""
        match = _CONTENT_LENGTH.search(self._buf, self._pos)
        if match is None:
            keep = len("content-length") - 1  # a split "Content-Le|ngth" must survive
            self._consume(max(0, self._avail() - keep))
            return False
        self._pos = match.start()
        self._resyncing = False
        return True

    def _skip_oversized(self, out: list[bytes | TooLarge | BadHeader]) -> bool:
        take = min(self._skip, self._avail())
        if take == 0:
            return False
        if len(self._prefix) < _PREFIX_KEEP:
            room = min(take, _PREFIX_KEEP - len(self._prefix))
            self._prefix += self._buf[self._pos : self._pos + room]
        self._consume(take)
        self._skip -= take
        if self._skip:
            return False
        found = peek_members(bytes(self._prefix), ("id", "method"))
        rid = found.get("id")
        method = found.get("method")
        out.append(
            TooLarge(
                size=self._skip_size,
                limit=self.max_body,
                request_id=rid
                if isinstance(rid, int | str) and not isinstance(rid, bool)
                else None,
                method=method if isinstance(method, str) else None,
            )
        )
        self._prefix = bytearray()
        return True


def peek_members(prefix: bytes, names: tuple[str, ...]) -> dict[str, Any]:
    """Read top-level members of a (possibly truncated) JSON object, stopping at the first
    value that cannot be read whole.  Finds ``id`` and ``method`` in the head of an oversized
    request as JSON-RPC clients write them before ``params``."""
    text = prefix.decode("utf-8", errors="replace")
    decoder = json.JSONDecoder()
    found: dict[str, Any] = {}
    pos = _skip_ws(text, 0)
    if not text.startswith("{", pos):
        return found
    pos += 1
    try:
        while len(found) < len(names):
            pos = _skip_ws(text, pos)
            if text.startswith("}", pos):
                break
            key, pos = decoder.raw_decode(text, pos)
            pos = _skip_ws(text, pos)
            if not text.startswith(":", pos):
                break
            value, pos = decoder.raw_decode(text, _skip_ws(text, pos + 1))
            if isinstance(key, str) and key in names:
                found[key] = value
            pos = _skip_ws(text, pos)
            if text.startswith(",", pos):
                pos += 1
    except ValueError:
        pass
    return found


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos
