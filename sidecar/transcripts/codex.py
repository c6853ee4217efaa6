"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Lines ``{timestamp, type, payload}``.  ``session_meta`` holds the session id, ``cwd``, the model
provider and the system prompt (``base_instructions``, text or ``{text}``); ``turn_context``
the model of the turns after it.  ``response_item`` payloads are the conversation:
``message`` (roles ``developer`` -> a system message, ``user``, ``assistant``), ``reasoning``
(summary texts and ``encrypted_content``), ``function_call`` / ``custom_tool_call`` /
``local_shell_call`` and their ``*_output``.  The items a model response wrote in a row are one
assistant message; the ``event_msg`` ``token_count`` after them is its request
(``info.last_token_usage``: ``input_tokens`` *includes* ``cached_input_tokens``; OpenAI writes
no cache entries; ``output_tokens`` includes ``reasoning_output_tokens``).  A ``token_count``
repeating the previous one's running total is a duplicate and counted once.  A ``compacted``
line (or a ``compaction`` response item) is the agent's compaction.  ``event_msg``
``user_message`` / ``agent_message`` repeat the response items for the terminal: skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.entries import ContentPart, ReasoningPart, TextPart
from sidecar.transcripts.lines import Line, at_line, epoch, read_jsonl
from sidecar.transcripts.model import Transcript, TranscriptError, Usage
from sidecar.transcripts.thread import Thread, image_note

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["parse", "usage_of"]

