"""Time-ordered identifiers and timestamps.

Ids are ``<prefix>_`` + 26 Crockford base32 characters: 48 bits of milliseconds since the
epoch then 80 random bits, ULID-style, so lexical order is creation order.  Within one
millisecond the random part is incremented, so ids from one process are strictly increasing.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime

__all__ = ["new_id", "now_iso"]

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    """A new time-ordered id such as ``ses_01JD3X...``."""
    global _last_ms, _last_rand
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            ms = _last_ms
            _last_rand += 1
        else:
            _last_rand = int.from_bytes(os.urandom(10), "big") >> 1
        _last_ms = ms
        return f"{prefix}_{_encode(ms, 10)}{_encode(_last_rand & ((1 << 80) - 1), 16)}"


def now_iso() -> str:
    """Current UTC time as ISO-8601 with milliseconds and a ``Z`` suffix."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
