"""Building one thread of a transcript while a parser walks its log: messages staged (an
assistant response written over several lines is one message), tool calls paired with their
results, requests with the view they saw, the agent's compactions; :meth:`Thread.finish`
turns it into a :class:`~sidecar.transcripts.model.Transcript`."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from protocol.entries import (
    ContentPart,
    ImagePart,
    MessageInput,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sidecar.context.tokens import Tokenizer, Tokenizers, entry_text
from sidecar.transcripts.model import (
    Compaction,
    Format,
    Request,
    Transcript,
    TranscriptError,
    Usage,
)

__all__ = ["Thread", "count_tokens", "image_note", "text_parts"]

_lock = threading.Lock()
_tokenizer: Tokenizer | None = None


#: What a result of a call made before the log began is shown with (a continued session).
CONTINUED_RESULT_NOTE = "[the result of a tool call made before this log began]"


def count_tokens(text: str) -> int:
    """cl100k tokens of ``text`` (the encoding every format is counted in)."""
    global _tokenizer
    if _tokenizer is None:
        with _lock:
            if _tokenizer is None:
                _tokenizer = Tokenizers.discover().get("cl100k_base")
    return _tokenizer.count(text) if text else 0


def image_note(media_type: object) -> TextPart:
    """An image of the log stands as a note: the store keeps images as blobs, which an
    import does not write."""
    return TextPart(type="text", text=f"[image: {media_type or 'unknown type'}, not imported]")


def text_parts(content: object) -> list[TextPart | ImagePart]:
    """A tool result's or user message's content (a string, or blocks with ``text``) as
    text parts; images become notes."""
    if isinstance(content, str):
        return [TextPart(type="text", text=content)]
    out: list[TextPart | ImagePart] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                out.append(TextPart(type="text", text=block))
            elif isinstance(block, dict):
                if block.get("type") == "image":
                    source = block.get("source")
                    kind = source.get("media_type") if isinstance(source, dict) else None
                    out.append(image_note(kind or block.get("mimeType")))
                elif isinstance(block.get("text"), str):
                    out.append(TextPart(type="text", text=block["text"]))
    return out


@dataclass(slots=True)
class _Staged:
    role: Role
    parts: list[ContentPart]
    at: float


@dataclass(slots=True)
class _Draft:
    at: float
    model: str
    provider: str
    usage: Usage
    context_end: int
    view_start: int
    summary: str | None
    message: int | None
    thinking: bool


@dataclass(slots=True)
class _Cut:
    message_index: int
    summary: str
    first_kept: int | None
    tokens_before: int | None
    at: float


@dataclass(slots=True)
class Thread:
    """One thread (the main one, or a sub-agent's) under construction."""

    path: str
    format: Format
    staged: list[_Staged] = field(default_factory=list)
    drafts: list[_Draft] = field(default_factory=list)
    cuts: list[_Cut] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)
    """Tool call id -> the staged message that made it."""
    answered: set[str] = field(default_factory=set)
    view_start: int = 0
    summary: str | None = None

    # --- messages ---------------------------------------------------------------------------

    def add(self, role: Role, parts: list[ContentPart], at: float) -> int:
        self.staged.append(_Staged(role, list(parts), at))
        return len(self.staged) - 1

    def extend(self, index: int, parts: list[ContentPart]) -> None:
        self.staged[index].parts.extend(parts)

    def call(self, index: int, call_id: object, name: object, arguments: object) -> None:
        """A tool call of the assistant message ``index``."""
        if not isinstance(call_id, str) or not call_id:
            self.warnings.append(f"a tool call without an id in message {index} skipped")
            return
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError:
                arguments = {"input": arguments}
        if not isinstance(arguments, dict):
            arguments = {"input": arguments}
        self.calls[call_id] = index
        part = ToolCallPart(
            type="toolCall", call_id=call_id, name=str(name or "unknown"), arguments=arguments
        )
        self.extend(index, [part])

    def result(
        self,
        line: int,
        call_id: object,
        content: list[TextPart | ImagePart],
        is_error: bool,
        at: float,
        into: int | None = None,
    ) -> int:
        """A tool result, as a ``user`` message of its own (or added to message ``into``).
        A result whose call is not before it is an error naming the line — unless no call
        at all is before it: a log that continues an earlier one (Claude Code starts a
        continued session's file with the results of calls made in the previous file), read
        as a note with the result's content, and a warning naming the line."""
        if not self.calls and isinstance(call_id, str) and call_id:
            self.warnings.append(
                f"line {line}: the result of call {call_id!r}, made before this log began "
                "(a continued session), read as a note"
            )
            note = TextPart(type="text", text=CONTINUED_RESULT_NOTE)
            parts: list[ContentPart] = [note, *content]
            if into is not None:
                self.extend(into, parts)
                return into
            return self.add("user", parts, at)
        if not isinstance(call_id, str) or call_id not in self.calls:
            raise TranscriptError(
                self.path, line, f"tool result for call {call_id!r} without its call"
            )
        self.answered.add(call_id)
        part = ToolResultPart(
            type="toolResult", call_id=call_id, content=content, is_error=is_error
        )
        if into is not None:
            self.extend(into, [part])
            return into
        return self.add("user", [part], at)

    # --- requests and compactions ----------------------------------------------------------

    def request(
        self,
        at: float,
        model: str,
        provider: str,
        usage: Usage,
        message: int | None,
        thinking: bool = False,
        context_end: int | None = None,
    ) -> _Draft:
        """A recorded API call whose response is staged message ``message`` (None: the
        response left no message, e.g. aborted before any output)."""
        end = (
            context_end
            if context_end is not None
            else (message if message is not None else len(self.staged))
        )
        draft = _Draft(
            at, model, provider, usage, end, self.view_start, self.summary, message, thinking
        )
        self.drafts.append(draft)
        return draft

    def compaction(
        self,
        summary: str,
        at: float,
        first_kept: int | None = None,
        tokens_before: int | None = None,
    ) -> None:
        """The agent summarised everything staged so far (keeping ``first_kept`` on verbatim)."""
        index = len(self.staged)
        self.cuts.append(_Cut(index, summary, first_kept, tokens_before, at))
        self.view_start = first_kept if first_kept is not None else index
        self.summary = summary

    # --- the result ------------------------------------------------------------------------

    def finish(
        self,
        session_id: str | None,
        cwd: str | None,
        system_prompt: str | None = None,
        subagents: list[Transcript] | None = None,
    ) -> Transcript:
        unanswered = [c for c in self.calls if c not in self.answered]
        if unanswered:
            self.warnings.append(
                f"{len(unanswered)} tool call(s) without a result (an aborted turn or the log's "
                f"end), e.g. {unanswered[0]}"
            )
        # Messages left with no content (a response aborted before any output) cannot be
        # stored; indices are remapped past them.
        remap: list[int] = []
        messages: list[MessageInput] = []
        times: list[float] = []
        dropped = 0
        for staged in self.staged:
            remap.append(len(messages))
            if not staged.parts:
                dropped += 1
                continue
            messages.append(MessageInput(kind="message", role=staged.role, content=staged.parts))
            times.append(staged.at)
        remap.append(len(messages))
        if dropped:
            self.warnings.append(f"{dropped} empty message(s) skipped (their requests are kept)")
        requests = [self._request(i, d, remap) for i, d in enumerate(self.drafts)]
        compactions = [
            Compaction(
                message_index=remap[c.message_index],
                summary=c.summary,
                first_kept=None if c.first_kept is None else remap[c.first_kept],
                tokens_before=c.tokens_before,
                at=c.at,
            )
            for c in self.cuts
        ]
        return Transcript(
            format=self.format,
            path=self.path,
            session_id=session_id,
            cwd=cwd,
            system_prompt=system_prompt,
            system_tokens=system_tokens(messages, requests),
            messages=messages,
            times=times,
            requests=requests,
            compactions=compactions,
            subagents=subagents or [],
            warnings=self.warnings,
        )

    def _request(self, index: int, d: _Draft, remap: list[int]) -> Request:
        visible = 0
        if d.message is not None:
            for part in self.staged[d.message].parts:
                if isinstance(part, TextPart):
                    visible += count_tokens(part.text)
                elif isinstance(part, ToolCallPart):
                    visible += count_tokens(
                        part.name + json.dumps(part.arguments, ensure_ascii=False)
                    )
        return Request(
            index=index,
            at=d.at,
            model=d.model,
            provider=d.provider,
            usage=d.usage,
            context_end=remap[d.context_end],
            view_start=remap[d.view_start],
            summary=d.summary,
            output_text_tokens=visible,
            thinking_logged=d.thinking,
            response=remap[d.message]
            if d.message is not None and self.staged[d.message].parts
            else None,
        )


def message_tokens(message: MessageInput) -> int:
    """cl100k tokens of a message as the store counts it (text plus the role framing)."""
    text, extra = entry_text(message.model_dump(mode="json", by_alias=True))
    return count_tokens(text) + extra


def system_tokens(messages: list[MessageInput], requests: list[Request]) -> int | None:
    """The system prompt and tool schemas: the first request that reached the provider
    (prompt tokens > 0, before any compaction) less the messages it saw.  Counted in cl100k
    against the provider's own count, so an estimate; never below zero."""
    first = next((r for r in requests if r.usage.prompt_tokens > 0 and r.view_start == 0), None)
    if first is None:
        return None
    seen = sum(message_tokens(m) for m in messages[: first.context_end])
    return max(0, first.usage.prompt_tokens - seen)


def reasoning(text: object, signature: object = None, **extra: Any) -> ReasoningPart:
    """A thinking block as a reasoning part (Anthropic's, when signed)."""
    sig = signature if isinstance(signature, str) and signature else None
    return ReasoningPart(
        type="reasoning",
        text=text if isinstance(text, str) else "",
        signature=sig,
        provider="anthropic" if sig else None,
        **extra,
    )
