"""Request bodies as a prompt cache sees them, for the tests of the bytes sent.

A body is cut into its units — each tool, each system block, each message — and each unit is
written back as compact JSON in the body's own key order, without the ``cache_control``
markers (they move to the newest content every turn and are not part of the cached prefix):
two units are equal only if the provider saw the same bytes.  Independent of the sidecar's
own ``sidecar.context.sent``.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

__all__ = ["assert_prefix_kept", "compact", "units", "unmarked"]


def compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def unmarked(node: Any) -> Any:
    """``node`` without its ``cache_control`` markers."""
    if isinstance(node, dict):
        return {k: unmarked(v) for k, v in node.items() if k != "cache_control"}
    if isinstance(node, list):
        return [unmarked(v) for v in node]
    return node


def units(body: dict[str, Any]) -> list[bytes]:
    """Each tool, system block and message of ``body`` (any lowering) as the bytes sent."""
    body = unmarked(body)
    out = [compact(t) for t in body.get("tools", [])]
    system = body.get("system")
    if isinstance(system, list):
        out += [compact(s) for s in system]
    elif system is not None:
        out.append(compact(system))
    for key in ("instructions", "systemInstruction"):
        if key in body:
            out.append(compact(body[key]))
    for key in ("messages", "input", "contents"):
        out += [compact(m) for m in body.get(key, [])]
    return out


def assert_prefix_kept(what: str, bodies: list[dict[str, Any]]) -> None:
    """Every body repeats every unit of the one before it, byte for byte, and adds some."""
    for number, (before, after) in enumerate(itertools.pairwise(bodies), start=1):
        kept, now = units(before), units(after)
        assert len(now) > len(kept), (what, number)
        for index, (was, sent) in enumerate(zip(kept, now, strict=False)):
            assert sent == was, (what, f"request {number + 1}, unit {index}", was, sent)
