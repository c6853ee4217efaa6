"""``session/load``: a session's stored history replayed as the updates a live prompt sent.

- user text/images → ``user_message_chunk``; assistant reasoning → ``agent_thought_chunk``,
  text → ``agent_message_chunk``, tool calls → ``tool_call``; tool results →
  ``tool_call_update`` — one chunk per stored part instead of one per delta.  Entries that are
  not messages (pins, compactions, notes, ...) are not shown.
- A result is shown as it was live: a read fenced as code; a write or an edit as its
  ``diff`` (the file before and after, from the turn's replay note; a turn without one — its
  process was killed — gets the diff the call's arguments give: the whole new file of a
  write, each replaced text of an edit); a command's output as text, fenced (its terminal is
  gone after the fact).
- A call that never returned (its turn was cancelled, its run failed, its process died) is
  replayed ``failed`` with the reason as content, before the next prompt's message — never
  left ``pending``.

**The replay note** (:func:`replay_note`): after a prompt's run, the face appends one ``note``
entry (never shown to the model) carrying what the history cannot: the diffs the editor was
shown (their texts as blobs, under ``blob`` keys so ``store/gc`` keeps them) and why a call
never returned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    UserMessageChunk,
)

from sidecar.acp.mapping import (
    ReadBlob,
    SessionUpdate,
    absolute,
    call_updates,
    content_blocks,
    interrupted_update,
    text_chunk,
    tool_result_update,
)
from sidecar.tools.catalog import EDIT_FILE, READ_FILE, RUN_COMMAND, WRITE_FILE
from sidecar.tools.presentation import fenced, language_of

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["NOTE_KEY", "history_updates", "replay_note"]

NOTE_KEY = "acpReplay"
"""``meta.acp[NOTE_KEY]`` of a replay note: ``{callId: {"diffs": [...], "failed": reason}}``."""
NOTE_TEXT = "what the editor was shown of this turn's tool calls (for session/load)"
#: A call with no result and no note saying why: its process ended first.
UNEXPLAINED = "failed: the sidecar stopped before this call returned; it was not re-run"


def replay_note(
    diffs: dict[str, list[FileEditToolCallContent]],
    interrupted: dict[str, str],
    put_blob: Callable[[bytes], str],
) -> dict[str, Any] | None:
    """A note entry's wire JSON for one turn (``None``: nothing to keep)."""
    calls: dict[str, dict[str, Any]] = {}
    for call_id, shown in diffs.items():
        calls.setdefault(call_id, {})["diffs"] = [
            {
                "path": d.path,
                "oldText": None if d.old_text is None else {"blob": put_blob(d.old_text.encode())},
                "newText": {"blob": put_blob(d.new_text.encode())},
            }
            for d in shown
        ]
    for call_id, reason in interrupted.items():
        calls.setdefault(call_id, {})["failed"] = reason
    if not calls:
        return None
    return {"kind": "note", "text": NOTE_TEXT, "meta": {"acp": {NOTE_KEY: calls}}}


def _notes(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if entry.get("kind") != "note":
            continue
        calls = ((entry.get("meta") or {}).get("acp") or {}).get(NOTE_KEY)
        if isinstance(calls, dict):
            out.update(calls)
    return out


def history_updates(
    entries: Iterable[dict[str, Any]], read_blob: ReadBlob, root: str | None
) -> list[SessionUpdate]:
    """What ``session/load`` replays for stored history entries."""
    entries = list(entries)
    notes = _notes(entries)
    out: list[SessionUpdate] = []
    plan_calls: set[str] = set()
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    open_calls: dict[str, None] = {}

    def close_open() -> None:
        for call_id in open_calls:
            reason = notes.get(call_id, {}).get("failed")
            out.append(
                interrupted_update(call_id, reason if isinstance(reason, str) else UNEXPLAINED)
            )
        open_calls.clear()

    for entry in entries:
        if entry.get("kind") != "message":
            continue
        role, message_id = entry.get("role"), entry.get("id")
        for part in entry.get("content", []):
            kind = part.get("type")
            if role == "user":
                if kind == "toolResult":
                    call_id = part.get("callId")
                    open_calls.pop(call_id, None)
                    if call_id not in plan_calls:
                        call = calls.get(call_id)
                        note = notes.get(call_id, {})
                        out.append(_result(part, call, note, read_blob, root))
                else:
                    close_open()  # the next prompt: what never returned, failed before it
                    out += [
                        UserMessageChunk(
                            session_update="user_message_chunk",
                            content=block,
                            message_id=message_id,
                        )
                        for block in content_blocks([part], read_blob)
                    ]
            elif role == "assistant":
                if kind == "text":
                    out.append(text_chunk("agent_message_chunk", part["text"], message_id))
                elif kind == "reasoning" and part.get("text"):
                    out.append(text_chunk("agent_thought_chunk", part["text"], message_id))
                elif kind == "toolCall":
                    arguments = part.get("arguments") or {}
                    calls[part["callId"]] = (part["name"], arguments)
                    shown = call_updates(part["callId"], part["name"], arguments, root, plan_calls)
                    if part["callId"] not in plan_calls:
                        open_calls[part["callId"]] = None
                    out += shown
    close_open()
    return out


def _result(
    part: dict[str, Any],
    call: tuple[str, dict[str, Any]] | None,
    note: dict[str, Any],
    read_blob: ReadBlob,
    root: str | None,
) -> ToolCallProgress:
    """A stored result shown as it was live (see the module's docstring)."""
    if call is None or part.get("isError"):
        return tool_result_update(part, read_blob)
    name, arguments = call
    text = "\n".join(
        b.text
        for b in content_blocks(part.get("content", []), read_blob)
        if isinstance(b, TextContentBlock)
    )
    shown: list[Any] | None = None
    if name == READ_FILE:
        path = arguments.get("path")
        shown = [_text(fenced(text, language_of(path if isinstance(path, str) else "")))]
    elif name == RUN_COMMAND:
        shown = [_text(fenced(text))]
    elif name in (WRITE_FILE, EDIT_FILE):
        shown = _noted_diffs(note, read_blob) or _argument_diffs(name, arguments, root)
    return tool_result_update(part, read_blob, shown or None)


def _text(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))


def _noted_diffs(note: dict[str, Any], read_blob: ReadBlob) -> list[FileEditToolCallContent]:
    out: list[FileEditToolCallContent] = []
    for diff in note.get("diffs") or []:
        try:
            old = diff.get("oldText")
            out.append(
                FileEditToolCallContent(
                    type="diff",
                    path=diff["path"],
                    old_text=None if old is None else read_blob(old["blob"]).decode(),
                    new_text=read_blob(diff["newText"]["blob"]).decode(),
                )
            )
        except Exception:  # a collected blob, a hand-edited note: the arguments' diff then
            return []
    return out


def _argument_diffs(
    name: str, arguments: dict[str, Any], root: str | None
) -> list[FileEditToolCallContent]:
    path = arguments.get("path")
    if not isinstance(path, str) or not path:
        return []
    path = absolute(path, root)
    if name == WRITE_FILE:
        content = arguments.get("content")
        if not isinstance(content, str):
            return []
        return [FileEditToolCallContent(type="diff", path=path, old_text=None, new_text=content)]
    raw = arguments.get("edits")
    edits = raw if isinstance(raw, list) and raw else [arguments]
    return [
        FileEditToolCallContent(
            type="diff", path=path, old_text=e["old_text"], new_text=e["new_text"]
        )
        for e in edits
        if isinstance(e, dict)
        and isinstance(e.get("old_text"), str)
        and isinstance(e.get("new_text"), str)
    ]
