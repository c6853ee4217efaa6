"""``dumps_in_slices``: a long list encoded a slice at a time gives the bytes of the whole."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sidecar.jsonbytes import RawJSON, dumps_bytes, dumps_in_slices


def _items(n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"ctx_{i:04d}", "tokens": i, "text": "é \u2028 😀", "ok": i % 2 == 0}
        for i in range(n)
    ]


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 16, 17, 50])
def test_the_slices_join_to_the_bytes_of_the_whole_list(n: int) -> None:
    items = _items(n)
    sliced = dumps_in_slices(items, per_slice=8)
    assert isinstance(sliced, RawJSON)
    assert sliced.data == dumps_bytes(items)
    assert json.loads(sliced.data) == items


def test_a_sliced_list_splices_into_an_answer() -> None:
    items = _items(30)
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"ledger": dumps_in_slices(items, 8)}}
    assert json.loads(dumps_bytes(answer))["result"]["ledger"] == items


def test_each_call_of_the_encoder_gets_one_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the slicing is for: no single encoder call walks the whole list."""
    import sidecar.jsonbytes as jsonbytes

    lengths: list[int] = []
    real = jsonbytes._FAST[False, False]

    class Counting:
        def encode(self, value: Any) -> str:
            lengths.append(len(value))
            return real.encode(value)

    monkeypatch.setitem(jsonbytes._FAST, (False, False), Counting())
    dumps_in_slices(_items(50), per_slice=8)
    assert lengths == [8, 8, 8, 8, 8, 8, 2]


@pytest.mark.parametrize(
    "odd",
    [{"text": "lone \ud800"}, {"raw": RawJSON(b'{"spliced":true}')}],
    ids=["surrogate", "raw"],
)
def test_an_item_the_fast_path_cannot_encode_gives_the_same_bytes(odd: dict[str, Any]) -> None:
    items: list[Any] = [{"text": "é"}] * 9 + [odd]
    assert dumps_in_slices(items, per_slice=4).data == dumps_bytes(items)
