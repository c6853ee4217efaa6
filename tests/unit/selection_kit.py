"""Assemble a conversation through the real store, context service and tokenizer.

Shared by the selection tests: entries are appended to a fresh store, and the prompt is built
as ``snapshot/assemble`` builds it (capture, then build with the frozen input's components),
twice, so a test can check that the same input gives the same prompt.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio

from protocol.context import PromptProfile
from protocol.inputs import InputFreezeParams
from protocol.sessions import SessionAppendParams
from sidecar.context.assemble import assemble
from sidecar.context.service import ContextService, seed_of
from sidecar.context.tokens import Tokenizers
from sidecar.store import Store

TOKENIZERS = Tokenizers.discover()
#: Output tokens every assembly here reserves.
MAX_OUTPUT = 256


def msg(role: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": "message", "role": role, "content": content}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def call(call_id: str, query: str = "q") -> dict[str, Any]:
    return {"type": "toolCall", "callId": call_id, "name": "t", "arguments": {"q": query}}


#: The tool every ``call`` names (Anthropic sends tool blocks only when the catalog has tools).
TOOL = {"name": "t", "description": "a tool", "parameters": {"type": "object"}}


def result(call_id: str, body: str = "r") -> dict[str, Any]:
    return {"type": "toolResult", "callId": call_id, "content": [text(body)]}


def assemble_entries(
    entries: list[dict[str, Any]],
    *,
    window: int,
    max_messages: int | None = None,
    max_tokens: int | None = None,
    components: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
    user_turn: str = "what now?",
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The assembled prompt, twice (same input), for ``entries`` appended to a new session."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        try:
            sid = anyio.run(_session, store, entries)
            service = ContextService(store, TOKENIZERS, home=Path(tmp) / "home")
            params = InputFreezeParams.model_validate(
                {
                    "sessionId": sid,
                    "userTurn": [text(user_turn)],
                    "clock": {"date": "2026-11-30", "time": "12:00"},
                    "components": components or [],
                    "tools": tools or [],
                },
                by_alias=True,
            )
            profile = PromptProfile.model_validate(
                {
                    "model": "test-model",
                    "window": window,
                    "maxOutput": MAX_OUTPUT,
                    "historyWindow": {"maxMessages": max_messages, "maxTokens": max_tokens},
                },
                by_alias=True,
            )

            def once() -> dict[str, Any]:
                captured = service.capture(params, persist=False)
                built = service.build(
                    captured.frozen,
                    captured.material,
                    profile,
                    seed=seed_of(captured.frozen),
                    diagnostics=captured.diagnostics,
                )
                return assemble(built.inputs)

            return once(), once()
        finally:
            store.close()


async def _session(store: Store, entries: list[dict[str, Any]]) -> str:
    session = await store.sessions.create(title="p", workspace_roots=[], profile_id=None, meta=None)
    if entries:
        params = SessionAppendParams.model_validate(
            {"sessionId": session.session_id, "entries": entries}, by_alias=True
        )
        await store.sessions.append(session.session_id, list(params.entries))
    return session.session_id
