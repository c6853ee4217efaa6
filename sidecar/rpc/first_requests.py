"""The requests right behind ``initialize``, answered before the event loop exists.

A host sends its first requests as soon as it has the ``initialize`` answer, and starting
the event loop and the transport (asyncio alone imports ~40 modules) would come before them.
So ``serve``, once it has answered ``initialize`` (:mod:`sidecar.rpc.handshake`) and opened
the store, keeps reading for a moment, with blocking reads, and answers the requests that a
light route answers (:mod:`sidecar.methods.light`: the same answers as the full routes'), in
order, until:

- a frame that is not one of them: a request of any other method, a light request whose
  params or answer are not plain, ``exit``, a response, a malformed frame.  It stays unread
  by anyone, with every frame after it, for the transport, which takes it from there
  exactly as if this step had not been (:mod:`sidecar.rpc.early` serves or holds it);
- a quiet moment (:data:`QUIET_S` without a new frame), or :data:`MAX_S` in all, or EOF.

Notifications (``initialized``, ``$/cancelRequest``, ...) are left for the transport, in
their order; a request answered here is no longer pending, so a ``$/cancelRequest`` of it
finds nothing to cancel, as under pygls once a request is answered.

Not done when frames are traced (``--trace``): the transport records every frame in order.
"""

from __future__ import annotations

import logging
import os
import select
import time
from typing import TYPE_CHECKING

from protocol.framing import encode_frame
from sidecar.fdio import write_all
from sidecar.jsonbytes import dumps_bytes
from sidecar.methods.light import LIGHT_ROUTES, light_answer, plain_message

if TYPE_CHECKING:
    from protocol.framing import BadHeader, TooLarge
    from sidecar.methods.light import LightServer
    from sidecar.rpc.handshake import EarlyStart

__all__ = ["MAX_S", "QUIET_S", "answer_first_requests"]

logger = logging.getLogger(__name__)

#: How long to wait for the host's next frame before starting the event loop: a host sends
#: its first requests at once, a few milliseconds after the ``initialize`` answer.
QUIET_S = 0.02
#: The longest this step lasts: what it delays is the loading of everything else.
MAX_S = 0.25
_READ_CHUNK = 256 * 1024


def answer_first_requests(
    early: EarlyStart, server: LightServer, *, in_fd: int, out_fd: int
) -> int:
    """Answer the light requests that come right after ``initialize`` (see the module doc);
    ``early`` is left as the transport continues from: the frames not handled here in
    ``pending``, in order.  Returns how many requests were answered."""
    left: list[bytes | TooLarge | BadHeader] = []  # notifications, for the transport
    pending = early.pending
    answered = 0
    started = time.monotonic()
    try:
        while True:
            while pending:
                item = pending[0]
                if not isinstance(item, bytes):
                    return answered
                kind = _answer(item, server, out_fd)
                if kind == "other":
                    return answered
                if kind == "answered":
                    answered += 1
                else:
                    left.append(item)
                pending.pop(0)
            if early.eof or not _wait(in_fd, min(QUIET_S, MAX_S - (time.monotonic() - started))):
                return answered
            chunk = _read(in_fd)
            if chunk is None:  # a read error: the transport meets it
                return answered
            if not chunk:
                early.eof = True
                return answered
            pending.extend(early.decoder.feed(chunk))
    finally:
        pending[:0] = left
        if answered:
            logger.debug("answered %d request(s) before the event loop started", answered)


def _answer(body: bytes, server: LightServer, out_fd: int) -> str:
    """``"answered"``, ``"notification"`` (left for the transport) or ``"other"`` (stop)."""
    message = plain_message(body)
    if message is None:
        return "other"
    method = message["method"]
    if "id" not in message:
        return "other" if method == "exit" else "notification"
    msg_id = message["id"]
    route = LIGHT_ROUTES.get(method)
    if route is None or isinstance(msg_id, bool) or not isinstance(msg_id, int | str):
        return "other"
    began = time.perf_counter()
    result = light_answer(route, server, message.get("params"))
    if result is None:
        return "other"
    write_all(out_fd, encode_frame(dumps_bytes({"jsonrpc": "2.0", "id": msg_id, "result": result})))
    server.latencies.since(method, began)
    return "answered"


def _wait(fd: int, timeout_s: float) -> bool:
    """Whether ``fd`` has something to read (or its end) within ``timeout_s``."""
    if timeout_s <= 0:
        return False
    try:
        readable, _, _ = select.select([fd], [], [], timeout_s)
    except (OSError, ValueError):
        return False
    return bool(readable)


def _read(fd: int) -> bytes | None:
    """A chunk of ``fd``, ``b""`` at EOF, ``None`` on a read error."""
    while True:
        try:
            return os.read(fd, _READ_CHUNK)
        except BlockingIOError:  # stdin shares a non-blocking description with stdout
            select.select([fd], [], [])
        except OSError:
            return None
