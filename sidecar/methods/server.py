"""``server/*``: info, ping, sleep."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from protocol import methods as m
from protocol.server import ServerInfo, ServerPingResult, ServerSleepParams, ServerSleepResult
from sidecar.ids import now_iso
from sidecar.methods.route import route

if TYPE_CHECKING:
    from protocol.methods import EmptyParams
    from sidecar.methods.state import SidecarState

__all__ = ["ROUTES"]


async def info(state: SidecarState, _: EmptyParams) -> ServerInfo:
    return state.info()


async def ping(state: SidecarState, _: EmptyParams) -> ServerPingResult:
    return ServerPingResult(time=now_iso())


async def sleep(state: SidecarState, p: ServerSleepParams) -> ServerSleepResult:
    await anyio.sleep(p.ms / 1000)
    return ServerSleepResult(slept_ms=p.ms)


ROUTES = (
    route(m.SERVER_INFO, info),
    route(m.SERVER_PING, ping),
    route(m.SERVER_SLEEP, sleep),
)
