"""``sidecar.inputs.snapshots``: ids independent of how the bytes were produced, the recent
cache, and the exact-JSON comparison the diff's cached-prefix count rests on."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.inputs.snapshots import encode_snapshot, json_identical, load_snapshot
from sidecar.jsonbytes import canonical, dumps_bytes
from sidecar.store.blobs import BlobStore, git_blob_id


def _snapshot(text: str) -> dict[str, Any]:
    return {
        "inputId": "in",
        "system": [{"id": "s", "text": "sys", "tokens": 1, "hash": "h"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": text}], "tokens": 3},
            {"role": "assistant", "content": [{"type": "text", "text": "ok é 😀"}], "tokens": 2},
        ],
        "tools": [],
        "ledger": [],
        "dashboard": {"used": 6},
    }


def _blobs(root: Path) -> BlobStore:
    blobs = BlobStore(root)
    blobs.init()
    return blobs


def _store(blobs: BlobStore, snapshot: dict[str, Any], **kwargs: Any) -> str:
    """Encode and store a snapshot, as a run round and ``snapshot/assemble`` do."""
    return encode_snapshot(blobs, snapshot, **kwargs).put(blobs)


def test_spliced_messages_give_the_same_bytes_and_id(tmp_path: Path) -> None:
    blobs = _blobs(tmp_path / "blobs")
    snapshot = _snapshot("naïve")
    messages_json = b"[" + b",".join(dumps_bytes(m) for m in snapshot["messages"]) + b"]"
    spliced = _store(blobs, snapshot, messages_json=messages_json)
    plain = _store(_blobs(tmp_path / "other"), snapshot)
    assert spliced == plain == git_blob_id(dumps_bytes(snapshot))


def test_a_snapshot_keeps_the_order_of_a_tool_calls_arguments(tmp_path: Path) -> None:
    """Stored as built, not key-sorted: it lowers to the bytes that were sent."""
    blobs = _blobs(tmp_path / "blobs")
    snapshot = _snapshot("x")
    call: dict[str, Any] = {"type": "toolCall", "callId": "c1", "name": "list_dir"}
    call["arguments"] = {"path": ".", "depth": 1}
    snapshot["messages"][1]["content"] = [call]
    snapshot_id = _store(blobs, snapshot)
    stored = blobs.get(snapshot_id)
    assert b'"arguments":{"path":".","depth":1}' in stored
    loaded = json.loads(stored)["messages"][1]["content"][0]["arguments"]
    assert list(loaded) == ["path", "depth"]


def test_loaded_snapshots_are_copies(tmp_path: Path) -> None:
    blobs = _blobs(tmp_path / "blobs")
    snapshot_id = _store(blobs, _snapshot("a"))
    first = load_snapshot(blobs, snapshot_id)
    first["messages"] = []
    first["inputId"] = "changed"
    again = load_snapshot(blobs, snapshot_id)
    assert again["inputId"] == "in" and len(again["messages"]) == 2
    assert again["snapshotId"] == snapshot_id


def test_a_collected_snapshot_is_not_served_from_the_cache(tmp_path: Path) -> None:
    from sidecar.errors import NotFoundError

    blobs = _blobs(tmp_path / "blobs")
    snapshot_id = _store(blobs, _snapshot("gone"))
    path = tmp_path / "blobs" / "objects" / snapshot_id[:2] / snapshot_id[2:]
    assert path.exists()
    path.unlink()
    with pytest.raises(NotFoundError):
        load_snapshot(blobs, snapshot_id)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    # -0.0 is the documented exception (equal to 0.0, encoded differently)
    | st.floats(allow_nan=False).filter(lambda x: math.copysign(1.0, x) > 0 or x != 0)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSON, JSON)
def test_json_identical_agrees_with_the_bytes(a: Any, b: Any) -> None:
    assert json_identical(a, b) == (dumps_bytes(a) == dumps_bytes(b))
    decoded = json.loads(dumps_bytes(a))
    assert json_identical(a, decoded)


def test_json_identical_minds_key_order() -> None:
    """``{"a":1,"b":2}`` and ``{"b":2,"a":1}`` are different bytes for a prompt cache."""
    assert not json_identical({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not json_identical([{"x": {"a": 1, "b": 2}}], [{"x": {"b": 2, "a": 1}}])
    assert json_identical({"a": 1, "b": [2]}, {"a": 1, "b": [2]})


@pytest.mark.parametrize(
    ("a", "b"),
    [(1, 1.0), (True, 1), (False, 0), ({"a": 1}, {"a": True}), ([1], [1.0]), ("1", 1)],
)
def test_json_identical_tells_types_apart(a: Any, b: Any) -> None:
    assert not json_identical(a, b)
    assert canonical(a) != canonical(b)
