"""What a transcript's recorded requests cost: the cost the log records (pi, OpenCode), else the
usage priced at Sonnet list prices (input $3/M, cache write $3.75/M at 5 minutes and $6/M at
an hour, cache read $0.30/M, output $15/M) — the prices the comparisons of issue 41 use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from sidecar.transcripts.model import Request, Transcript, Usage

__all__ = ["SONNET_PER_MTOK", "Bill", "all_requests", "bill_of", "list_price"]

#: USD per million tokens: input, cache write 5m, cache write 1h, cache read, output.
SONNET_PER_MTOK = {"input": 3.00, "write_5m": 3.75, "write_1h": 6.00, "read": 0.30, "output": 15.00}


def list_price(usage: Usage) -> float:
    """``usage`` priced at Sonnet list prices."""
    p = SONNET_PER_MTOK
    return (
        usage.input * p["input"]
        + usage.cache_write_5m * p["write_5m"]
        + usage.cache_write_1h * p["write_1h"]
        + usage.cache_read * p["read"]
        + usage.output * p["output"]
    ) / 1e6


@dataclass(frozen=True, slots=True)
class Bill:
    requests: int
    usd: float
    priced: int
    """Requests without a recorded cost, priced at Sonnet list prices."""
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
            usd += list_price(u)
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
