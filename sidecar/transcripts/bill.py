"""What a transcript's recorded requests cost: the cost the log records (pi, OpenCode), else the
usage priced at the model's list prices (:mod:`sidecar.transcripts.pricing`, the shipped price
table; a model it does not list at Sonnet's rates) — the one price table the replay uses too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sidecar.transcripts.pricing import rates_for, usage_cost

if TYPE_CHECKING:
    from collections.abc import Iterable

    from sidecar.transcripts.model import Request, Transcript, Usage

__all__ = ["Bill", "all_requests", "bill_of", "list_price"]


def list_price(usage: Usage, model: str) -> float:
    """``usage`` priced at ``model``'s list prices, input side and output together."""
    spent, output = usage_cost(usage, rates_for(model))
    return spent + output


@dataclass(frozen=True, slots=True)
class Bill:
    requests: int
    usd: float
    priced: int
    """Requests without a recorded cost, priced at their model's list prices."""
    input: int
    cache_read: int
    cache_write: int
    output: int

    @property
    def read_share(self) -> float:
        """Cache reads over all prompt tokens."""
        prompt = self.input + self.cache_read + self.cache_write
        return self.cache_read / prompt if prompt else 0.0


def bill_of(requests: Iterable[Request]) -> Bill:
    usd = 0.0
    n = priced = inp = read = write = out = 0
    for r in requests:
        n += 1
        u = r.usage
        if u.cost is None:
            priced += 1
            usd += list_price(u, r.model)
        else:
            usd += u.cost
        inp += u.input
        read += u.cache_read
        write += u.cache_write_5m + u.cache_write_1h
        out += u.output
    return Bill(n, usd, priced, inp, read, write, out)


def all_requests(transcript: Transcript) -> list[Request]:
    """The main thread's requests and every sub-agent's, depth first."""
    out = list(transcript.requests)
    for sub in transcript.subagents:
        out += all_requests(sub)
    return out
