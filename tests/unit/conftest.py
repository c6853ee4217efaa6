"""Fixtures of the in-process tests of ``serve``'s routes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.server import Limits
from sidecar.context.tokens import Tokenizers
from sidecar.methods.state import SidecarState
from sidecar.store import Store


@pytest.fixture
def state(tmp_path: Path) -> Iterator[SidecarState]:
    """``serve``'s state over a fresh store, initialized, with small limits."""
    store = Store(tmp_path / "store")
    try:
        yield SidecarState(
            store=store,
            tokenizers=Tokenizers.discover(),
            limits=Limits(
                max_message_bytes=1 << 20,
                max_append_entries=1000,
                max_read_limit=1000,
                max_list_limit=500,
                max_count_bytes=1 << 20,
            ),
            initialized=True,
        )
    finally:
        store.close()
