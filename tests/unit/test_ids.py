"""``sidecar.ids``: ULID-style ids, Crockford base32, strictly increasing within a process."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from sidecar.ids import _ALPHABET, _encode_128, new_id


def _reference(value: int) -> str:
    """The textbook encoding: 26 digits of 5 bits, most significant first."""
    return "".join(_ALPHABET[(value >> (5 * i)) & 31] for i in reversed(range(26)))


@given(st.integers(min_value=0, max_value=(1 << 128) - 1))
def test_encoding_matches_the_textbook_one(value: int) -> None:
    assert _encode_128(value) == _reference(value)


def test_ids_are_well_formed_and_strictly_increasing() -> None:
    ids = [new_id("ent") for _ in range(5000)]
    assert all(re.fullmatch(r"ent_[0-9A-HJKMNP-TV-Z]{26}", i) for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
