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

_HEADER_END = re.compile(rb"\r?\n\r?\n")
_CONTENT_LENGTH = re.compile(rb"content-length", re.IGNORECASE)
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
    """Feed bytes in, get complete bodies (``bytes``) and framing errors out, in order."""

    def __init__(self, max_body: int, max_header: int = 8192) -> None:
        self.max_body = max_body
        self.max_header = max_header
        self._buf = bytearray()
        self._need: int | None = None  # body length being read
        self._skip = 0  # bytes of an oversized body still to discard
        self._skip_size = 0
        self._prefix = bytearray()

    def feed(self, data: bytes) -> list[bytes | TooLarge | BadHeader]:
        self._buf += data
        out: list[bytes | TooLarge | BadHeader] = []
        while True:
            if self._skip:
                if not self._skip_oversized(out):
                    return out
            elif self._need is not None:
                if len(self._buf) < self._need:
                    return out
                out.append(bytes(self._buf[: self._need]))
                del self._buf[: self._need]
                self._need = None
            elif not self._read_header(out):
                return out

    @property
    def pending(self) -> int:
        """Bytes buffered towards an incomplete frame (0 between frames)."""
        return len(self._buf) + (self._skip or 0)

    def _read_header(self, out: list[bytes | TooLarge | BadHeader]) -> bool:
        # Leading blank lines between frames are harmless; drop them.
        while self._buf[:2] == b"\r\n" or self._buf[:1] == b"\n":
            del self._buf[: 2 if self._buf[:1] == b"\r" else 1]
        match = _HEADER_END.search(self._buf)
        if match is None:
            if len(self._buf) > self.max_header:
                out.append(BadHeader(f"no end of headers within {self.max_header} bytes"))
                self._resync(1)
                return True
            return False
        block = bytes(self._buf[: match.start()])
        del self._buf[: match.end()]
        length: int | None = None
        for line in block.split(b"\n"):
            name, sep, value = line.rstrip(b"\r").partition(b":")
            if not sep:
                out.append(BadHeader(f"header line without a colon: {line[:80]!r}"))
                self._resync(0)
                return True
            if name.strip().lower() == b"content-length":
                text = value.strip()
                if not text.isdigit():
                    out.append(BadHeader(f"Content-Length is not a number: {text[:40]!r}"))
                    self._resync(0)
                    return True
                length = int(text)
        if length is None:
            out.append(BadHeader("no Content-Length header"))
            self._resync(0)
            return True
        if length > self.max_body:
            self._skip = length
            self._skip_size = length
            self._prefix = bytearray()
            return True
        self._need = length
        return True

    def _skip_oversized(self, out: list[bytes | TooLarge | BadHeader]) -> bool:
        take = min(self._skip, len(self._buf))
        if len(self._prefix) < _PREFIX_KEEP:
            self._prefix += self._buf[: min(take, _PREFIX_KEEP - len(self._prefix))]
        del self._buf[:take]
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
                request_id=rid if isinstance(rid, int | str) and not isinstance(rid, bool) else None,
                method=method if isinstance(method, str) else None,
            )
        )
        self._prefix = bytearray()
        return True

    def _resync(self, start: int) -> None:
        """Drop bytes up to the next ``Content-Length`` at or after ``start``."""
        match = _CONTENT_LENGTH.search(self._buf, start)
        if match is None:
            keep = len("content-length") - 1
            del self._buf[: max(0, len(self._buf) - keep)]
        else:
            del self._buf[: match.start()]


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
