"""Compact JSON as UTF-8 bytes, safe for every string a client can send.

JSON allows ``"\\ud800"`` (a lone surrogate), which Python decodes to a ``str`` that UTF-8
cannot encode.  Such values are written with ASCII escapes instead, so they round-trip
exactly; everything else is written as raw UTF-8 (smaller, readable in files and traces).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["dumps_bytes"]


def dumps_bytes(
    value: Any, *, sort_keys: bool = False, default: Callable[[Any], Any] | None = None
) -> bytes:
    text = json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys, default=default
    )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(
            value, separators=(",", ":"), sort_keys=sort_keys, default=default
        ).encode("ascii")
