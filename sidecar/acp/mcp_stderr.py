"""An MCP server's stderr, into the sidecar's log: redacted, cut, and not a flood.

A stdio MCP server logs to stderr (the spec's advice).  Passed through raw, as the ``mcp``
SDK does, that output reaches the editor's log as written: a server that prints its
configuration prints its tokens, one that logs every request at debug level fills the log,
and terminal escapes land in a text panel.  Here every line is:

- **logged** as a warning of ``sidecar.acp.mcp_stderr`` naming the server (the level a
  failing server's "missing API key" must be seen at by default);
- **redacted** (:func:`sidecar.redact.redact_text`: keys, bearer tokens, URL passwords…);
- **cleaned** of terminal escapes and control characters, and **cut** at
  :data:`LINE_CHARS` characters (the rest of the line is read and dropped, never held);
- **bounded in rate**: at most :data:`BURST_LINES` lines per :data:`WINDOW_S` seconds are
  logged; beyond, lines are counted and the count logged once the window ends (at the next
  line) and when the server closes.

stderr is always read to its end, whatever is logged, so a chatty server never blocks on a
full pipe.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

import anyio

from sidecar.redact import redact_text

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from anyio.abc import ByteReceiveStream

__all__ = ["BURST_LINES", "LINE_CHARS", "WINDOW_S", "StderrLog", "received"]

logger = logging.getLogger(__name__)

#: Characters of one stderr line that are logged; the rest is dropped.
LINE_CHARS = 1000
#: Lines logged per window at most; later ones in the window are counted.
BURST_LINES = 20
WINDOW_S = 10.0

_CHUNK = 64 * 1024
#: Terminal escapes (CSI and OSC sequences, lone ESC pairs), then other control characters.
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-_])")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


async def received(stream: ByteReceiveStream) -> AsyncIterator[bytes]:
    """The chunks of a server's pipe until it ends, is closed or breaks."""
    while True:
        try:
            chunk = await stream.receive(_CHUNK)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return
        yield chunk


def shown(raw: bytes) -> str:
    """One stderr line as it may be logged: decoded, escapes and controls removed, cut at
    :data:`LINE_CHARS`, redacted."""
    text = raw.decode("utf-8", "replace").rstrip("\r")
    text = _CONTROLS.sub("", _ESCAPES.sub("", text))
    if len(text) > LINE_CHARS:
        text = f"{text[:LINE_CHARS]}… (cut)"
    return redact_text(text)


class StderrLog:
    """Reads a server's stderr to its end, logging it as the module says."""

    def __init__(self, name: str, clock: Callable[[], float] = anyio.current_time) -> None:
        self.name = name
        self._clock = clock
        self.lines = 0
        """Every non-empty line read."""
        self.dropped = 0
        """Lines not logged (over the window's burst), not yet reported."""
        self._window_end = 0.0
        self._in_window = 0

    async def run(self, stderr: ByteReceiveStream) -> None:
        line = bytearray()
        keep = LINE_CHARS * 4 + 4  # bytes: a UTF-8 character is at most four
        try:
            async for chunk in received(stderr):
                start = 0
                while True:
                    end = chunk.find(b"\n", start)
                    piece = chunk[start:] if end < 0 else chunk[start:end]
                    line += piece[: max(keep - len(line), 0)]
                    if end < 0:
                        break
                    self.line(bytes(line))
                    line.clear()
                    start = end + 1
            if line:
                self.line(bytes(line))
        finally:
            self.report()

    def line(self, raw: bytes) -> None:
        """One line of stderr (without its newline)."""
        if not raw.strip():
            return
        self.lines += 1
        now = self._clock()
        if now >= self._window_end:
            self.report()
            self._window_end, self._in_window = now + WINDOW_S, 0
        if self._in_window >= BURST_LINES:
            self.dropped += 1
            return
        self._in_window += 1
        logger.warning("MCP server %r (stderr): %s", self.name, shown(raw))

    def report(self) -> None:
        """Log how many lines were not, since the last report (if any were not)."""
        if self.dropped:
            logger.warning(
                "MCP server %r: %d more lines on stderr not logged (over %d in %g s)",
                self.name,
                self.dropped,
                BURST_LINES,
                WINDOW_S,
            )
            self.dropped = 0
