"""The cattrs converter pygls uses to (un)structure messages.

Messages of our own methods keep ``params`` / ``result`` as plain JSON: validation happens in
the method table (:mod:`sidecar.methods.route`), never in pygls' read loop, where a failure would be
swallowed and the client would wait forever.  Outgoing pydantic models are dumped in their
wire form (camelCase, ``None`` omitted) and already-JSON results are passed through untouched
instead of being walked again by cattrs.

Light at import: pygls and lsprotocol load in :func:`converter_factory`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from protocol._base import dump_wire
from sidecar.methods.route import to_json

if TYPE_CHECKING:
    import cattrs

__all__ = ["converter_factory"]


def converter_factory() -> cattrs.Converter:
    from lsprotocol.converters import get_converter
    from pygls.protocol.json_rpc import (
        JsonRPCNotification,
        JsonRPCRequestMessage,
        JsonRPCResponseMessage,
    )

    converter = get_converter()

    converter.register_structure_hook(
        JsonRPCRequestMessage,
        lambda d, _: JsonRPCRequestMessage(
            id=d["id"], method=d["method"], jsonrpc=d["jsonrpc"], params=d.get("params")
        ),
    )
    converter.register_structure_hook(
        JsonRPCNotification,
        lambda d, _: JsonRPCNotification(
            method=d["method"], jsonrpc=d["jsonrpc"], params=d.get("params")
        ),
    )
    converter.register_structure_hook(
        JsonRPCResponseMessage,
        lambda d, _: JsonRPCResponseMessage(
            id=d["id"], jsonrpc=d["jsonrpc"], result=d.get("result")
        ),
    )
    converter.register_unstructure_hook(
        JsonRPCResponseMessage,
        lambda m: {"jsonrpc": m.jsonrpc, "id": m.id, "result": to_json(m.result)},
    )
    converter.register_unstructure_hook(
        JsonRPCNotification,
        lambda m: {"jsonrpc": m.jsonrpc, "method": m.method, "params": to_json(m.params)},
    )
    converter.register_unstructure_hook(
        JsonRPCRequestMessage,
        lambda m: {
            "jsonrpc": m.jsonrpc,
            "id": m.id,
            "method": m.method,
            "params": to_json(m.params),
        },
    )
    converter.register_unstructure_hook_func(
        lambda t: isinstance(t, type) and issubclass(t, BaseModel), dump_wire
    )
    return converter
