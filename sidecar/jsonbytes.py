"""Compact JSON as UTF-8 bytes, safe for every string a client can send, with splicing.

JSON allows ``"\\ud800"`` (a lone surrogate), which Python decodes to a ``str`` that UTF-8
cannot encode.  Such values are written with ASCII escapes instead, so they round-trip
exactly; everything else is written as raw UTF-8 (smaller, readable in files and traces).

:class:`RawJSON` holds bytes that are already JSON (a cached transcript group, say): they are
spliced into the output as they are instead of being serialised again.  The splice uses a
per-process random marker that no client string can predict.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["RawJSON", "canonical", "dumps_bytes", "dumps_in_slices", "json_identical"]

_MARK = f"\x00raw-{os.urandom(8).hex()}-"  # secrets.token_hex(8), without its imports
_MARK_ENCODED = json.dumps(_MARK).encode()[:-1]  # '"\\u0000raw-<hex>-' without closing quote


class RawJSON:
    """Bytes that are already valid JSON, to be written verbatim."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class _Raw(Exception):
    """A :class:`RawJSON` met by the fast encoder: the splicing path takes over."""


def _no_default(obj: Any) -> Any:
    if isinstance(obj, RawJSON):
        raise _Raw
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _encoder(sort_keys: bool, ascii_only: bool) -> json.JSONEncoder:
    return json.JSONEncoder(
        ensure_ascii=ascii_only, separators=(",", ":"), sort_keys=sort_keys, default=_no_default
    )


# Built once: ``json.dumps`` with any non-default argument builds an encoder on every call,
# which is most of the cost of a small object (a run event, an RPC answer).
_FAST = {(sort, asc): _encoder(sort, asc) for sort in (False, True) for asc in (False, True)}


def _encode(value: Any, sort_keys: bool, default: Callable[[Any], Any] | None) -> bytes:
    text = json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys, default=default
    )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(
            value, separators=(",", ":"), sort_keys=sort_keys, default=default
        ).encode("ascii")


def dumps_bytes(
    value: Any, *, sort_keys: bool = False, default: Callable[[Any], Any] | None = None
) -> bytes:
    if default is None:
        try:
            text = _FAST[sort_keys, False].encode(value)
        except _Raw:
            pass  # spliced below
        else:
            try:
                return text.encode("utf-8")
            except UnicodeEncodeError:
                return _FAST[sort_keys, True].encode(value).encode("ascii")
    raws: list[bytes] = []

    def hook(obj: Any) -> Any:
        if isinstance(obj, RawJSON):
            raws.append(obj.data)
            return f"{_MARK}{len(raws) - 1}"
        if default is None:
            raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")
        return default(obj)

    out = _encode(value, sort_keys, hook)
    if not raws:
        return out
    pieces = out.split(_MARK_ENCODED)
    rebuilt = [pieces[0]]
    for piece in pieces[1:]:
        index, _, rest = piece.partition(b'"')
        rebuilt.append(raws[int(index)])
        rebuilt.append(rest)
    return b"".join(rebuilt)


#: Items of a list encoded per call of the encoder by :func:`dumps_in_slices`.
SLICE_ITEMS = 200


def dumps_in_slices(items: Sequence[Any], per_slice: int = SLICE_ITEMS) -> RawJSON:
    """``dumps_bytes(items)`` as :class:`RawJSON`, encoded ``per_slice`` items at a time.

    The encoder is one C call: the interpreter cannot switch threads in the middle of it.  A
    worker thread that encodes a long list in one call (an assembly's ledger: ~300 KB, 3-10
    ms for a 2,000-entry session) holds the event loop for all of it; in slices of a few
    hundred items the loop waits at most for one slice (about half a millisecond).  The
    bytes are exactly those of the whole list (a list holding a lone surrogate or a
    :class:`RawJSON` is encoded whole: rare, and then the bytes still match)."""
    if len(items) <= per_slice:
        return RawJSON(dumps_bytes(items))
    encode = _FAST[False, False].encode
    try:
        parts = [
            encode(items[i : i + per_slice]).encode("utf-8")[1:-1]
            for i in range(0, len(items), per_slice)
        ]
    except (_Raw, UnicodeEncodeError):
        return RawJSON(dumps_bytes(items))
    return RawJSON(b"[" + b",".join(parts) + b"]")


def canonical(value: Any) -> bytes:
    """Canonical JSON bytes (sorted keys, compact): what content ids and hashes are taken of."""
    return dumps_bytes(value, sort_keys=True)


def deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests arrays/objects more than ``limit`` deep (iterative, early exit)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def json_identical(a: Any, b: Any) -> bool:
    """Whether two decoded JSON values encode to the same bytes: equal with exact types and
    object keys in the same order (``1``, ``1.0`` and ``true`` differ, so do ``{"a":1,"b":2}``
    and ``{"b":2,"a":1}``: a prompt cache matches bytes; only ``-0.0`` vs ``0.0`` and NaN,
    which no prompt carries, compare differently).  Five times faster than encoding both,
    which matters on every turn of a long transcript."""
    if a is b:  # the previous snapshot from the recent cache shares unchanged parts
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return len(a) == len(b) and all(
            ka == kb and json_identical(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if kind is list or kind is tuple:
        return len(a) == len(b) and all(json_identical(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
