"""History entries the e2e tests append (wire-shaped, as a host sends them)."""

from __future__ import annotations

from typing import Any


def _text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool_turns(n: int) -> list[dict[str, Any]]:
    """``n`` user turns, each reading a file through a tool call and its (large, ~805-token)
    result: enough for a small masking profile to mask the older ones."""
    entries: list[dict[str, Any]] = []
    for i in range(n):
        call = {
            "type": "toolCall",
            "callId": f"c{i}",
            "name": "read_file",
            "arguments": {"path": f"src/m{i}.py"},
        }
        result = {"type": "toolResult", "callId": f"c{i}", "content": [_text("code " * 800)]}
        entries += [
            {"kind": "message", "role": "user", "content": [_text(f"step {i}")]},
            {"kind": "message", "role": "assistant", "content": [_text("reading"), call]},
            {"kind": "message", "role": "user", "content": [result]},
            {"kind": "message", "role": "assistant", "content": [_text(f"done {i}")]},
        ]
    return entries
