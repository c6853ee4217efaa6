"""Time-ordered identifiers and timestamps.

Ids are ``<prefix>_`` + 26 Crockford base32 characters: 48 bits of milliseconds since the
epoch then 80 random bits, ULID-style, so lexical order is creation order.  Within one
millisecond the random part is incremented, so ids from one process are strictly increasing.
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["new_id", "now_iso"]

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


#: Every pair of digits, indexed by 10 bits: 13 lookups make an id's 26 digits.
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]
_SHIFTS = tuple(range(120, -1, -10))


def _encode_128(value: int) -> str:
    """26 Crockford digits (130 bits, 2 leading zeros) of a 128-bit value."""
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in _SHIFTS])


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
        return f"{prefix}_{_encode_128((ms << 80) | (_last_rand & ((1 << 80) - 1)))}"


#: The last timestamp made, ``(milliseconds, text)``: a burst of events (a run streams
#: tens of thousands a second) formats each millisecond once.  One tuple, replaced whole,
#: so threads never see half of it.
_last_iso: tuple[int, str] = (-1, "")


def now_iso() -> str:
    """Current UTC time as ISO-8601 with milliseconds and a ``Z`` suffix."""
    global _last_iso
    ms = time.time_ns() // 1_000_000
    cached = _last_iso
    if cached[0] == ms:
        return cached[1]
    seconds, millis = divmod(ms, 1000)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"
    _last_iso = (ms, text)
    return text
