"""Every method of the protocol, declared once.

The server registers its handlers from this table, the exporter generates the TypeScript
method table, the Lua annotations and the protocol reference from it, and ``initialize``
advertises the names in it.  A method missing here does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from protocol._base import WireModel
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
    TOKENS_COUNT,
    SERVER_INFO,
    SERVER_PING,
    SERVER_SLEEP,
)

METHODS_BY_NAME: dict[str, MethodSpec[Any, Any]] = {m.name: m for m in ALL_METHODS}
