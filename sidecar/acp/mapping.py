"""What is mapped to what between the core and ACP (pure functions, no I/O of their own).

- **Prompt → user turn**: ``text`` → a text part; ``image`` → an image part whose bytes go
  to the blob store; ``resource_link`` → a text line naming it; an embedded text
  ``resource`` → a text part carrying its contents with its URI; an embedded image blob →
  an image part; other blobs and ``audio`` are refused (not advertised).
- **Run events → session updates** (:class:`RunUpdates`): ``model.delta {text}`` →
  ``agent_message_chunk``; ``model.delta {reasoning}`` → ``agent_thought_chunk``;
  ``tool.callRequested`` → ``tool_call`` (``pending``, kind from the tool's name, title,
  ``rawInput``, ``locations`` from a ``path`` argument); ``tool.resultStored`` →
  ``tool_call_update`` (``completed`` / ``failed`` with the stored result as content, or
  what the editor tools already show for the call: a diff, a terminal); an ``update_plan``
  call → ``plan`` (its result → nothing; :mod:`sidecar.acp.plan`).
  Events of sub-agents (``payload.agent``) and the core's bookkeeping (assembly, statuses,
  history) have no ACP counterpart and send nothing.
- **Run end → stop reason**: ``cancelled`` → ``cancelled``; completed → the model's last
  stop reason (``max_tokens`` → ``max_tokens``; ``refusal`` / ``content_filter`` →
  ``refusal``; anything else, ``end_turn``); failed with ``agent.max_tool_rounds_exceeded``
  → ``max_turn_requests``; any other failure is a JSON-RPC error on ``session/prompt``
  (ACP has no failed stop reason) with the run's failure as ``data``.
- **History → replay** (:func:`history_updates`, ``session/load``): user text/images →
  ``user_message_chunk``; assistant reasoning → ``agent_thought_chunk``, text →
  ``agent_message_chunk``, tool calls → ``tool_call``; tool results → ``tool_call_update``
  — the same updates a live prompt sent, one chunk per stored part instead of one per delta.
  Entries that are not messages (pins, compactions, notes, ...) are not shown.
- **messageId**: a replayed chunk carries its history entry's id; a live chunk
  ``<runId>:<round>`` (the entry does not exist until the round's answer is complete).  Both
  change exactly where a new message starts, which is what clients read them for.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AudioContentBlock,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    ContentToolCallContent,
    CurrentModeUpdate,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)

from protocol.errors import ErrorCode
from sidecar.acp.plan import PLAN_TOOL, plan_update
from sidecar.errors import InvalidRequestError
from sidecar.tools.presentation import KINDS, call_title

__all__ = [
    "PromptBlock",
    "RunOutcome",
    "RunUpdates",
    "SessionUpdate",
    "StopReason",
    "history_updates",
    "prompt_parts",
    "absolute",
    "call_locations",
    "stop_reason",
    "tool_kind",
    "tool_title",
]

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AvailableCommandsUpdate
    | UsageUpdate
    | AgentPlanUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
)
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
ReadBlob = Callable[[str], bytes]

#: The run loop's stop reasons (providers' normalised ``stopReason``) → ACP's.
_STOP_REASONS: dict[str, StopReason] = {
    "max_tokens": "max_tokens",
    "refusal": "refusal",
    "content_filter": "refusal",
}
#: Words in a tool's name → the ACP tool kind an editor picks an icon by.
_KINDS: tuple[tuple[ToolKind, tuple[str, ...]], ...] = (
    ("read", ("read", "view", "cat", "open")),
    ("edit", ("write", "edit", "patch", "replace", "create")),
    ("delete", ("delete", "remove", "rm")),
    ("move", ("move", "rename", "mv")),
    ("search", ("search", "grep", "find", "glob", "list", "ls")),
    ("execute", ("run", "exec", "bash", "shell", "command", "terminal")),
    ("fetch", ("fetch", "http", "web", "url")),
    ("think", ("think", "plan")),
)


# --- prompt → user turn ----------------------------------------------------------------------


def prompt_parts(blocks: Sequence[PromptBlock], put_blob: Callable[[bytes], str]) -> list[Any]:
    """A ``session/prompt``'s blocks as the core's content parts (wire JSON)."""
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContentBlock):
            parts.append(_image(block.data, block.mime_type, put_blob))
        elif isinstance(block, ResourceContentBlock):
            title = block.title or block.name
            parts.append({"type": "text", "text": f"[{title}]({block.uri})"})
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(
                    {
                        "type": "text",
                        "text": f'<resource uri="{resource.uri}">\n{resource.text}\n</resource>',
                    }
                )
            elif (resource.mime_type or "").startswith("image/"):
                parts.append(_image(resource.blob, resource.mime_type or "", put_blob))
            else:
                raise _unsupported(f"an embedded {resource.mime_type or 'binary'} resource")
        else:
            raise _unsupported(f"a {block.type} block")
    if not parts:
        raise InvalidRequestError(ErrorCode.PARAMS_INVALID, "the prompt is empty")
    return parts


def _image(data: str, mime_type: str, put_blob: Callable[[bytes], str]) -> dict[str, Any]:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequestError(
            ErrorCode.PARAMS_INVALID, "an image's data is not base64"
        ) from None
    return {"type": "image", "blob": put_blob(raw), "mediaType": mime_type}


def _unsupported(what: str) -> InvalidRequestError:
    return InvalidRequestError(
        ErrorCode.PARAMS_INVALID,
        f"{what} cannot be sent to the model (see agentCapabilities.promptCapabilities)",
    )


# --- tools -----------------------------------------------------------------------------------


def tool_kind(name: str) -> ToolKind:
    """A built-in tool's own kind (:data:`sidecar.tools.presentation.KINDS`); any other
    tool's, guessed from the words of its name."""
    if name in KINDS:
        return KINDS[name]
    words = name.lower().replace("-", "_").replace(".", "_").split("_")
    for kind, keys in _KINDS:
        if any(word in keys for word in words):
            return kind
    return "other"


