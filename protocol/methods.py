"""Every method of the protocol, declared once.

The server registers its handlers from this table, the exporter generates the TypeScript
method table, the Lua annotations and the protocol reference from it, and ``initialize``
advertises the names in it.  A method missing here does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from protocol._base import WireModel
from protocol.context import (
    ContextAssembleParams,
    ContextAssembleResult,
    ContextSourcesParams,
    ContextSourcesResult,
    HostSourceRef,
    RegisterSourceParams,
    SessionCompactParams,
    SessionControlParams,
    SkillsActivateParams,
    SkillsActivateResult,
    SkillsListParams,
    SkillsListResult,
    SourceRegistration,
)
from protocol.server import ServerInfo, ServerPingResult, ServerSleepParams, ServerSleepResult
from protocol.sessions import (
    Session,
    SessionAppendParams,
    SessionAppendResult,
    SessionCreateParams,
    SessionDeleteResult,
    SessionForkParams,
    SessionListParams,
    SessionListResult,
    SessionReadParams,
    SessionReadResult,
    SessionRef,
    SessionRenameParams,
)
from protocol.tokens import TokensCountParams, TokensCountResult

__all__ = [
    "ALL_METHODS",
    "METHODS_BY_NAME",
    "EmptyParams",
    "MethodSpec",
]

P = TypeVar("P", bound=WireModel)
R = TypeVar("R", bound=WireModel)


class EmptyParams(WireModel):
    """Params of methods that take none (``{}`` or omitted)."""


@dataclass(frozen=True, slots=True)
class MethodSpec(Generic[P, R]):
    """One method: its name, who sends it, and its typed params and result."""

    name: str
    params: type[P]
    result: type[R] | None
    summary: str
    kind: Literal["request", "notification"] = "request"
    direction: Literal["clientToServer", "serverToClient"] = "clientToServer"

    @property
    def family(self) -> str:
        return self.name.split("/", 1)[0]


SESSION_CREATE = MethodSpec(
    "session/create", SessionCreateParams, Session, "Create an empty session."
)
SESSION_LIST = MethodSpec(
    "session/list", SessionListParams, SessionListResult, "List sessions, newest first, by cursor."
)
SESSION_GET = MethodSpec("session/get", SessionRef, Session, "Get one session's metadata.")
SESSION_APPEND = MethodSpec(
    "session/append",
    SessionAppendParams,
    SessionAppendResult,
    "Append entries durably; optional optimistic check of the head seq.",
)
SESSION_READ = MethodSpec(
    "session/read", SessionReadParams, SessionReadResult, "Read a page of history by seq."
)
SESSION_FORK = MethodSpec(
    "session/fork",
    SessionForkParams,
    Session,
    "Copy a session's history up to a seq into a new session.",
)
SESSION_RENAME = MethodSpec("session/rename", SessionRenameParams, Session, "Retitle a session.")
SESSION_DELETE = MethodSpec(
    "session/delete", SessionRef, SessionDeleteResult, "Move a session to the store's trash."
)
SESSION_PIN = MethodSpec(
    "session/pin", SessionControlParams, SessionAppendResult, "Pin an item into the prompt."
)
SESSION_UNPIN = MethodSpec(
    "session/unpin", SessionControlParams, SessionAppendResult, "Undo a pin."
)
SESSION_DROP = MethodSpec(
    "session/drop", SessionControlParams, SessionAppendResult, "Keep an item out of the prompt."
)
SESSION_RECOVER = MethodSpec(
    "session/recover", SessionControlParams, SessionAppendResult, "Undo a drop."
)
SESSION_COMPACT = MethodSpec(
    "session/compact",
    SessionCompactParams,
    SessionAppendResult,
    "Record a compaction: a summary standing for history up to a seq (nothing is deleted).",
)
CONTEXT_SOURCES = MethodSpec(
    "context/sources",
    ContextSourcesParams,
    ContextSourcesResult,
    "Instruction files and skills found for a session, with diagnostics.",
)
CONTEXT_ASSEMBLE = MethodSpec(
    "context/assemble",
    ContextAssembleParams,
    ContextAssembleResult,
    "What exactly the model would see for this turn, and why; optionally lowered.",
)
CONTEXT_REGISTER_SOURCE = MethodSpec(
    "context/registerSource",
    RegisterSourceParams,
    SourceRegistration,
    "Register a host source (RAG results, editor state) for a session's assemblies.",
)
CONTEXT_UNREGISTER_SOURCE = MethodSpec(
    "context/unregisterSource",
    HostSourceRef,
    SourceRegistration,
    "Remove a registered host source.",
)
SKILLS_LIST = MethodSpec(
    "skills/list", SkillsListParams, SkillsListResult, "Skills available to a session."
)
SKILLS_ACTIVATE = MethodSpec(
    "skills/activate",
    SkillsActivateParams,
    SkillsActivateResult,
    "Load a skill's body and references; records a skillActivated entry.",
)
TOKENS_COUNT = MethodSpec(
    "tokens/count", TokensCountParams, TokensCountResult, "Count tokens of texts."
)
SERVER_INFO = MethodSpec(
    "server/info", EmptyParams, ServerInfo, "Capabilities, limits and live server facts."
)
SERVER_PING = MethodSpec("server/ping", EmptyParams, ServerPingResult, "Trivial round trip.")
SERVER_SLEEP = MethodSpec(
    "server/sleep",
    ServerSleepParams,
    ServerSleepResult,
    "Answer after a delay (cancellable); for testing client timeouts and cancellation.",
)

ALL_METHODS: tuple[MethodSpec[Any, Any], ...] = (
    SESSION_CREATE,
    SESSION_LIST,
    SESSION_GET,
    SESSION_APPEND,
    SESSION_READ,
    SESSION_FORK,
    SESSION_RENAME,
    SESSION_DELETE,
    SESSION_PIN,
    SESSION_UNPIN,
    SESSION_DROP,
    SESSION_RECOVER,
    SESSION_COMPACT,
    CONTEXT_SOURCES,
    CONTEXT_ASSEMBLE,
    CONTEXT_REGISTER_SOURCE,
    CONTEXT_UNREGISTER_SOURCE,
    SKILLS_LIST,
    SKILLS_ACTIVATE,
    TOKENS_COUNT,
    SERVER_INFO,
    SERVER_PING,
    SERVER_SLEEP,
)

METHODS_BY_NAME: dict[str, MethodSpec[Any, Any]] = {m.name: m for m in ALL_METHODS}
