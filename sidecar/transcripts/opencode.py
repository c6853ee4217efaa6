"""OpenCode exports (``opencode export [sessionID] > session.json``).

One JSON document ``{info, messages: [{info, parts}]}``.  A user message's ``text`` parts are
its text (``file`` parts become notes); an assistant message holds one or more model calls,
each between a ``step-start`` and a ``step-finish`` part (``tokens.{input, output, reasoning,
cache.{read, write}}`` and ``cost``): each step is an assistant message here (``text``,
``reasoning``, the calls of ``tool`` parts) followed by a ``user`` message of its tool results
(``state.output``, or ``state.error`` as an error), and one request.  A compaction is a user
message with a ``compaction`` part followed by the assistant message marked ``summary: true``
whose text is the summary (its call is a request too).  Sub-agent sessions (the ``task``
tool's children) are separate sessions, not in the export.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.entries import ContentPart, TextPart
from sidecar.transcripts.lines import epoch, read_json
from sidecar.transcripts.model import Transcript, TranscriptError, Usage
from sidecar.transcripts.thread import Thread, image_note, reasoning

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["parse", "usage_of"]


def usage_of(raw: object, cost: object) -> Usage:
    t = _dict(raw)
    cache = _dict(t.get("cache"))
    reasoning_tokens = t.get("reasoning")
    return Usage(
        input=_int(t.get("input")),
        cache_read=_int(cache.get("read")),
        cache_write_5m=_int(cache.get("write")),
        cache_write_1h=0,
        output=_int(t.get("output")),
        reasoning=reasoning_tokens if isinstance(reasoning_tokens, int) else None,
        cost=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
    )


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _time(part: dict[str, Any], fallback: float) -> float:
    """The latest time a part records (a tool's end, a text's end), else ``fallback``."""
    best = fallback
    for holder in (part.get("time"), _dict(part.get("state")).get("time")):
        if isinstance(holder, dict):
            for key in ("end", "start"):
                value = epoch(holder.get(key))
                if value is not None:
                    best = max(best, value)
                    break
    return best


class _Reader:
    def __init__(self, path: str) -> None:
        self.thread = Thread(path, "opencode")
        self.compaction_pending = False

    def user(self, parts: list[dict[str, Any]], at: float) -> None:
        content: list[ContentPart] = []
        for part in parts:
            ptype = part.get("type")
            if ptype == "compaction":
                self.compaction_pending = True
            elif ptype == "text" and isinstance(part.get("text"), str) and not part.get("ignored"):
                content.append(TextPart(type="text", text=part["text"]))
            elif ptype == "file":
                mime = part.get("mime")
                if mime in ("text/plain", "application/x-directory"):
                    continue  # OpenCode sends these as text parts of their own
                content.append(image_note(mime))
        if content and not self.compaction_pending:
            self.thread.add("user", content, at)

    def assistant(self, info: dict[str, Any], parts: list[dict[str, Any]], at: float) -> None:
        model = str(info.get("modelID") or "unknown")
        provider = str(info.get("providerID") or "unknown")
        if info.get("summary") is True:
            text = "\n".join(
                p["text"]
                for p in parts
                if p.get("type") == "text" and isinstance(p.get("text"), str)
            )
            for part in parts:
                if part.get("type") == "step-finish":
                    usage = usage_of(part.get("tokens"), part.get("cost"))
                    self.thread.request(_time(part, at), model, provider, usage, None)
            self.compaction_pending = False
            self.thread.compaction(text or "(empty summary)", at)
            return
        index: int | None = None
        results: list[tuple[object, list[TextPart], bool]] = []
        thinking = False
        step_at = at
        for part in parts:
            ptype = part.get("type")
            step_at = _time(part, step_at)
            if ptype == "step-start":
                continue
            if ptype == "step-finish":
                usage = usage_of(part.get("tokens"), part.get("cost"))
                context_end = index if index is not None else len(self.thread.staged)
                self.thread.request(
                    step_at, model, provider, usage, index, thinking, context_end=context_end
                )
                index, thinking = self._close_step(index, results, step_at)
                results = []
                continue
            if ptype not in ("text", "reasoning", "tool"):
                continue  # snapshots, patches, agents, retries: not sent to the model
            if index is None:
                index = self.thread.add("assistant", [], step_at)
            if ptype == "text" and part.get("text"):
                self.thread.extend(index, [TextPart(type="text", text=part["text"])])
            elif ptype == "reasoning":
                thinking = True
                meta = part.get("metadata")
                sig = None
                if isinstance(meta, dict) and isinstance(meta.get("anthropic"), dict):
                    sig = meta["anthropic"].get("signature")
                self.thread.extend(index, [reasoning(part.get("text"), sig)])
            elif ptype == "tool":
                state = _dict(part.get("state"))
                self.thread.call(index, part.get("callID"), part.get("tool"), state.get("input"))
                status = state.get("status")
                if status == "completed":
                    results.append((part.get("callID"), _output(state.get("output")), False))
                elif status == "error":
                    results.append((part.get("callID"), _output(state.get("error")), True))
        if index is not None:
            self.thread.warnings.append(
                f"message {info.get('id')}: a step without its step-finish (no request recorded)"
            )
            self._close_step(index, results, step_at)

    def _close_step(
        self, index: int | None, results: list[tuple[object, list[TextPart], bool]], at: float
    ) -> tuple[None, bool]:
        for call_id, output, failed in results:
            self.thread.result(0, call_id, list(output), failed, at)
        return None, False


def _output(value: object) -> list[TextPart]:
    return [TextPart(type="text", text=value if isinstance(value, str) else str(value or ""))]


def parse(path: Path, text: str | None = None) -> Transcript:
    document = read_json(path, text)
    name = str(path)
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        raise TranscriptError(name, 1, "an OpenCode export is an object with 'info' and 'messages'")
    info = _dict(document.get("info"))
    reader = _Reader(name)
    cwd: str | None = info.get("directory") if isinstance(info.get("directory"), str) else None
    for position, message in enumerate(document["messages"]):
        if not isinstance(message, dict) or not isinstance(message.get("info"), dict):
            raise TranscriptError(name, 0, f"message {position}: no 'info' object")
        minfo = message["info"]
        parts = [p for p in message.get("parts") or [] if isinstance(p, dict)]
        times = _dict(minfo.get("time"))
        at = epoch(times.get("created")) or 0.0
        if minfo.get("role") == "user":
            reader.user(parts, at)
        elif minfo.get("role") == "assistant":
            path_info = minfo.get("path")
            if (
                cwd is None
                and isinstance(path_info, dict)
                and isinstance(path_info.get("cwd"), str)
            ):
                cwd = path_info["cwd"]
            reader.assistant(minfo, parts, at)
        else:
            reader.thread.warnings.append(f"message {position}: role {minfo.get('role')!r} skipped")
    session_id = info.get("id") if isinstance(info.get("id"), str) else None
    return reader.thread.finish(session_id, cwd)
