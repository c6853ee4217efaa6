"""pi coding agent sessions (``~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl``).

A ``session`` header (cwd, provider, model), then ``message`` lines whose ``message.role`` is
``user``, ``assistant`` or ``toolResult`` (also ``bashExecution``: a command the user ran with
``!``, shown to the model as a user message).  Every assistant message is one API request, with
its own ``usage`` (``input``, ``output``, ``cacheRead``, ``cacheWrite``, ``cost.total``),
``provider`` and ``model``.  ``compaction`` lines hold the summary, the first entry kept
verbatim (``firstKeptEntryIndex`` in version 1 files, ``firstKeptEntryId`` later) and the
tokens before.  Version 2+ files are a tree (``id`` / ``parentId``): the thread read is the
path from the last entry back to the root.  ``model_change`` and ``thinking_level_change``
only set what later messages say themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.entries import ContentPart, TextPart
from sidecar.transcripts.lines import Line, at_line, epoch, read_jsonl
from sidecar.transcripts.model import Transcript, TranscriptError, Usage
from sidecar.transcripts.thread import Thread, reasoning, text_parts

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["looks_like", "parse"]


def looks_like(first: dict[str, Any]) -> bool:
    return first.get("type") == "session" and ("cwd" in first or "version" in first)


def usage_of(raw: object) -> Usage:
    u = raw if isinstance(raw, dict) else {}
    cost = u.get("cost")
    total = cost.get("total") if isinstance(cost, dict) else cost
    return Usage(
        input=_int(u.get("input")),
        cache_read=_int(u.get("cacheRead")),
        cache_write_5m=_int(u.get("cacheWrite")),
        cache_write_1h=0,
        output=_int(u.get("output")),
        cost=float(total)
        if isinstance(total, int | float) and not isinstance(total, bool)
        else None,
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _branch(lines: list[Line]) -> list[Line]:
    """The entries of the current branch: all of them in a linear (version 1) file; else the
    path from the last entry back to the root, in order."""
    by_id = {obj["id"]: (n, obj) for n, obj in lines if isinstance(obj.get("id"), str)}
    tree = [obj for _, obj in lines[1:] if "parentId" in obj]
    if not tree:
        return lines
    path: list[Line] = []
    node: Line | None = next(((n, o) for n, o in reversed(lines) if "parentId" in o), None)
    seen: set[str] = set()
    while node is not None and node[1].get("id") not in seen:
        seen.add(node[1]["id"])
        path.append(node)
        parent = node[1].get("parentId")
        node = by_id.get(parent) if isinstance(parent, str) else None
    return [lines[0], *reversed(path)]


def parse(path: Path, lines: list[Line] | None = None) -> Transcript:
    lines = read_jsonl(path) if lines is None else lines
    name = str(path)
    header = lines[0][1]
    if header.get("type") != "session":
        raise TranscriptError(name, lines[0][0], "a pi session starts with a 'session' line")
    entries = _branch(lines)
    if len(entries) < len(lines):
        skipped = len(lines) - len(entries)
        thread_warn = (
            f"{skipped} entr(ies) of other branches skipped (the last entry's path is read)"
        )
    else:
        thread_warn = ""
    thread = Thread(name, "pi")
    if thread_warn:
        thread.warnings.append(thread_warn)
    # Where each entry's message went: entry index (file order, header = 0) and entry id ->
    # the staged message index it produced (or the next one, when it produced none).
    at_entry: dict[int, int] = {}
    at_id: dict[str, int] = {}
    provider = str(header.get("provider") or "unknown")
    for position, (number, obj) in enumerate(entries):
        with at_line(name, number):
            at_entry[position] = len(thread.staged)
            if isinstance(obj.get("id"), str):
                at_id[obj["id"]] = len(thread.staged)
            kind = obj.get("type")
            at = epoch(obj.get("timestamp")) or 0.0
            if kind == "message":
                message = obj.get("message")
                if not isinstance(message, dict):
                    raise TranscriptError(name, number, "a message line without its message")
                _message(thread, number, message, at, provider)
            elif kind == "compaction":
                summary = obj.get("summary")
                kept: int | None = None
                if isinstance(obj.get("firstKeptEntryIndex"), int):
                    kept = at_entry.get(obj["firstKeptEntryIndex"])
                elif isinstance(obj.get("firstKeptEntryId"), str):
                    kept = at_id.get(obj["firstKeptEntryId"])
                before = obj.get("tokensBefore")
                thread.compaction(
                    summary if isinstance(summary, str) and summary else "(empty summary)",
                    at,
                    first_kept=kept,
                    tokens_before=before if isinstance(before, int) else None,
                )
            elif kind in (
                "model_change",
                "thinking_level_change",
                "session",
                "label",
                "session_info",
            ):
                continue
            else:
                thread.warnings.append(f"line {number}: an entry of type {kind!r} skipped")
    return thread.finish(_str(header.get("id")), _str(header.get("cwd")))


def _message(
    thread: Thread, number: int, message: dict[str, Any], at: float, provider: str
) -> None:
    role = message.get("role")
    if role == "user":
        parts: list[ContentPart] = [*text_parts(message.get("content"))]
        if parts:
            thread.add("user", parts, at)
    elif role == "assistant":
        index = thread.add("assistant", [], at)
        thinking = False
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                if block.get("text"):
                    thread.extend(index, [TextPart(type="text", text=block["text"])])
            elif btype == "thinking":
                thinking = True
                thread.extend(
                    index, [reasoning(block.get("thinking"), block.get("thinkingSignature"))]
                )
            elif btype == "toolCall":
                thread.call(index, block.get("id"), block.get("name"), block.get("arguments"))
            else:
                thread.warnings.append(f"line {number}: an assistant block {btype!r} skipped")
        thread.request(
            at,
            str(message.get("model") or "unknown"),
            str(message.get("provider") or provider),
            usage_of(message.get("usage")),
            index,
            thinking=thinking,
        )
    elif role == "toolResult":
        thread.result(
            number,
            message.get("toolCallId"),
            text_parts(message.get("content")),
            bool(message.get("isError")),
            at,
        )
    elif role == "bashExecution":
        command = message.get("command") or ""
        output = message.get("output") or ""
        text = f"Ran `{command}`\n```\n{output}\n```"
        thread.add("user", [TextPart(type="text", text=text)], at)
    elif isinstance(message.get("content"), str | list):
        parts = [*text_parts(message.get("content"))]
        if parts:
            thread.add("user", parts, at)
        thread.warnings.append(f"line {number}: a {role!r} message read as a user message")
    else:
        thread.warnings.append(f"line {number}: a {role!r} message skipped")


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
