"""A public pi session log, request by request, as a host that runs its own loop assembles it.

A small reader of pi's JSONL (``/work/shared/real-sessions/README.md``: a ``message`` line per
user message, assistant message — one API request each — and tool result), enough for the
window tests until the ``transcripts`` parsers land (``sidecar/transcripts``).  Each recorded
request becomes what ``context/assemble`` takes: the completed turns before it (in history),
the user message of its turn (``userTurn``) and the turn's messages so far (``turn``: the
assistant's calls and their results).  Compactions, model changes and shell lines are left
out: the sidecar's own policy is replayed, not the agent's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PI_BEFORE_COMPACTION", "PiRequest", "PiTurn", "read_pi_turns", "requests_of"]

PI_BEFORE_COMPACTION = Path("/work/shared/real-sessions/pi-mono/before-compaction.jsonl")


@dataclass(slots=True)
class PiTurn:
    user: list[dict[str, Any]]
    """The user message's content parts."""
    rounds: list[dict[str, Any]] = field(default_factory=list)
    """``{role, content}`` messages after it: assistant answers and tool results."""

    def entries(self) -> list[dict[str, Any]]:
        """The turn as history entries (``session/append``)."""
        head = {"kind": "message", "role": "user", "content": self.user}
        return [head, *({"kind": "message", **m} for m in self.rounds)]


@dataclass(frozen=True, slots=True)
class PiRequest:
    turn_index: int
    """The turn it belongs to (the turns before it are history)."""
    turn: list[dict[str, Any]]
    """The turn's messages before the request's answer."""


def _part(part: dict[str, Any]) -> dict[str, Any] | None:
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part.get("text", "")}
    if kind == "thinking":
        return {"type": "reasoning", "text": part.get("thinking", "")}
    if kind == "toolCall":
        return {
            "type": "toolCall",
            "callId": part["id"],
            "name": part["name"],
            "arguments": part.get("arguments") or {},
        }
    return None


def read_pi_turns(path: Path) -> list[PiTurn]:
    """The session's turns, in order (calls left without a result dropped from their
    message: pi logs an aborted call that way)."""
    turns: list[PiTurn] = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") != "message":
            continue
        message = record["message"]
        role = message["role"]
        if role == "user":
            content = message["content"]
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
            turns.append(PiTurn([p for p in map(_part, parts) if p is not None]))
        elif role == "assistant" and turns:
            parts = [p for p in map(_part, message.get("content") or []) if p is not None]
            parts = [p for p in parts if p["type"] != "text" or p["text"]]
            turns[-1].rounds.append({"role": "assistant", "content": parts})
        elif role == "toolResult" and turns:
            body = "\n".join(
                p.get("text", "") for p in message.get("content") or [] if p.get("type") == "text"
            )
            result = {
                "type": "toolResult",
                "callId": message["toolCallId"],
                "content": [{"type": "text", "text": body}],
                "isError": bool(message.get("isError")),
            }
            turns[-1].rounds.append({"role": "user", "content": [result]})
    for turn in turns:
        _pair(turn)
    return turns


def _pair(turn: PiTurn) -> None:
    """Keep only calls answered by a result (and results answering a call), and one result
    message after each assistant message: what a provider accepts."""
    out: list[dict[str, Any]] = []
    answered = {
        p["callId"]
        for m in turn.rounds
        if m["role"] == "user"
        for p in m["content"]
        if p["type"] == "toolResult"
    }
    open_calls: set[str] = set()
    for message in turn.rounds:
        if message["role"] == "assistant":
            content = [
                p for p in message["content"] if p["type"] != "toolCall" or p["callId"] in answered
            ]
            open_calls = {p["callId"] for p in content if p["type"] == "toolCall"}
            out.append({"role": "assistant", "content": content or [{"type": "text", "text": "…"}]})
        else:
            results = [p for p in message["content"] if p["callId"] in open_calls]
            open_calls -= {p["callId"] for p in results}
            if not results:
                continue
            if out and out[-1]["role"] == "user":
                out[-1]["content"].extend(results)
            else:
                out.append({"role": "user", "content": results})
    turn.rounds = out


def requests_of(turns: list[PiTurn]) -> list[PiRequest]:
    """One request per assistant message, in the order the agent made them."""
    out = []
    for index, turn in enumerate(turns):
        for position, message in enumerate(turn.rounds):
            if message["role"] == "assistant":
                out.append(PiRequest(index, turn.rounds[:position]))
    return out
