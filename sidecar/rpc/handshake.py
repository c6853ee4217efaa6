"""The ``initialize`` answer, and answering it before the server is imported.

A host starts the sidecar and waits for ``initialize`` before anything else, so that answer's
latency is the start-up users feel.  Importing pygls (``lsprotocol.types`` alone takes ~0.3 s)
and building the wire models (~0.2 s) would put it at ~0.7 s; so ``serve``:

1. reads the first frame itself (:func:`answer_initialize_early`); when it is a well-formed
   ``initialize`` request it answers at once, from light sources only — the committed JSON
   Schema (hash, protocol version, method names), :mod:`protocol.limits` and the tokenizer
   catalog;
2. hands the frame decoder (holding any bytes read past the first frame) and the
   ``initialize`` body to the transport, which serves the first requests while pygls loads
   (:mod:`sidecar.rpc.early`) and then replays ``initialize`` through pygls, silenced, so
   pygls and the sidecar's state are exactly as if pygls had answered.

Anything else as the first frame (another method, bad JSON, odd params, a broken header) is
left untouched for the full server, which answers it as always.  The same functions build the
answer when pygls does answer ``initialize`` (:class:`sidecar.rpc.protocol.SidecarProtocol`),
so the two paths cannot drift.

The answer carries ``capabilities.experimental.contextSidecar``, ``serverInfo`` and a
``textDocumentSync`` that asks for nothing: the sidecar serves no text documents, and an editor
that finds ``textDocumentSync`` missing assumes defaults (Neovim then sends ``didSave`` on
every write).
"""

from __future__ import annotations

import json
import os
import select
from dataclasses import dataclass, field
from typing import Any

from protocol.framing import BadHeader, FrameDecoder, TooLarge, encode_frame
from protocol.limits import MAX_JSON_DEPTH
from sidecar import __version__
from sidecar.fdio import write_all
from sidecar.jsonbytes import deeper_than, dumps_bytes
from sidecar.methods.capabilities import capabilities_block

__all__ = ["EarlyStart", "answer_initialize_early", "initialize_result"]

SERVER_NAME = "context-sidecar"
_READ_CHUNK = 256 * 1024


#: ``TextDocumentSyncOptions`` asking for no document traffic at all (``change`` 0 is None).
NO_DOCUMENT_SYNC = {"openClose": False, "change": 0, "save": False}


def initialize_result(block: dict[str, Any]) -> dict[str, Any]:
    return {
        "capabilities": {
            "textDocumentSync": dict(NO_DOCUMENT_SYNC),
            "experimental": {"contextSidecar": block},
        },
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
    }


@dataclass(slots=True)
class EarlyStart:
    """What the first read produced, for the transport to continue from."""

    decoder: FrameDecoder
    #: Frames (or frame errors) read but not yet handled, in order.
    pending: list[bytes | TooLarge | BadHeader] = field(default_factory=list)
    #: stdin reached EOF during the first read.
    eof: bool = False
    #: The ``initialize`` request answered early and the answer sent (bodies), if any.
    initialize: bytes | None = None
    answer: bytes | None = None
    process_id: int | None = None


def answer_initialize_early(
    *, in_fd: int, out_fd: int, store_path: str, max_message_bytes: int
) -> EarlyStart:
    """Read until the first frame is complete; answer it when it is a plain ``initialize``."""
    decoder = FrameDecoder(max_message_bytes)
    start = EarlyStart(decoder)
    while not start.pending:
        try:
            chunk = os.read(in_fd, _READ_CHUNK)
        except BlockingIOError:  # stdin shares a non-blocking description with stdout
            select.select([in_fd], [], [])
            continue
        if not chunk:
            start.eof = True
            return start
        start.pending.extend(decoder.feed(chunk))
    first = start.pending[0]
    if not isinstance(first, bytes):
        return start
    request = _plain_initialize(first)
    if request is None:
        return start
    block = capabilities_block(store_path=store_path, max_message_bytes=max_message_bytes)
    answer = dumps_bytes(
        {"jsonrpc": "2.0", "id": request["id"], "result": initialize_result(block)}
    )
    write_all(out_fd, encode_frame(answer))
    start.pending.pop(0)
    start.initialize = first
    start.answer = answer
    start.process_id = request["params"].get("processId")
    return start


#: Optional ``InitializeParams`` fields and the JSON types they must have.
_LSP_FIELDS: dict[str, type | tuple[type, ...]] = {
    "rootUri": str,
    "rootPath": str,
    "locale": str,
    "trace": str,
    "clientInfo": dict,
    "workspaceFolders": list,
}


def _plain_initialize(body: bytes) -> dict[str, Any] | None:
    """The message, if it is an ``initialize`` request the full server would accept as is."""
    if len(body) > 4 * 1024 * 1024:  # an ``initialize`` this big is odd: let the server judge
        return None
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    if message.get("method") != "initialize":
        return None
    msg_id = message.get("id")
    if isinstance(msg_id, bool) or not isinstance(msg_id, int | str):
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
        return None
    pid = params.get("processId")
    if pid is not None and (isinstance(pid, bool) or not isinstance(pid, int)):
        return None
    for name, kinds in _LSP_FIELDS.items():  # what pygls would refuse to structure
        if name in params and params[name] is not None and not isinstance(params[name], kinds):
            return None
    if not _plain_fields(params):
        return None
    if deeper_than(message, MAX_JSON_DEPTH):
        return None
    return message


def _plain_fields(params: dict[str, Any]) -> bool:
    """The nested shapes ``sidecar.rpc.initialize_params`` checks: anything else is left to
    it, so that a bad ``initialize`` gets ``params.invalid`` with ``errors[]``."""
    info = params.get("clientInfo")
    if info is not None and not isinstance(info.get("name"), str):
        return False
    if info is not None and not isinstance(info.get("version", ""), str | None):
        return False
    if params.get("trace") not in (None, "off", "messages", "verbose"):
        return False
    folders = params.get("workspaceFolders") or []
    return all(
        isinstance(f, dict) and isinstance(f.get("uri"), str) and isinstance(f.get("name"), str)
        for f in folders
    )
