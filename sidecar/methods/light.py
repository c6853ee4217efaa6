"""The first requests' answers, made from plain JSON before the wire models have loaded.

Importing pydantic and building the wire models costs more than the rest of start-up
together (~0.3 s on a loaded two-core machine), and a host's first request after
``initialize`` is nearly always a read: its session picker's ``session/list``, a
``server/ping`` to see the server live, a ``server/info`` for its pid (the Neovim plugin,
synchronously, with a timeout).  Before the event loop starts
(:mod:`sidecar.rpc.first_requests`) and while pygls loads (:mod:`sidecar.rpc.early`) these
are answered here, from the store and the facts the ``initialize`` answer is made of,
without pydantic — when that is certain to give the full route's answer
(:func:`sidecar.methods.route.wrap`: same validation, handler and result model):

- a light route accepts only params that its model accepts, meaning the same thing (the
  plain cases: right keys, right JSON types, in range);
- it sends only results that its result model would send unchanged (a session read from a
  hand-edited ``session.json`` of odd shape is not one);
- for anything else it returns ``None``, and the request takes the full route: validated by
  the model, answered by the handler, refused with the model's own ``-32602`` and
  ``errors[]``.

Every light route but ``session/create`` is a read without side effects, so nothing is lost
when it hands a request over after having looked; ``session/create`` decides before it
writes anything (a host's first write: validating it with the model would load pydantic and
the wire models first, more than the rest of start-up together).
``tests/unit/test_light_routes.py`` holds each one to its full route's answer.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from protocol.limits import DEFAULT_LIST_LIMIT, MAX_JSON_DEPTH, MAX_LIST_LIMIT
from sidecar.ids import now_iso
from sidecar.jsonbytes import deeper_than
from sidecar.methods.capabilities import capabilities_block
from sidecar.methods.latency import Latencies
from sidecar.store.root import Store

__all__ = ["LIGHT_ROUTES", "LightRoute", "LightServer", "light_answer", "plain_message"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LightServer:
    """What the light routes answer from: what the server's state is built from later
    (:class:`sidecar.methods.state.SidecarState`, with the same ``started_at``)."""

    store: Store
    max_message_bytes: int
    started_at: str
    latencies: Latencies = field(default_factory=Latencies)
    """The requests' latencies, shared with the state (what is served early counts too)."""


#: ``(what the server is, raw params) -> result JSON``, or ``None``: take the full route.
LightRoute = Callable[[LightServer, Any], dict[str, Any] | None]


def light_answer(route: LightRoute, server: LightServer, params: Any) -> dict[str, Any] | None:
    """The light route's answer, or ``None``: take the full route (which also meets, and
    answers as always, whatever the light one could not get past: it only reads)."""
    try:
        return route(server, params)
    except Exception:
        logger.debug("a light route gave way to the full one", exc_info=True)
        return None