def tool_title(name: str, arguments: dict[str, Any]) -> str:
    """A built-in call's human title (:func:`sidecar.tools.presentation.call_title`); any
    other tool's name and its first telling argument."""
    title = call_title(name, arguments)
    if title is not None:
        return title
    for key in ("path", "file", "command", "query", "pattern", "url"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return f"{name} {value}"
    return name


def absolute(path: str, root: str | None) -> str:
    return os.path.join(root, path) if root and not os.path.isabs(path) else path


def call_locations(arguments: dict[str, Any], root: str | None) -> list[ToolCallLocation] | None:
    """Where a call points before it runs: its ``path`` (absolute), at ``offset`` (a read's
    first line) or ``line`` when given."""
    path = arguments.get("path")
    if not isinstance(path, str) or not path or "\x00" in path:
        return None
    line = None
    for key in ("offset", "line"):
        value = arguments.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            line = value
            break
    return [ToolCallLocation(path=absolute(path, root), line=line)]


def _tool_call(
    call_id: str, name: str, arguments: dict[str, Any], root: str | None
) -> ToolCallStart:
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title=tool_title(name, arguments),
        kind=tool_kind(name),
        status="pending",
        raw_input=arguments,
        locations=call_locations(arguments, root),
    )


def _tool_result(
    part: dict[str, Any], read_blob: ReadBlob, shown: list[Any] | None = None
) -> ToolCallProgress:
    """A stored tool result as the call's final update; ``shown``: what the editor tools
    showed for the call instead of the result text (empty: the content is left as it is)."""
    status: Literal["failed", "completed"] = "failed" if part.get("isError") else "completed"
    if shown == []:
        return ToolCallProgress(
            session_update="tool_call_update", tool_call_id=part["callId"], status=status
        )
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=part["callId"],
        status=status,
        content=shown
        or [
            ContentToolCallContent(type="content", content=block)
            for block in _blocks(part.get("content", []), read_blob)
        ],
    )


def _blocks(
    parts: Iterable[dict[str, Any]], read_blob: ReadBlob
) -> list[TextContentBlock | ImageContentBlock]:
    out: list[TextContentBlock | ImageContentBlock] = []
    for part in parts:
        if part["type"] == "text":
            out.append(TextContentBlock(type="text", text=part["text"]))
        elif part["type"] == "image":
            data = base64.b64encode(read_blob(part["blob"])).decode("ascii")
            out.append(ImageContentBlock(type="image", data=data, mime_type=part["mediaType"]))
    return out


# --- run events → updates --------------------------------------------------------------------


class RunOutcome:
    """How a run ended, as ``session/prompt`` answers it."""

    def __init__(self, stop: StopReason | None, failure: dict[str, Any] | None) -> None:
        self.stop = stop
        """The stop reason, or None when the run failed (``failure``)."""
        self.failure = failure


def stop_reason(status: str, model_stop: str | None, failure: dict[str, Any] | None) -> RunOutcome:
    if status == "cancelled":
        return RunOutcome("cancelled", None)
    if status == "completed":
        return RunOutcome(_STOP_REASONS.get(model_stop or "", "end_turn"), None)
    if failure is not None and failure.get("code") == ErrorCode.MAX_ROUNDS:
        return RunOutcome("max_turn_requests", None)
    return RunOutcome(None, failure or {"code": ErrorCode.INTERNAL, "message": "the run failed"})


