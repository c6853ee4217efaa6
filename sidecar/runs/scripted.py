"""The ``scripted`` provider: deterministic model responses from a JSON script.

The offline default for the demo and the tests.  A script is ``{"rounds": [ROUND, ...]}``;
each model call plays the next round::

    {"text": "Hello"}                         one text delta
    {"deltas": ["Hel", "lo"], "delayMs": 5}   several deltas, optionally spaced in time
    {"reasoning": "First, ..."}               reasoning ("thinking") before the text
    {"toolCalls": [{"name": "read_file", "arguments": {"path": "a.py"}, "id": "c1"}]}
    {"usage": {"inputTokens": 10, "outputTokens": 3, "cacheReadTokens": 8}}
    {"error": {"code": "model.overloaded", "message": "busy", "retryable": true}}
    {"stopReason": "max_tokens"}

A round may combine text and tool calls.  When the script runs out, the model answers
"(end of script)" and stops, so a run always ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from sidecar.runs.providers.base import (
    Completed,
    ProviderError,
    ProviderEvent,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    Usage,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

__all__ = ["ScriptedProvider"]


class ScriptedProvider:
    name = "scripted"

    def __init__(self, script: dict[str, Any] | None, start_round: int = 0) -> None:
        self._rounds: list[dict[str, Any]] = list((script or {}).get("rounds", []))
        self._next = start_round
        self._call_ids = 0

    async def stream(self, body: dict[str, Any]) -> AsyncGenerator[ProviderEvent, None]:
        index = self._next
        self._next += 1
        if index >= len(self._rounds):
            yield TextDelta("(end of script)")
            yield Usage(0, 0)
            yield Completed("end_turn")
            return
        spec = self._rounds[index]
        error = spec.get("error")
        if error:
            raise ProviderError(
                str(error.get("code", "model.request_failed")),
                str(error.get("message", "scripted error")),
                retryable=bool(error.get("retryable", False)),
            )
        delay = int(spec.get("delayMs", 0)) / 1000
        if spec.get("reasoning"):
            yield ReasoningDelta(str(spec["reasoning"]))
        deltas = spec.get("deltas") or ([spec["text"]] if spec.get("text") else [])
        for piece in deltas:
            if delay:
                await anyio.sleep(delay)
            yield TextDelta(str(piece))
        calls = spec.get("toolCalls", [])
        for call in calls:
            self._call_ids += 1
            yield ToolCall(
                str(call.get("id") or f"call_{index}_{self._call_ids}"),
                str(call["name"]),
                dict(call.get("arguments", {})),
            )
        usage = spec.get("usage", {})
        yield Usage(
            int(usage.get("inputTokens", 0)),
            int(usage.get("outputTokens", 0)),
            int(usage.get("cacheReadTokens", 0)),
            int(usage.get("cacheWriteTokens", 0)),
        )
        yield Completed(str(spec.get("stopReason") or ("tool_use" if calls else "end_turn")))
