"""The cattrs converter pygls uses to (un)structure messages.

Messages of our own methods keep ``params`` / ``result`` as plain JSON: validation happens in
the handler (``sidecar.rpc.router``), never in pygls' read loop, where a failure would be
swallowed and the client would wait forever.  Outgoing pydantic models are dumped in their
wire form (camelCase, ``None`` omitted) and already-JSON results are passed through untouched
instead of being walked again by cattrs.

Light at import (pygls and lsprotocol load in :func:`converter_factory`): :func:`to_json` is
on the path of requests served while pygls is still loading (:mod:`sidecar.rpc.early`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from protocol._base import dump_wire

if TYPE_CHECKING:
    import cattrs

__all__ = ["converter_factory", "to_json"]


def to_json(value: Any) -> Any:
    """Wire JSON of a handler's result or a notification's params."""
    return dump_wire(value) if isinstance(value, BaseModel) else value


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
