"""The shared model of a real transcript (issue 41): what an agent's session log says.

A :class:`Transcript` is the main thread as store messages (``protocol.entries.MessageInput``:
assistant text / reasoning / toolCall parts; a tool result is a ``user`` message of
``toolResult`` parts, as the run loop stores it), the time of each message, every recorded API
request of the main thread with the provider's usage, the agent's own compactions, and the
sub-agent threads as transcripts of their own.  The parsers (:mod:`sidecar.transcripts.read`)
fill it; ``import`` and ``replay`` read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from protocol.entries import MessageInput

__all__ = ["Compaction", "Format", "Request", "Transcript", "TranscriptError", "Usage"]

Format = Literal["claude-code", "codex", "pi", "opencode"]
FORMATS: tuple[Format, ...] = ("claude-code", "codex", "pi", "opencode")


class TranscriptError(Exception):
    """A log that cannot be read: malformed, truncated, of no known format.  ``line`` is
    1-based (0: the file as a whole); ``str()`` names the file and the line."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(path, line, message)
        self.path = path
        self.line = line
        self.message = message

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line > 0 else self.path
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class Usage:
    """One request's tokens as the provider billed them."""

    input: int
    """Uncached input tokens (OpenAI's ``input_tokens`` less ``cached_input_tokens``)."""
    cache_read: int
    cache_write_5m: int
    cache_write_1h: int
    output: int
    reasoning: int | None = None
    """Reasoning output tokens when the log says (Codex, OpenCode)."""
    cost: float | None = None
    """USD, when the log records it (pi, OpenCode)."""

    @property
    def prompt_tokens(self) -> int:
        """Everything the provider counted on the prompt side."""
        return self.input + self.cache_read + self.cache_write_5m + self.cache_write_1h

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h


@dataclass(frozen=True, slots=True)
class Request:
    """One recorded API call of a thread."""

    index: int
    """0-based, in the order the agent made them."""
    at: float
    """Epoch seconds: the log's timestamp of the response."""
    model: str
    provider: str
    """``anthropic`` | ``openai`` | ``google`` | other, as logged."""
    usage: Usage
    context_end: int
    """The request saw ``Transcript.messages[:context_end]``."""
    view_start: int = 0
    """...from here (after the agent's own latest compaction)."""
    summary: str | None = None
    """The agent's compaction summary shown before ``view_start``."""
    output_text_tokens: int = 0
    """Visible output of the response (text + tool calls), counted in cl100k."""
    thinking_logged: bool = False
    """The response had thinking blocks (possibly logged empty)."""
    response: int | None = None
    """Index in ``Transcript.messages`` of the response's assistant message; None when the
    response left none (aborted before any output; an OpenCode summary call)."""


@dataclass(frozen=True, slots=True)
class Compaction:
    """The agent summarised the thread itself."""

    message_index: int
    """Messages before it were summarised by the agent."""
    summary: str
    first_kept: int | None
    """First message the agent kept verbatim, when logged."""
    tokens_before: int | None
    at: float


@dataclass(slots=True)
class Transcript:
    """One session log, read."""

    format: Format
    path: str
    session_id: str | None
    cwd: str | None
    system_prompt: str | None
    """When logged (Codex ``base_instructions``); else None."""
    system_tokens: int | None
    """System prompt + tool schemas, estimated from the first request's usage less its
    messages (Claude Code, pi)."""
    messages: list[MessageInput] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    """Epoch seconds per message."""
    requests: list[Request] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)
    subagents: list[Transcript] = field(default_factory=list)
    """Sub-agent threads (Claude Code sidechains), with their own requests."""
    warnings: list[str] = field(default_factory=list)
    """What was skipped, and why."""
