"""Which JSON-RPC code an ACP answer carries for a sidecar error.

ACP reserves ``-32000`` for ``auth_required`` (and ``-32002`` for a resource not found):
Zed's client turns a ``-32000`` answer to ``session/prompt`` into "Authentication required"
and drops the message.  So the ACP face never sends the ``serve`` face's domain code
``-32000``: bad params are ``-32602``, anything not found ``-32002``, and every other failure
(a model or provider error, a busy session, a tool that could not run) ``-32603``, the
generic error the SDKs and editors show with its message.  ``data.code`` still carries the
dotted code, so a client that looks deeper loses nothing.
"""

from __future__ import annotations

from protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, ErrorCode

__all__ = ["AUTH_REQUIRED", "RESOURCE_NOT_FOUND", "acp_code"]

AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002


def acp_code(domain_code: object) -> int:
    """The JSON-RPC code for a sidecar error whose dotted code is ``domain_code``."""
    if domain_code == ErrorCode.PARAMS_INVALID:
        return INVALID_PARAMS
    if isinstance(domain_code, str) and domain_code.endswith(".not_found"):
        return RESOURCE_NOT_FOUND
    return INTERNAL_ERROR
