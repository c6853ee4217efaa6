"""Method handlers, one module per family; each exports ``ROUTES``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sidecar.rpc.handlers import context, inputs, runs, server, sessions, tokens

if TYPE_CHECKING:
    from sidecar.rpc.router import Route

__all__ = ["ROUTES"]

ROUTES: tuple[Route, ...] = (
    *sessions.ROUTES,
    *context.ROUTES,
    *inputs.ROUTES,
    *runs.ROUTES,
    *tokens.ROUTES,
    *server.ROUTES,
)