_ASSISTANT_ITEMS = {"reasoning", "function_call", "custom_tool_call", "local_shell_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}


def usage_of(raw: object) -> Usage:
    u = raw if isinstance(raw, dict) else {}
    total_in = _int(u.get("input_tokens"))
    cached = min(_int(u.get("cached_input_tokens")), total_in)
    reasoning = u.get("reasoning_output_tokens")
    return Usage(
        input=total_in - cached,
        cache_read=cached,
        cache_write_5m=0,
        cache_write_1h=0,
        output=_int(u.get("output_tokens")),
        reasoning=reasoning if isinstance(reasoning, int) else None,
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _texts(content: object) -> list[TextPart]:
    """A message's or an output's content items (``input_text``, ``output_text``, images)."""
    if isinstance(content, str):
        return [TextPart(type="text", text=content)]
    out: list[TextPart] = []
    if isinstance(content, dict):
        return _texts(content.get("content"))
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict):
            if isinstance(item.get("text"), str):
                out.append(TextPart(type="text", text=item["text"]))
            elif str(item.get("type", "")).endswith("image"):
                out.append(image_note("image"))
    return out


def _item_texts(items: object) -> list[str]:
    """The ``text`` of each item of a list (reasoning summaries and contents)."""
    return [
        i["text"]
        for i in (items if isinstance(items, list) else [])
        if isinstance(i, dict) and isinstance(i.get("text"), str)
    ]


class _Reader:
    def __init__(self, path: str) -> None:
        self.thread = Thread(path, "codex")
        self.open: int | None = None
        """The assistant message the current model response is writing (no request yet)."""
        self.answered_response: int | None = None
        self.model = "unknown"
        self.provider = "openai"
        self.last_total: object = None
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.system_prompt: str | None = None

    def assistant_message(self, at: float) -> int:
        if self.open is None:
            self.open = self.thread.add("assistant", [], at)
        return self.open

    def line(self, number: int, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        payload = obj.get("payload")
        at = epoch(obj.get("timestamp")) or 0.0
        if not isinstance(payload, dict):
            raise TranscriptError(self.thread.path, number, f"a {kind} line without its payload")
        if kind == "session_meta":
            inner = payload.get("meta")
            meta: dict[str, Any] = inner if isinstance(inner, dict) else payload
            self.session_id = _str(meta.get("id")) or self.session_id
            self.cwd = _str(meta.get("cwd")) or self.cwd
            self.provider = _str(meta.get("model_provider")) or self.provider
            base = meta.get("base_instructions") or meta.get("instructions")
            if isinstance(base, dict):
                base = base.get("text")
            self.system_prompt = _str(base) or self.system_prompt
        elif kind == "turn_context":
            self.model = _str(payload.get("model")) or self.model
        elif kind == "response_item":
            self.item(number, payload, at)
        elif kind == "compacted":
            self.compacted(payload, at)
        elif kind == "event_msg":
            if payload.get("type") == "token_count":
                self.token_count(number, payload, at)
        else:
            self.thread.warnings.append(f"line {number}: a line of type {kind!r} skipped")

    def item(self, number: int, item: dict[str, Any], at: float) -> None:
        itype = item.get("type")
        if itype == "message":
            role = item.get("role")
            parts: list[ContentPart] = [*_texts(item.get("content"))]
            if role == "assistant":
                index = self.assistant_message(at)
                said = [p for p in parts if not (isinstance(p, TextPart) and not p.text)]
                self.thread.extend(index, said)
                return
            self.open = None
            if parts:
                self.thread.add("system" if role in ("developer", "system") else "user", parts, at)
        elif itype == "reasoning":
            index = self.assistant_message(at)
            summary = _item_texts(item.get("summary"))
            raw = _item_texts(item.get("content"))
            part = ReasoningPart(
                type="reasoning",
                text="\n\n".join(summary or raw),
                provider="openai-responses",
                id=_str(item.get("id")),
                data=_str(item.get("encrypted_content")),
                summary=summary,
            )
            self.thread.extend(index, [part])
        elif itype in ("function_call", "custom_tool_call"):
            index = self.assistant_message(at)
            args = item.get("arguments")
            if itype == "custom_tool_call":
                args = {"input": item.get("input")}
            self.thread.call(index, item.get("call_id"), item.get("name"), args)
        elif itype == "local_shell_call":
            index = self.assistant_message(at)
            call_id = item.get("call_id") or item.get("id")
            self.thread.call(index, call_id, "local_shell", item.get("action"))
        elif itype in _OUTPUTS:
            self.open = None
            output = item.get("output")
            failed = isinstance(output, dict) and output.get("success") is False
            self.thread.result(number, item.get("call_id"), [*_texts(output)], failed, at)
        elif itype == "compaction" or itype == "compaction_summary":
            self.open = None
            self.thread.compaction("(remote compaction: the summary is encrypted)", at)
        else:
            self.thread.warnings.append(f"line {number}: a response item {itype!r} skipped")

    def compacted(self, payload: dict[str, Any], at: float) -> None:
        self.open = None
        summary = _str(payload.get("message"))
        if summary is None:
            kept = payload.get("replacement_history")
            items = kept if isinstance(kept, list) else []
            texts = [
                p.text
                for item in items
                if isinstance(item, dict) and item.get("type") == "message"
                for p in _texts(item.get("content"))
            ]
            summary = "\n\n".join(t for t in texts if t) or "(summary not logged)"
        self.thread.compaction(summary, at)

    def token_count(self, number: int, payload: dict[str, Any], at: float) -> None:
        info = payload.get("info")
        if not isinstance(info, dict):
            return  # rate limits only
        total = info.get("total_token_usage")
        if total is not None and total == self.last_total:
            return  # the same count emitted twice
        self.last_total = total
        last = info.get("last_token_usage")
        if not isinstance(last, dict):
            self.thread.warnings.append(f"line {number}: a token count without its last usage")
            return
        index = self.open
        self.open = None
        thinking = index is not None and any(
            isinstance(p, ReasoningPart) for p in self.thread.staged[index].parts
        )
        self.thread.request(at, self.model, self.provider, usage_of(last), index, thinking=thinking)


def parse(path: Path, lines: list[Line] | None = None) -> Transcript:
    lines = read_jsonl(path) if lines is None else lines
    reader = _Reader(str(path))
    for number, obj in lines:
        with at_line(str(path), number):
            reader.line(number, obj)
    if reader.open is not None:
        reader.thread.warnings.append("the last response has no token count (no request recorded)")
    return reader.thread.finish(reader.session_id, reader.cwd, system_prompt=reader.system_prompt)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
