"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``).

One JSON object a line; the conversation is in ``message``.  One API response is written over
several ``assistant`` lines (one per content block) that share ``requestId`` and repeat the
same ``usage``: they are one message and one request here, with the usage read once (its
largest ``output_tokens``: earlier lines carry a mid-stream value).  Tool results come back
in ``user`` lines as ``tool_result`` blocks.  ``isSidechain`` lines are sub-agents: threaded
by ``parentUuid`` to their root, each is a transcript of its own (newer versions write them to
``<session>/subagents/*.jsonl``, read too).  A compaction is a ``system`` line with subtype
``compact_boundary`` then a ``user`` line with ``isCompactSummary``.  What only the terminal
shows (``summary`` titles, ``file-history-snapshot``, other ``system`` lines) is skipped.
Lines are read in file order except a line written before its ``parentUuid`` (newer versions
write a parallel call's result before the call's own line): it is read just after its parent.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from protocol.entries import ContentPart, TextPart
from sidecar.transcripts.lines import Line, at_line, epoch, read_jsonl
from sidecar.transcripts.model import Transcript, TranscriptError, Usage
from sidecar.transcripts.thread import Thread, image_note, reasoning, text_parts

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["looks_like", "parent_order", "parse"]

_SKIPPED = {
    "summary",
    "file-history-snapshot",
    "attachment",
    "progress",
    "queue-operation",
    "last-prompt",
    "permission-mode",
    "ai-title",
    "custom-title",
    "agent-name",
    "mode",
}


def looks_like(first: dict[str, Any]) -> bool:
    return (
        ("sessionId" in first and "uuid" in first)
        or first.get("type") in ("summary", "file-history-snapshot")
        or ("leafUuid" in first)
    )


def usage_of(raw: object) -> Usage:
    u = raw if isinstance(raw, dict) else {}
    split = u.get("cache_creation")
    written = _int(u.get("cache_creation_input_tokens"))
    if isinstance(split, dict):
        five = _int(split.get("ephemeral_5m_input_tokens"))
        hour = _int(split.get("ephemeral_1h_input_tokens"))
        if five + hour != written:
            five = written - hour  # older logs split less than they wrote: the rest is 5m
    else:
        five, hour = written, 0
    return Usage(
        input=_int(u.get("input_tokens")),
        cache_read=_int(u.get("cache_read_input_tokens")),
        cache_write_5m=max(five, 0),
        cache_write_1h=hour,
        output=_int(u.get("output_tokens")),
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class _Reader:
    """One thread's lines, in file order."""

    def __init__(self, path: str) -> None:
        self.thread = Thread(path, "claude-code")
        self.responses: dict[str, tuple[int, Any]] = {}
        """Request key -> (staged message, its request draft)."""
        self.pending_boundary: tuple[float, int | None] | None = None

    def line(self, number: int, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        at = epoch(obj.get("timestamp")) or 0.0
        if kind == "system":
            if obj.get("subtype") == "compact_boundary":
                meta = obj.get("compactMetadata")
                before = meta.get("preTokens") if isinstance(meta, dict) else None
                self.pending_boundary = (at, before if isinstance(before, int) else None)
            return
        message = obj.get("message")
        if not isinstance(message, dict):
            raise TranscriptError(self.thread.path, number, f"a {kind} line without its message")
        if kind == "user":
            self.user(number, obj, message, at)
        elif kind == "assistant":
            self.assistant(number, obj, message, at)

    def user(self, number: int, obj: dict[str, Any], message: dict[str, Any], at: float) -> None:
        content = message.get("content")
        if obj.get("isCompactSummary"):
            text = "\n".join(p.text for p in text_parts(content) if isinstance(p, TextPart))
            before_at, before = self.pending_boundary or (at, None)
            self.pending_boundary = None
            self.thread.compaction(text or "(empty summary)", before_at, tokens_before=before)
            return
        if self.pending_boundary is not None:
            at0, before = self.pending_boundary
            self.pending_boundary = None
            self.thread.warnings.append(f"line {number}: a compaction boundary without its summary")
            self.thread.compaction("(summary not logged)", at0, tokens_before=before)
        if isinstance(content, str):
            if content:
                self.thread.add("user", [TextPart(type="text", text=content)], at)
            return
        if not isinstance(content, list):
            raise TranscriptError(
                self.thread.path, number, "user content is neither text nor blocks"
            )
        parts: list[ContentPart] = []
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "tool_result":
                if parts:
                    self.thread.add("user", parts, at)
                    parts = []
                self.thread.result(
                    number,
                    block.get("tool_use_id"),
                    text_parts(block.get("content")),
                    bool(block.get("is_error")),
                    at,
                )
            elif btype == "text" and isinstance(block.get("text"), str):
                parts.append(TextPart(type="text", text=block["text"]))
            elif btype == "image":
                source = block.get("source")
                parts.append(
                    image_note(source.get("media_type") if isinstance(source, dict) else None)
                )
                self.thread.warnings.append(f"line {number}: an image kept as a note")
            else:
                self.thread.warnings.append(f"line {number}: a user block {btype!r} skipped")
        if parts:
            self.thread.add("user", parts, at)

    def assistant(
        self, number: int, obj: dict[str, Any], message: dict[str, Any], at: float
    ) -> None:
        if obj.get("isApiErrorMessage") or message.get("model") == "<synthetic>":
            self.thread.warnings.append(f"line {number}: an API error notice skipped (no request)")
            return
        key = obj.get("requestId") or message.get("id") or obj.get("uuid") or f"line{number}"
        usage = usage_of(message.get("usage"))
        known = self.responses.get(key)
        if known is None:
            index = self.thread.add("assistant", [], at)
            draft = self.thread.request(
                at, str(message.get("model") or "unknown"), "anthropic", usage, index
            )
            self.responses[key] = (index, draft)
        else:
            index, draft = known
            draft.at = at
            if usage.output > draft.usage.output:
                draft.usage = replace(draft.usage, output=usage.output)
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks if isinstance(blocks, list) else []:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                if block.get("text"):
                    self.thread.extend(index, [TextPart(type="text", text=block["text"])])
            elif btype == "thinking":
                draft.thinking = True
                self.thread.extend(
                    index, [reasoning(block.get("thinking"), block.get("signature"))]
                )
            elif btype == "redacted_thinking":
                draft.thinking = True
                part = reasoning("", None, data=block.get("data"), redacted=True)
                self.thread.extend(index, [replace_provider(part)])
            elif btype == "tool_use" or btype == "server_tool_use":
                self.thread.call(index, block.get("id"), block.get("name"), block.get("input"))
            else:
                self.thread.warnings.append(f"line {number}: an assistant block {btype!r} skipped")


def replace_provider(part: Any) -> Any:
    return part.model_copy(update={"provider": "anthropic"})


def _thread_roots(lines: list[Line]) -> dict[str, str]:
    """Sidechain line uuid -> the uuid of its thread's root (the line whose parent is not a
    sidechain line)."""
    parent: dict[str, str | None] = {}
    for _, obj in lines:
        if obj.get("isSidechain") and isinstance(obj.get("uuid"), str):
            p = obj.get("parentUuid")
            parent[obj["uuid"]] = p if isinstance(p, str) else None
    roots: dict[str, str] = {}
    for uuid in parent:
        chain = [uuid]
        node = uuid
        while True:
            up = parent.get(node)
            if up is None or up not in parent or up in chain:
                break
            if up in roots:
                node = roots[up]
                break
            chain.append(up)
            node = up
        for member in chain:
            roots[member] = node
    return roots


def parent_order(lines: list[Line]) -> list[Line]:
    """``lines`` in file order, but a line whose ``parentUuid`` names a line further down comes
    right after that line (and its own late children after it); a parent never written (or a
    cycle) leaves its lines where the file has them."""
    later = {o["uuid"] for _, o in lines if isinstance(o.get("uuid"), str)}
    waiting: dict[str, list[Line]] = {}
    out: list[Line] = []
    for line in lines:
        parent = line[1].get("parentUuid")
        if isinstance(parent, str) and parent in later:
            waiting.setdefault(parent, []).append(line)
            continue
        stack = [line]
        while stack:
            current = stack.pop()
            out.append(current)
            uuid = current[1].get("uuid")
            if isinstance(uuid, str):
                later.discard(uuid)
                stack.extend(reversed(waiting.pop(uuid, [])))
    stranded = {id(line) for group in waiting.values() for line in group}
    return out + [line for line in lines if id(line) in stranded]


def parse(path: Path, lines: list[Line] | None = None, sidechain_only: bool = False) -> Transcript:
    lines = parent_order(read_jsonl(path) if lines is None else lines)
    name = str(path)
    main = _Reader(name)
    side: dict[str, _Reader] = {}
    roots = _thread_roots(lines)
    skipped: Counter[str] = Counter()
    session_id: str | None = None
    cwd: str | None = None
    for number, obj in lines:
        with at_line(name, number):
            kind = obj.get("type")
            if kind not in ("user", "assistant", "system"):
                skipped[str(kind)] += 1
                continue
            session_id = session_id or _str(obj.get("sessionId"))
            if obj.get("isSidechain") and not sidechain_only:
                root = roots.get(str(obj.get("uuid")), str(obj.get("uuid")))
                reader = side.setdefault(root, _Reader(name))
                reader.line(number, obj)
                continue
            cwd = cwd or _str(obj.get("cwd"))
            main.line(number, obj)
    for kind, n in sorted(skipped.items()):
        if kind not in _SKIPPED:
            main.thread.warnings.append(f"{n} line(s) of type {kind!r} skipped")
    subagents = [r.thread.finish(session_id, cwd) for r in side.values()]
    folder = path.parent / path.stem / "subagents"
    if not sidechain_only and folder.is_dir():
        subagents += [parse(p, sidechain_only=True) for p in sorted(folder.glob("*.jsonl"))]
    return main.thread.finish(session_id, cwd, subagents=subagents)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