def plain_message(body: bytes) -> dict[str, Any] | None:
    """The request or notification in ``body`` when nothing in it is odd; ``None`` leaves it
    to pygls (and to :class:`sidecar.rpc.protocol.SidecarProtocol`'s answers to faults)."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    method = message.get("method")
    if not isinstance(method, str) or not method:
        return None
    if not isinstance(message.get("params"), dict | list | None) or deeper_than(
        message, MAX_JSON_DEPTH
    ):
        return None
    return message


#: Max length of a ``Timestamp`` (``protocol._base``).
_TIMESTAMP_MAX = 40


def _object(params: Any) -> dict[str, Any] | None:
    """Params as an object, as :func:`protocol._base.parse_wire` reads them (absent and
    ``[]`` are ``{}``); ``None`` when they are not one."""
    if params is None or params == []:
        return {}
    return params if isinstance(params, dict) else None


def server_ping(server: LightServer, params: Any) -> dict[str, Any] | None:
    """``server/ping`` (``EmptyParams`` -> ``ServerPingResult``)."""
    if _object(params) != {}:
        return None
    return {"time": now_iso()}


def server_info(server: LightServer, params: Any) -> dict[str, Any] | None:
    """``server/info`` (``EmptyParams`` -> ``ServerInfo``): the ``initialize`` answer's block
    and the live facts, as :meth:`sidecar.methods.state.SidecarState.info` gives them until the
    server is attached (nothing is sent through the transport's buffer before: no backlog;
    the tokenizers are the catalog's until one fails to load, which only preloading finds)."""
    if _object(params) != {}:
        return None
    store = server.store
    block = capabilities_block(
        store_path=str(store.root), max_message_bytes=server.max_message_bytes
    )
    return {
        **block,
        "pid": os.getpid(),
        "startedAt": server.started_at,
        "storeWritable": store.writable,
        "outboundBacklogBytes": 0,
        "latencies": server.latencies.wire(),
    }


def session_list(server: LightServer, params: Any) -> dict[str, Any] | None:
    """``session/list`` (``SessionListParams`` -> ``SessionListResult``)."""
    p = _object(params)
    if p is None or not p.keys() <= {"cursor", "limit"}:
        return None
    cursor = p.get("cursor")
    limit = p.get("limit", DEFAULT_LIST_LIMIT)
    if (cursor is not None and type(cursor) is not str) or not _int_in(limit, 1, MAX_LIST_LIMIT):
        return None
    sessions, next_cursor = server.store.sessions.list_page_wire(cursor=cursor, limit=limit)
    if not all(map(_plain_session, sessions)):
        return None
    result: dict[str, Any] = {"sessions": sessions}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result


#: Max length of ``SessionCreateParams.title`` (``protocol.sessions``).
_TITLE_MAX = 500
_CREATE_KEYS = frozenset({"title", "workspaceRoots", "profileId", "meta"})


def session_create(server: LightServer, params: Any) -> dict[str, Any] | None:
    """``session/create`` (``SessionCreateParams`` -> ``Session``), the one write here: it
    looks at everything first and writes only params the model takes alike, when the store
    is this process's to write; anything else (a relative root, a locked store, odd
    metadata) takes the full route, which answers it as always, having written nothing
    here.  Once written, the session is answered as the full route reads it back."""
    p = _object(params)
    if p is None or not p.keys() <= _CREATE_KEYS:
        return None
    title = p.get("title", "")
    roots = p.get("workspaceRoots", [])
    profile_id = p.get("profileId")
    meta = p.get("meta")
    if not (
        _text(title)
        and len(title) <= _TITLE_MAX
        and type(roots) is list
        and all(_text(r) and r != "" and "\x00" not in r and os.path.isabs(r) for r in roots)
        and (profile_id is None or _text(profile_id))
        and (meta is None or (type(meta) is dict and _plain_json(meta)))
    ):
        return None
    store = server.store
    if not store.writable:
        return None  # the full route says why
    session = store.sessions.create_now_wire(
        title=title, workspace_roots=roots, profile_id=profile_id, meta=meta
    )
    if not _plain_session(session):  # cannot be: made from plain params just now
        raise AssertionError(f"session/create wrote an odd session: {session!r}")
    return session


LIGHT_ROUTES: dict[str, LightRoute] = {
    "server/ping": server_ping,
    "server/info": server_info,
    "session/list": session_list,
    "session/create": session_create,
}


# --- what the result models would send unchanged ----------------------------------------

#: ``protocol.sessions.Session`` on the wire: required keys, then the optional ones.
SESSION_REQUIRED = frozenset(
    {"sessionId", "title", "workspaceRoots", "createdAt", "updatedAt", "headSeq"}
)
SESSION_OPTIONAL = frozenset({"profileId", "forkedFrom", "meta", "heldBy"})


def _plain_session(s: dict[str, Any]) -> bool:
    """Whether ``Session`` validates ``s`` (strictly) and dumps it back as it is."""
    if not SESSION_REQUIRED <= s.keys() <= SESSION_REQUIRED | SESSION_OPTIONAL:
        return False
    if "profileId" in s and type(s["profileId"]) is not str:
        return False
    if "forkedFrom" in s and not _plain_fork_origin(s["forkedFrom"]):
        return False
    if "meta" in s and not (type(s["meta"]) is dict and _plain_json(s["meta"])):
        return False
    if "heldBy" in s and not _plain_holder(s["heldBy"]):
        return False
    return (
        _non_empty_str(s["sessionId"])
        and type(s["title"]) is str
        and type(s["workspaceRoots"]) is list
        and all(type(root) is str for root in s["workspaceRoots"])
        and _timestamp(s["createdAt"])
        and _timestamp(s["updatedAt"])
        and _int_in(s["headSeq"], 0, None)
    )


def _plain_fork_origin(value: Any) -> bool:
    """``protocol.sessions.ForkOrigin``."""
    return (
        type(value) is dict
        and value.keys() == {"sessionId", "atSeq"}
        and _non_empty_str(value["sessionId"])
        and _int_in(value["atSeq"], 0, None)
    )


def _plain_holder(value: Any) -> bool:
    """``protocol.sessions.SessionHolder``."""
    return (
        type(value) is dict
        and value.keys() == {"pid", "face", "since"}
        and type(value["pid"]) is int
        and _text(value["face"])
        and _text(value["since"])
    )


def _text(value: Any) -> bool:
    """A JSON string that is text: a lone surrogate (``"\\ud800"`` decodes to one) is
    left to the model, which has its own opinion of it."""
    if type(value) is not str:
        return False
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def _non_empty_str(value: Any) -> bool:
    return type(value) is str and value != ""


def _timestamp(value: Any) -> bool:
    return type(value) is str and 1 <= len(value) <= _TIMESTAMP_MAX


def _int_in(value: Any, low: int, high: int | None) -> bool:
    """A JSON integer (not a bool, not a float) in ``[low, high]``."""
    return type(value) is int and value >= low and (high is None or value <= high)


def _plain_json(value: Any) -> bool:
    """Whether a free-form JSON value (``JsonObject``) dumps back as it is: everything JSON
    decodes to does, but for the non-finite floats ``json`` reads (``NaN``, ``1e400``), which
    pydantic writes as ``null``, and for keys that are not text (a lone surrogate, which the
    full route's answer replaces with U+FFFD; a string value keeps it, as the model does)."""
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is dict:
        return all(_text(k) and _plain_json(v) for k, v in value.items())
    if type(value) is list:
        return all(_plain_json(v) for v in value)
    return True
