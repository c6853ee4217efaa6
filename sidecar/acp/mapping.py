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
- **A call that never returned**: when a run ends cancelled or failed with a tool call still
  open, the call's final update is ``failed`` with the reason as its content (never left
  ``pending``); :class:`RunUpdates` keeps these and the diffs it showed, for the turn's
  replay note (:mod:`sidecar.acp.replay`, which replays history on ``session/load``).
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
    FileEditToolCallContent,
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
    "ReadBlob",
    "RunOutcome",
    "RunUpdates",
    "SessionUpdate",
    "StopReason",
    "prompt_parts",
    "absolute",
    "call_locations",
    "call_updates",
    "content_blocks",
    "interrupted_update",
    "stop_reason",
    "text_chunk",
    "tool_kind",
    "tool_result_update",
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


def tool_result_update(
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
            for block in content_blocks(part.get("content", []), read_blob)
        ],
    )


def interrupted_update(call_id: str, reason: str) -> ToolCallProgress:
    """The final update of a call that never returned a result."""
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        status="failed",
        content=[
            ContentToolCallContent(
                type="content", content=TextContentBlock(type="text", text=reason)
            )
        ],
    )


def content_blocks(
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
        self._open: dict[str, None] = {}
        """Calls requested and not yet answered, in order."""
        self.model_calls = 0
        """Model calls the run made (a script's rounds it played)."""
        self.answered = False
        """Whether the run stored an answer of the model (an assistant message)."""
        self.diffs: dict[str, list[FileEditToolCallContent]] = {}
        """Per call: the diffs its final update showed."""
        self.interrupted: dict[str, str] = {}
        """Per call that never returned: why (its final update says so)."""
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
                return [text_chunk("agent_message_chunk", payload["text"], message_id)]
            if payload.get("reasoning"):
                return [text_chunk("agent_thought_chunk", payload["reasoning"], message_id)]
            return []
        if kind == "model.completed":
            self._model_stop = payload.get("stopReason")
            return []
        if kind == "history.appended" and payload.get("role") == "assistant":
            self.answered = True
        if kind == "tool.callRequested":
            if payload.get("name") != PLAN_TOOL:
                self._open[str(payload["callId"])] = None
            return call_updates(
                payload["callId"],
                payload["name"],
                payload.get("arguments") or {},
                self._root,
                self._plan_calls,
            )
        if kind == "tool.resultStored":
            self._open.pop(str(payload["callId"]), None)
            if payload["callId"] in self._plan_calls:
                return []
            return self._result(payload)
        if kind == "run.completed":
            status = payload.get("status", "failed")
            self.outcome = stop_reason(status, self._model_stop, payload.get("failure"))
            return self._never_returned(status, payload.get("failure"))
        return []

    def _never_returned(self, status: str, failure: dict[str, Any] | None) -> list[SessionUpdate]:
        """The calls still open when the run ended: failed, with the reason."""
        if status == "cancelled":
            reason = "cancelled: the turn was cancelled before this call returned"
        else:
            message = (failure or {}).get("message") or "the run failed"
            reason = f"failed: the run stopped before this call returned ({message})"
        out: list[SessionUpdate] = []
        for call_id in self._open:
            self.interrupted[call_id] = reason
            out.append(interrupted_update(call_id, reason))
        self._open.clear()
        return out

    def _result(self, payload: dict[str, Any]) -> list[SessionUpdate]:
        shown = self._shown(str(payload["callId"])) if self._shown is not None else None
        diffs = [c for c in shown or [] if isinstance(c, FileEditToolCallContent)]
        if diffs:
            self.diffs[str(payload["callId"])] = diffs
        entry = self._read_entry(int(payload["seq"]))
        for part in (entry or {}).get("content", []):
            if part.get("type") == "toolResult" and part.get("callId") == payload["callId"]:
                return [tool_result_update(part, self._read_blob, shown)]
        status: Literal["failed", "completed"] = "failed" if payload.get("isError") else "completed"
        return [
            ToolCallProgress(
                session_update="tool_call_update", tool_call_id=payload["callId"], status=status
            )
        ]


def call_updates(
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


def text_chunk(
    kind: Literal["agent_message_chunk", "agent_thought_chunk"], text: str, message_id: str | None
) -> AgentMessageChunk | AgentThoughtChunk:
    block = TextContentBlock(type="text", text=text)
    if kind == "agent_message_chunk":
        return AgentMessageChunk(session_update=kind, content=block, message_id=message_id)
    return AgentThoughtChunk(session_update=kind, content=block, message_id=message_id)