class RunUpdates:
    """One prompt's run events → session updates, then the prompt's outcome.

    ``read_entry(seq)`` reads a stored history entry (a tool result is sent as stored);
    ``root`` is the session's primary root (relative tool paths become absolute
    ``locations``); ``shown(callId)`` is what the editor tools showed for a call (see
    :meth:`sidecar.acp.tools.EditorTools.shown`)."""

    def __init__(
        self,
        read_entry: Callable[[int], dict[str, Any] | None],
        read_blob: ReadBlob,
        root: str | None,
        shown: Callable[[str], list[Any] | None] | None = None,
    ) -> None:
        self._shown = shown
        self._read_entry = read_entry
        self._read_blob = read_blob
        self._root = root
        self._model_stop: str | None = None
        self._plan_calls: set[str] = set()
        self.model_calls = 0
        """Model calls the run made (a script's rounds it played)."""
        self.outcome: RunOutcome | None = None

    def updates(self, event: dict[str, Any]) -> list[SessionUpdate]:
        kind, payload = event["type"], event.get("payload") or {}
        if kind == "model.requestCreated" or kind == "compaction.started":
            self.model_calls += 1
        if "agent" in payload:  # a sub-agent's conversation is not the session's
            return []
        if kind == "model.delta":
            message_id = f"{event['runId']}:{payload.get('round', 0)}"
            if "text" in payload:
                return [_chunk("agent_message_chunk", payload["text"], message_id)]
            if payload.get("reasoning"):
                return [_chunk("agent_thought_chunk", payload["reasoning"], message_id)]
            return []
        if kind == "model.completed":
            self._model_stop = payload.get("stopReason")
            return []
        if kind == "tool.callRequested":
            return _call_updates(
                payload["callId"],
                payload["name"],
                payload.get("arguments") or {},
                self._root,
                self._plan_calls,
            )
        if kind == "tool.resultStored":
            if payload["callId"] in self._plan_calls:
                return []
            return self._result(payload)
        if kind == "run.completed":
            self.outcome = stop_reason(
                payload.get("status", "failed"), self._model_stop, payload.get("failure")
            )
        return []

    def _result(self, payload: dict[str, Any]) -> list[SessionUpdate]:
        shown = self._shown(str(payload["callId"])) if self._shown is not None else None
        entry = self._read_entry(int(payload["seq"]))
        for part in (entry or {}).get("content", []):
            if part.get("type") == "toolResult" and part.get("callId") == payload["callId"]:
                return [_tool_result(part, self._read_blob, shown)]
        status: Literal["failed", "completed"] = "failed" if payload.get("isError") else "completed"
        return [
            ToolCallProgress(
                session_update="tool_call_update", tool_call_id=payload["callId"], status=status
            )
        ]


def _call_updates(
    call_id: str, name: str, arguments: dict[str, Any], root: str | None, plan_calls: set[str]
) -> list[SessionUpdate]:
    """A tool call as shown: an ``update_plan`` call is the plan (or nothing, when it is
    malformed: the model reads why), any other a ``tool_call``."""
    if name != PLAN_TOOL:
        return [_tool_call(call_id, name, arguments, root)]
    plan_calls.add(call_id)
    try:
        return [plan_update(arguments)]
    except ValueError:
        return []


def _chunk(
    kind: Literal["agent_message_chunk", "agent_thought_chunk"], text: str, message_id: str | None
) -> AgentMessageChunk | AgentThoughtChunk:
    block = TextContentBlock(type="text", text=text)
    if kind == "agent_message_chunk":
        return AgentMessageChunk(session_update=kind, content=block, message_id=message_id)
    return AgentThoughtChunk(session_update=kind, content=block, message_id=message_id)


# --- history → replay ------------------------------------------------------------------------


def history_updates(
    entries: Iterable[dict[str, Any]], read_blob: ReadBlob, root: str | None
) -> list[SessionUpdate]:
    """What ``session/load`` replays for stored history entries."""
    out: list[SessionUpdate] = []
    plan_calls: set[str] = set()
    for entry in entries:
        if entry.get("kind") != "message":
            continue
        role, message_id = entry.get("role"), entry.get("id")
        for part in entry.get("content", []):
            kind = part.get("type")
            if role == "user":
                if kind == "toolResult":
                    if part.get("callId") not in plan_calls:
                        out.append(_tool_result(part, read_blob))
                else:
                    out += [
                        UserMessageChunk(
                            session_update="user_message_chunk",
                            content=block,
                            message_id=message_id,
                        )
                        for block in _blocks([part], read_blob)
                    ]
            elif role == "assistant":
                if kind == "text":
                    out.append(_chunk("agent_message_chunk", part["text"], message_id))
                elif kind == "reasoning" and part.get("text"):
                    out.append(_chunk("agent_thought_chunk", part["text"], message_id))
                elif kind == "toolCall":
                    out += _call_updates(
                        part["callId"],
                        part["name"],
                        part.get("arguments") or {},
                        root,
                        plan_calls,
                    )
    return out
