"""Prompt snapshots: immutable, content-addressed, diffable.

A snapshot is the assembled prompt plus what it was made from (input id, session, profile
hash, evaluated parameters, the items it carries).  Its id is the git blob id of its JSON
(compact, without the ``snapshotId`` field itself, keys in the order the prompt is built and
sent: not sorted, so a tool call's arguments keep the order the model gave them and a
snapshot lowers to the bytes that were sent), and that JSON is stored in the blob store, so
``git cat-file -p <snapshotId>`` prints it and the same session + input + profile always give
the same id, across restarts.

``diff`` compares two snapshots section by section and ledger item by ledger item, and
counts the leading *request units* — each tool, each system section, each message, in the
order providers cache them (tools, system, messages) — that are byte-identical in both: the
tokens of those units are what a prompt cache can serve to the newer request.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import xxhash

from protocol.errors import ErrorCode
from sidecar.errors import NotFoundError
from sidecar.jsonbytes import RawJSON, canonical, dumps_bytes, dumps_in_slices, json_identical
from sidecar.store.blobs import git_blob_id

if TYPE_CHECKING:
    from sidecar.store.blobs import BlobStore

__all__ = [
    "EncodedSnapshot",
    "canonical",
    "diff_snapshots",
    "encode_snapshot",
    "json_identical",
    "load_snapshot",
    "profile_hash",
]


def profile_hash(profile: dict[str, Any]) -> str:
    return xxhash.xxh3_128_hexdigest(canonical(profile))


class _RecentSnapshots:
    """The last few snapshots stored or read, parsed: the next turn's diff reads its
    predecessor from here instead of inflating and parsing ~100s of KB again.  Snapshots are
    immutable and content-addressed, so an entry can never be stale; callers get a shallow
    copy."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, snapshot_id: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._items.get(snapshot_id)
            if found is None:
                return None
            self._items.move_to_end(snapshot_id)
            return dict(found)

    def put(self, snapshot_id: str, snapshot: dict[str, Any]) -> None:
        with self._lock:
            self._items[snapshot_id] = {**snapshot, "snapshotId": snapshot_id}
            self._items.move_to_end(snapshot_id)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


_RECENT = _RecentSnapshots(16)


@dataclass(frozen=True, slots=True)
class EncodedSnapshot:
    """A snapshot's bytes and id, not stored yet (:func:`encode_snapshot`)."""

    snapshot_id: str
    data: bytes
    body: dict[str, Any]
    """The snapshot without ``snapshotId``, as encoded."""

    def put(self, blobs: BlobStore) -> str:
        """Store the bytes (durably: it waits for the disk) and return the id."""
        blobs.put(self.data, blob_id=self.snapshot_id)
        _RECENT.put(self.snapshot_id, self.body)
        return self.snapshot_id


def encode_snapshot(
    blobs: BlobStore, snapshot: dict[str, Any], *, messages_json: bytes | None = None
) -> EncodedSnapshot:
    """``snapshot`` (without ``snapshotId``) encoded, with its id, to be stored by
    :meth:`EncodedSnapshot.put`: encoding computes (the CPU lane), storing waits for the disk
    (a worker thread: the lane must never wait for a disk, every assembly queues behind it).

    ``messages_json``: the JSON of ``snapshot["messages"]`` when the caller already
    has it (the assembler splices it from cached transcript groups): spliced, not re-encoded;
    the bytes, hence the id, are the same either way."""
    body = {k: v for k, v in snapshot.items() if k != "snapshotId"}
    spliced: dict[str, Any] = {**body}
    if messages_json is not None:
        spliced["messages"] = RawJSON(messages_json)
    if isinstance(body.get("ledger"), list):
        # a run's round stores one per request: the ledger in slices, so that the worker
        # thread storing it never holds the event loop for one long encoder call
        spliced["ledger"] = dumps_in_slices(body["ledger"])
    data = dumps_bytes(spliced)
    return EncodedSnapshot(git_blob_id(data, blobs.object_format), data, body)


def load_snapshot(blobs: BlobStore, snapshot_id: str) -> dict[str, Any]:
    recent = _RECENT.get(snapshot_id)
    if recent is not None and blobs.has(snapshot_id):
        return recent
    try:
        data = blobs.get(snapshot_id)
    except NotFoundError:
        raise NotFoundError(
            ErrorCode.SNAPSHOT_NOT_FOUND,
            f"no snapshot {snapshot_id}",
            details={"snapshotId": snapshot_id},
        ) from None
    try:
        snapshot: dict[str, Any] = json.loads(data)
    except ValueError:
        snapshot = {}
    if "inputId" not in snapshot or "system" not in snapshot:
        raise NotFoundError(
            ErrorCode.SNAPSHOT_NOT_FOUND,
            f"{snapshot_id} is not a snapshot",
            details={"snapshotId": snapshot_id},
        )
    _RECENT.put(snapshot_id, snapshot)
    snapshot["snapshotId"] = snapshot_id
    return snapshot


def _units(snapshot: dict[str, Any]) -> list[tuple[Any, int]]:
    """Request units in cache order, each with its JSON value and tokens."""
    tool_tokens = {i["locator"]: i["tokens"] for i in snapshot["ledger"] if i["kind"] == "tool"}
    units: list[tuple[Any, int]] = [(t, tool_tokens.get(t["name"], 0)) for t in snapshot["tools"]]
    units += [((s["id"], s["text"]), s["tokens"]) for s in snapshot["system"]]
    units += [((m["role"], m["content"]), m["tokens"]) for m in snapshot["messages"]]
    return units


def diff_snapshots(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    old_sections = {s["id"]: s["hash"] for s in before["system"]} if before else {}
    new_sections = {s["id"]: s["hash"] for s in after["system"]}
    old_ledger = {i["itemId"]: i for i in before["ledger"]} if before else {}
    new_ledger = {i["itemId"]: i for i in after["ledger"]}
    changes = []
    for item_id in sorted(set(old_ledger) | set(new_ledger)):
        old, new = old_ledger.get(item_id), new_ledger.get(item_id)
        was = old["visibility"] if old else None
        now = new["visibility"] if new else None
        if was != now:
            ref = new or old
            assert ref is not None
            changes.append(
                {
                    "itemId": item_id,
                    "kind": ref["kind"],
                    **({"locator": ref["locator"]} if ref.get("locator") else {}),
                    **({"before": was} if was else {}),
                    **({"after": now} if now else {}),
                }
            )
    prefix_units = prefix_tokens = 0
    if before is not None:
        for (a, tokens), (b, _) in zip(_units(before), _units(after), strict=False):
            if not json_identical(a, b):
                break
            prefix_units += 1
            prefix_tokens += tokens
    return {
        "fromSnapshot": before["snapshotId"] if before else None,
        "toSnapshot": after["snapshotId"],
        "sectionsAdded": sorted(set(new_sections) - set(old_sections)),
        "sectionsRemoved": sorted(set(old_sections) - set(new_sections)),
        "sectionsChanged": sorted(
            k for k in new_sections if k in old_sections and old_sections[k] != new_sections[k]
        ),
        "ledgerChanges": changes,
        "messagesBefore": len(before["messages"]) if before else 0,
        "messagesAfter": len(after["messages"]),
        "prefixUnits": prefix_units,
        "prefixTokens": prefix_tokens,
        "totalTokensBefore": before["dashboard"]["used"] if before else 0,
        "totalTokensAfter": after["dashboard"]["used"],
    }
