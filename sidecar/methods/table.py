"""The method table: every route of every family (each family's module exports ``ROUTES``).

``CONNECTION_FREE_ROUTES`` are those whose handlers use neither the connection nor the run
manager: every family but ``run/*``, less the methods that act on what runs hold (a busy
session, the run records ``store/gc`` keeps).  They are served while pygls still loads
(:mod:`sidecar.rpc.early`); a handler added to one of those families must keep to that, or
be listed in ``_RUN_AWARE``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sidecar.methods import checkpoints, context, inputs, runs, server, sessions, tokens

if TYPE_CHECKING:
    from sidecar.methods.route import Route

__all__ = ["CONNECTION_FREE_ROUTES", "ROUTES"]

_RUN_AWARE = frozenset({"session/delete", "session/release", "store/gc", "checkpoint/restore"})

CONNECTION_FREE_ROUTES: tuple[Route, ...] = tuple(
    r
    for r in (
        *sessions.ROUTES,
        *context.ROUTES,
        *inputs.ROUTES,
        *checkpoints.ROUTES,
        *tokens.ROUTES,
        *server.ROUTES,
    )
    if r.spec.name not in _RUN_AWARE
)

ROUTES: tuple[Route, ...] = (
    *sessions.ROUTES,
    *context.ROUTES,
    *inputs.ROUTES,
    *checkpoints.ROUTES,
    *runs.ROUTES,
    *tokens.ROUTES,
    *server.ROUTES,
)
