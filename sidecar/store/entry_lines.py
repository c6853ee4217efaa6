"""An entry as ``history.jsonl`` stores it: its content hash, its line, and the rule that it
refers only to entries before itself.

A stored line is ``{seq, id, time, hash, ...body}``: the reference the store assigns, then the
body as it came (``meta`` last).  The body's JSON is encoded once and serves both the hash and
the line (:func:`entry_line` splices it), since ``session/append`` is a hot path.
"""

from __future__ import annotations

from typing import Any

import xxhash

from protocol.error_codes import ErrorCode
from sidecar.errors import InvalidRequestError
from sidecar.jsonbytes import dumps_bytes

__all__ = ["check_refs", "content_hash", "content_hash_and_json", "entry_line"]


def content_hash(body: dict[str, Any]) -> str:
    """xxh3-128 of an entry's compact JSON, keys in their own order, ``meta`` excluded (it
    never reaches a model)."""
    return content_hash_and_json(body)[0]


def content_hash_and_json(body: dict[str, Any]) -> tuple[str, bytes]:
    """The content hash and the JSON it is taken of: the body as stored, keys in the order
    they came.  Not sorted: the order of a tool call's arguments is what the model produced
    and what goes back to the provider, byte for byte, on every later turn (a prompt cache
    matches bytes); equal hashes mean equal bytes sent."""
    canon = dumps_bytes({k: v for k, v in body.items() if k != "meta"})
    return xxhash.xxh3_128_hexdigest(canon), canon


_REF_KEYS = frozenset({"seq", "id", "time", "hash"})


def entry_line(ref: dict[str, Any], body: dict[str, Any], canon: bytes) -> bytes:
    """The stored line of ``{**ref, **body}``, reusing the body's JSON (one encoding per
    entry instead of two on the append path)."""
    if body.keys() & _REF_KEYS:  # a body key shadows a reference key: keep dict semantics
        return dumps_bytes({**ref, **body})
    line = dumps_bytes(ref)[:-1] + b"," + canon[1:]
    if "meta" in body:
        line = line[:-1] + b',"meta":' + dumps_bytes(body["meta"]) + b"}"
    return line


def check_refs(body: dict[str, Any], seq: int, session_id: str) -> None:
    """An entry may only refer to entries before itself."""
    refs: list[int] = []
    if body["kind"] == "compaction":
        refs.append(body["throughSeq"])
    target = body.get("target")
    if isinstance(target, dict) and target.get("kind") == "range":
        refs.append(target["throughSeq"])
    for ref in refs:
        if ref >= seq:
            raise InvalidRequestError(
                ErrorCode.SEQ_OUT_OF_RANGE,
                f"entry {seq} refers to seq {ref}, which is not before it",
                details={"sessionId": session_id, "seq": seq, "refersTo": ref},
            )
