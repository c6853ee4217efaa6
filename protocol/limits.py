"""Upper bounds shared by the server (enforced) and clients (advertised in ``limits``).

Plain constants, importable without pydantic: the ``initialize`` answer is built from them
before the wire models are loaded (``sidecar.rpc.handshake``).
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_LIST_LIMIT",
    "MAX_APPEND_ENTRIES",
    "MAX_COUNT_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_LIST_LIMIT",
    "MAX_READ_LIMIT",
]

MAX_APPEND_ENTRIES = 1000
MAX_READ_LIMIT = 1000
MAX_LIST_LIMIT = 500
#: Page size of ``session/list`` when the request names none.
DEFAULT_LIST_LIMIT = 50
#: Sum of UTF-8 bytes accepted by one ``tokens/count`` call.
MAX_COUNT_BYTES = 16 * 1024 * 1024
#: Deepest nesting accepted in a message: far beyond real payloads (tool schemas, metadata),
#: well within what the JSON and pydantic layers can handle recursively.
MAX_JSON_DEPTH = 64
