"""An MCP server's stderr into the sidecar's log (sidecar.acp.mcp_stderr): each line
redacted, cleaned and cut; a burst a window, the rest counted; a line never held whole.
The whole path, a real server through ``context-sidecar acp``:
``tests/e2e/test_acp_mcp_limits.py::test_an_mcp_servers_stderr_is_logged_redacted_cut_and_not_a_flood``."""

from __future__ import annotations

import logging

import anyio
import pytest

from sidecar.acp import mcp_stderr
from sidecar.acp.mcp_stderr import BURST_LINES, LINE_CHARS, WINDOW_S, StderrLog, shown


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "sidecar.acp.mcp_stderr"]


def test_a_line_is_redacted_cleaned_and_cut() -> None:
    sent = b"sending Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345\r"
    assert "abcdefghij" not in shown(sent) and shown(sent).startswith("sending ")
    assert shown(b"\x1b[1;32mready\x1b[0m\x1b]0;title\x07 \x00on\tport") == "ready on\tport"
    cut = shown("é".encode() * 5000)
    assert cut == "é" * LINE_CHARS + "… (cut)"


def test_a_burst_a_window_then_a_count_and_logging_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = _Clock()
    log = StderrLog("srv", clock)
    with caplog.at_level(logging.WARNING, logger="sidecar.acp.mcp_stderr"):
        for n in range(BURST_LINES + 30):
            log.line(b"line %d" % n)
        log.line(b"   ")  # blank: neither logged nor counted
        assert len(_messages(caplog)) == BURST_LINES
        clock.now += WINDOW_S  # the window ends: the count, then a new burst
        log.line(b"after the pause")
        log.report()
    messages = _messages(caplog)
    assert (
        messages[BURST_LINES]
        == "MCP server 'srv': 30 more lines on stderr not logged (over 20 in 10 s)"
    )
    assert messages[BURST_LINES + 1] == "MCP server 'srv' (stderr): after the pause"
    assert len(messages) == BURST_LINES + 2 and log.lines == BURST_LINES + 31


class _Chunks:
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._chunks:
            raise anyio.EndOfStream
        return self._chunks.pop(0)


@pytest.mark.anyio
async def test_a_long_line_is_never_held_and_the_last_line_needs_no_newline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[int] = []
    monkeypatch.setattr(StderrLog, "line", lambda self, raw: seen.append(len(raw)))
    endless = [b"y" * 65536] * 64  # a 4 MiB line, in chunks
    await StderrLog("srv").run(_Chunks([b"a\nb", *endless, b"\nlast words"]))  # type: ignore[arg-type]
    assert seen == [1, LINE_CHARS * 4 + 4, 10]
    assert mcp_stderr.LINE_CHARS * 4 + 4 < 65536
