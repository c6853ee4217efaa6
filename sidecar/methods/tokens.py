"""``tokens/count``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol import methods as m
from protocol.errors import ErrorCode
from protocol.limits import MAX_COUNT_BYTES
from protocol.tokens import TokensCountParams, TokensCountResult
from sidecar.aio import in_cpu_lane
from sidecar.errors import InvalidRequestError
from sidecar.methods.route import route

if TYPE_CHECKING:
    from sidecar.methods.state import SidecarState

__all__ = ["ROUTES"]

#: Below this many characters counting inline is cheaper than a thread hop.
_INLINE_CHARS = 64 * 1024


async def count(state: SidecarState, p: TokensCountParams) -> TokensCountResult:
    tokenizer = state.tokenizers.get(p.tokenizer)
    chars = sum(len(t) for t in p.texts)
    if sum(len(t.encode()) for t in p.texts) > MAX_COUNT_BYTES:
        raise InvalidRequestError(
            ErrorCode.PARAMS_INVALID,
            f"texts exceed {MAX_COUNT_BYTES} bytes in total",
            details={"limit": MAX_COUNT_BYTES},
        )
    if chars <= _INLINE_CHARS:
        counts = [tokenizer.count(t) for t in p.texts]
    else:
        counts = await in_cpu_lane(lambda: [tokenizer.count(t) for t in p.texts])
    return TokensCountResult(tokenizer=tokenizer.info, counts=counts, total=sum(counts))


ROUTES = (route(m.TOKENS_COUNT, count),)
