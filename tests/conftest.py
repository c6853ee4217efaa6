"""Shared fixtures: an isolated store per test and real sidecar subprocesses."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.framing import FrameDecoder
from sidecar.client import SidecarClient
from sidecar.context.live_limits import forget_all
from sidecar.defaults import NO_LIVE_LIMITS_ENV
from sidecar.runs.live_lookup import forget_asked


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test touches the user's real store or an inherited trace file, nor asks a models
    endpoint unless it says so."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.delenv("CONTEXT_SIDECAR_STORE", raising=False)
    monkeypatch.delenv("CONTEXT_SIDECAR_TRACE", raising=False)
    # runs ask no models endpoint unless a test turns it on (its loopback server would take
    # the GET for a scripted answer); and nothing learnt leaks from one test to the next
    monkeypatch.setenv(NO_LIVE_LIMITS_ENV, "1")
    forget_all()
    forget_asked()
    yield
    forget_all()
    forget_asked()


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


def assert_valid_frames(data: bytes | bytearray) -> list[dict[str, Any]]:
    """Every byte must belong to a well-formed frame carrying a JSON-RPC 2.0 message."""
    decoder = FrameDecoder(max_body=1 << 31)
    messages: list[dict[str, Any]] = []
    for item in decoder.feed(bytes(data)):
        assert isinstance(item, bytes), f"stdout carried a broken frame: {item}"
        message = json.loads(item)
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", message
        messages.append(message)
    assert decoder.at_boundary, f"stdout ended inside a frame ({decoder.pending} bytes held)"
    return messages


class SidecarFactory:
    """Starts sidecars for one test; stops them and checks their stdout afterwards."""

    def __init__(self, store: Path, log_dir: Path) -> None:
        self.store = store
        self.log_dir = log_dir
        self.clients: list[SidecarClient] = []

    async def start(
        self,
        *,
        store: Path | None = None,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        initialize: bool = True,
        process_id: int | None = None,
        capabilities: dict[str, Any] | None = None,
    ) -> SidecarClient:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"sidecar-{len(self.clients)}.log"
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            client = await SidecarClient.spawn(
                store=store or self.store,
                args=args,
                env=env,
                initialize=initialize,
                process_id=process_id,
                capabilities=capabilities,
                record=True,
                stderr=fd,
            )
        finally:
            os.close(fd)
        self.clients.append(client)
        return client

    def stderr_of(self, client: SidecarClient) -> str:
        """Everything ``client``'s sidecar has written to stderr so far."""
        return (self.log_dir / f"sidecar-{self.clients.index(client)}.log").read_text()

    async def close_all(self) -> None:
        for client in self.clients:
            if client.process.returncode is None:
                await client.close()
            assert_valid_frames(client.stdout_bytes)


@pytest.fixture
async def sidecars(store_dir: Path, tmp_path: Path) -> AsyncIterator[SidecarFactory]:
    factory = SidecarFactory(store_dir, tmp_path / "logs")
    try:
        yield factory
    finally:
        await factory.close_all()


@pytest.fixture
async def sidecar(sidecars: SidecarFactory) -> SidecarClient:
    return await sidecars.start()
