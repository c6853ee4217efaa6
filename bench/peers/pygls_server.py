"""The peer for the RPC rows: a plain pygls 2 language server, what a host author would
write without the sidecar (same framework, same stdio framing, no store and no pipeline).

Methods: ``server/ping`` (answers ``{"time": ...}``) and ``bench/flood`` (sends ``count``
``run/event``-shaped notifications of ``textBytes`` each, then answers ``{"sent": count}``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pygls.lsp.server import LanguageServer

server = LanguageServer("pygls-peer", "1.0")


def _get(params: Any, name: str, default: int) -> int:
    value = params.get(name) if isinstance(params, dict) else getattr(params, name, None)
    return int(value) if value is not None else default


@server.feature("server/ping")
def ping(ls: LanguageServer, params: Any) -> dict[str, str]:
    return {"time": datetime.now(UTC).isoformat()}


@server.feature("bench/flood")
def flood(ls: LanguageServer, params: Any) -> dict[str, int]:
    count = _get(params, "count", 1000)
    text = "x" * _get(params, "textBytes", 8)
    for seq in range(1, count + 1):
        ls.protocol.notify(
            "run/event",
            {
                "runId": "run_peer",
                "seq": seq,
                "time": "2026-11-30T12:00:00Z",
                "type": "model.delta",
                "payload": {"text": text},
            },
        )
    return {"sent": count}


if __name__ == "__main__":
    server.start_io()
