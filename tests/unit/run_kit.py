"""Scripted runs for the in-process tests of the run manager: a script (a tool round through
the host, then an answer), its tool, ``run/start``'s params, and a host that executes every
tool and keeps every event."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol.runs import RunStartParams

SCRIPT = {
    "rounds": [
        {
            "deltas": ["Reading."],
            "toolCalls": [{"name": "read_file", "arguments": {"path": "a.py"}}],
            "usage": {"inputTokens": 10, "outputTokens": 2},
        },
        {"deltas": ["Done."], "usage": {"inputTokens": 12, "outputTokens": 1}},
    ]
}
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


def start_params(session_id: str, text: str) -> RunStartParams:
    """``run/start`` of :data:`SCRIPT` in ``session_id``, the user's turn ``text``."""
    return RunStartParams.model_validate(
        {
            "sessionId": session_id,
            "userTurn": [{"type": "text", "text": text}],
            "tools": TOOLS,
            "script": SCRIPT,
        },
        by_alias=True,
    )


class Host:
    """A host that executes every tool and keeps every event, journaled before it is kept
    (as a face's writer does before the frame leaves); :meth:`sent` sees each as it comes."""

    def __init__(self) -> None:
        self.events: list[bytes] = []

    def notify(self, method: str, params: Any) -> None:
        pass

    def host_assembles(self) -> bool:
        return False

    def backlog(self) -> int:
        return 0

    async def request(self, method: str, params: Any, timeout_s: float) -> Any:
        assert method == "tool/execute"
        return {"content": [{"type": "text", "text": "def main() -> None: ..."}]}

    def send_event(
        self, line: bytes, journaled: Callable[[], None], event: dict[str, Any] | None = None
    ) -> None:
        journaled()
        self.events.append(line)
        self.sent(line)

    def sent(self, line: bytes) -> None:
        """Called with each event's line once it is journaled (nothing here)."""

    def after_answer(self, fn: Callable[[], object]) -> None:
        fn()
