"""Assemble a conversation through the real store, context service and tokenizer.

Shared by the selection tests: entries are appended to a fresh store, and the prompt is built
as ``snapshot/assemble`` builds it (capture, then build with the frozen input's components),
twice, so a test can check that the same input gives the same prompt.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from protocol.context import ContextAssembleParams, PromptProfile
from protocol.inputs import InputFreezeParams
from protocol.sessions import SessionAppendParams
from sidecar.context.assemble import Assembled, assemble, assemble_with_json
from sidecar.context.build import build_inputs, seed_of
from sidecar.context.service import ContextService
from sidecar.context.tokens import Tokenizers, count_entries
from sidecar.store import Store

if TYPE_CHECKING:
    from sidecar.context.cache_accounting import RequestShape
    from sidecar.store.history import HistoryView

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
    quantum: float = 0.25,
    components: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
    user_turn: str = "what now?",
    keep_user_messages: bool | None = None,
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
                    "historyWindow": {
                        "maxMessages": max_messages,
                        "maxTokens": max_tokens,
                        "quantum": quantum,
                        "keepUserMessages": keep_user_messages,
                    },
                },
                by_alias=True,
            )

            def once() -> dict[str, Any]:
                captured = service.capture(params, persist=False)
                built = build_inputs(
                    service.store.sessions,
                    service.tokenizers,
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


class GrowingSession:
    """One session in a store kept open, grown a turn at a time and assembled after each
    (``snapshot/assemble``'s path, as :func:`assemble_entries`)."""

    def __init__(
        self,
        root: Path,
        profile: dict[str, Any],
        tools: list[dict[str, Any]],
        session_id: str | None = None,
    ) -> None:
        """A new session in a store at ``root``, or ``session_id`` reopened from it."""
        self.store = Store(root)
        self.service = ContextService(self.store, TOKENIZERS, home=root / "home")
        self.profile = PromptProfile.model_validate(
            {"model": "test-model", "maxOutput": MAX_OUTPUT, **profile}, by_alias=True
        )
        self.tools = tools
        self.sid = session_id or anyio.run(_session, self.store, [])

    def append(self, entries: list[dict[str, Any]]) -> None:
        params = SessionAppendParams.model_validate(
            {"sessionId": self.sid, "entries": entries}, by_alias=True
        )
        anyio.run(self.store.sessions.append, self.sid, list(params.entries))

    def view(self) -> HistoryView:
        tokenizer = TOKENIZERS.get(None)
        return self.store.sessions.history(
            self.sid, tokenizer.info.id, lambda r: count_entries(tokenizer, r)
        )

    def assemble(self, user_turn: str = "what now?") -> dict[str, Any]:
        return self.assemble_with_json(user_turn)[0]

    def assemble_with_json(self, user_turn: str = "what now?") -> tuple[dict[str, Any], bytes]:
        assembled = self.assembled(user_turn)
        return assembled.result, assembled.messages_json

    def assembled(
        self,
        user_turn: str = "what now?",
        components: list[dict[str, Any]] | None = None,
        previous: RequestShape | None = None,
    ) -> Assembled:
        params = InputFreezeParams.model_validate(
            {
                "sessionId": self.sid,
                "userTurn": [text(user_turn)],
                "clock": {"date": "2026-11-30", "time": "12:00"},
                "tools": self.tools,
                "components": components or [],
            },
            by_alias=True,
        )
        captured = self.service.capture(params, persist=False)
        built = build_inputs(
            self.service.store.sessions,
            self.service.tokenizers,
            captured.frozen,
            captured.material,
            self.profile,
            seed=seed_of(captured.frozen),
            diagnostics=captured.diagnostics,
        )
        built.inputs.previous = previous
        return assemble_with_json(built.inputs)

    def close(self) -> None:
        self.store.close()


#: The tool a synthetic coding session calls.
READ_FILE = {
    "name": "read_file",
    "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def coding_turn(index: int, sizes: list[int]) -> list[dict[str, Any]]:
    """One turn of a synthetic coding session: a question, ``read_file`` calls whose results
    are ``sizes`` words long (one result message), and an answer."""
    calls = [
        {
            "type": "toolCall",
            "callId": f"c{index}_{k}",
            "name": "read_file",
            "arguments": {"path": f"src/mod{index}_{k}.py"},
        }
        for k in range(len(sizes))
    ]
    results = [
        {
            "type": "toolResult",
            "callId": f"c{index}_{k}",
            "content": [text(f"# src/mod{index}_{k}.py\n" + "code " * size)],
        }
        for k, size in enumerate(sizes)
    ]
    return [
        msg("user", [text(f"question {index}: " + "please " * 12)]),
        msg("assistant", [text(f"reading for step {index}"), *calls]),
        msg("user", results),
        msg("assistant", [text(f"step {index} done " + "ok " * 30)]),
    ]


def append_entries(store: Store, sid: str, entries: list[dict[str, Any]]) -> None:
    """Append ``entries`` to session ``sid`` (``session/append``'s validation)."""
    params = SessionAppendParams.model_validate(
        {"sessionId": sid, "entries": entries}, by_alias=True
    )
    anyio.run(store.sessions.append, sid, list(params.entries))


def new_session(store: Store) -> str:
    """A new, empty session's id."""

    async def create() -> str:
        made = await store.sessions.create(
            title="t", workspace_roots=[], profile_id=None, meta=None
        )
        return made.session_id

    return anyio.run(create)


def assemble_live(
    service: ContextService,
    sid: str,
    user: list[dict[str, Any]],
    turn: list[dict[str, Any]],
    profile: dict[str, Any],
    **more: Any,
) -> dict[str, Any]:
    """``context/assemble``'s answer (the service's live path: window floor, calibration);
    ``more``: other params, wire-named."""
    params = ContextAssembleParams.model_validate(
        {
            "sessionId": sid,
            "userTurn": user,
            "turn": turn,
            "profile": profile,
            "date": "2026-12-01",
            **more,
        },
        by_alias=True,
    )
    return service.assemble(params)
