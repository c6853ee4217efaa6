"""The runs' view of the connection: notifications, and server->client requests with a
timeout that tell the host when they are abandoned (``$/cancelRequest``)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from collections.abc import Callable

    from sidecar.rpc.protocol import SidecarProtocol

__all__ = ["PyglsBridge"]

_EVENT_HEAD = b'{"jsonrpc":"2.0","method":"run/event","params":'


class PyglsBridge:
    def __init__(self, protocol: SidecarProtocol, backlog: Callable[[], int]) -> None:
        self._protocol = protocol
        self._ids = itertools.count(1)
        self.backlog = backlog
        """Bytes sent but not yet read by the client."""

    def host_assembles(self) -> bool:
        """Whether the host declared ``capabilities.experimental.contextSidecar.assembly``."""
        caps = getattr(self._protocol, "client_capabilities", None)
        experimental = getattr(caps, "experimental", None)
        block = experimental.get("contextSidecar") if isinstance(experimental, dict) else None
        return isinstance(block, dict) and block.get("assembly") is True

    def notify(self, method: str, params: Any) -> None:
        self._protocol.notify(method, params)

    def send_event(
        self, line: bytes, journaled: Callable[[], None], event: dict[str, Any] | None = None
    ) -> None:
        """The journal line is the params, spliced as it is (no second encoding); the
        writer writes the journal before the frame (``before_write``)."""
        self._protocol.before_write(journaled)
        self._protocol.send_body(_EVENT_HEAD + line + b"}")

    def after_answer(self, fn: Callable[[], object]) -> None:
        self._protocol.after_answer(fn)

    async def request(self, method: str, params: Any, timeout_s: float) -> Any:
        msg_id = f"sidecar-{next(self._ids)}"
        future = self._protocol.send_request_async(method, params, msg_id=msg_id)
        try:
            with anyio.fail_after(timeout_s):
                return await future
        except BaseException:
            # Cancelled or timed out while the host had not answered: withdraw it there too, so
            # no request is left hanging.
            self._protocol.withdraw_request(msg_id)
            raise
