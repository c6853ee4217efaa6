"""``context-sidecar serve``: JSON-RPC on stdin/stdout, answering ``initialize`` first.

Light at import on purpose (see :mod:`sidecar.rpc.handshake`): the server module, pygls and
the wire models load on a thread while the first frame is read and ``initialize`` answered.

Before anything else the protocol moves to a private duplicate of fd 1 and fd 1 is pointed
at stderr, so a ``print`` anywhere (ours or a library's) lands in the log, never in the
JSON-RPC stream.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from sidecar.defaults import DEFAULT_MAX_MESSAGE_BYTES
from sidecar.rpc.handshake import answer_initialize_early, preload_server
from sidecar.store.lock import StoreLock

__all__ = ["ServeOptions", "serve_stdio"]

logger = logging.getLogger(__name__)

SERVER_MODULE = "sidecar.rpc.server"


@dataclass(frozen=True, slots=True)
class ServeOptions:
    store: Path
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    trace: Path | None = None


def _take_stdout() -> int:
    """Return a private fd for the protocol and make fd 1 an alias of stderr."""
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


def serve_stdio(options: ServeOptions) -> int:
    """Serve JSON-RPC on stdin/stdout until EOF, ``exit`` or the client's death."""
    out_fd = _take_stdout()
    preload_server(SERVER_MODULE)
    # Take the writer lock before answering: a host that starts a second sidecar once the
    # first has answered ``initialize`` must find the first one the writer.
    root = options.store.expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    lock = StoreLock(root / "store.lock")
    lock.try_acquire()
    early = answer_initialize_early(
        in_fd=0,
        out_fd=out_fd,
        store_path=str(root),  # what ``Store`` reports as its root
        max_message_bytes=options.max_message_bytes,
    )
    import anyio

    from sidecar.rpc.server import serve

    code = anyio.run(serve, options, early, lock, 0, out_fd, backend="asyncio")
    logger.info("exiting with code %d", code)
    return code
