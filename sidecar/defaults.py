"""Defaults shared by the CLI and the server, importable without loading the server."""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "TRACE_ENV"]

#: Largest JSON-RPC body accepted by default (``--max-message-bytes``).
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: Environment variable naming a JSONL file that receives every frame, both directions.
TRACE_ENV = "CONTEXT_SIDECAR_TRACE"
