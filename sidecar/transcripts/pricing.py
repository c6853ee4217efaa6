"""List prices for a replay: what a recorded request cost, and what a simulated one would.

The rates are the shipped price table's (``sidecar/context/data/prices.json`` through
:func:`sidecar.context.limits.prices_of`: longest model-id prefix wins).  A model the table
does not list is priced at Sonnet's list rates, and the report says so (:attr:`Rates.listed`).

- :func:`usage_cost`: a recorded request's :class:`~sidecar.transcripts.model.Usage` at list
  prices, input side (uncached, cache reads, 5-minute and 1-hour writes) and output apart.
- :func:`bill_cost`: a simulated request's :class:`~sidecar.context.cache_sim.Bill` at
  the same rates (input side only: a replay never changes what the model answered).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sidecar.context.limits import prices_of

if TYPE_CHECKING:
    from sidecar.context.cache_sim import Bill
    from sidecar.transcripts.model import Usage

__all__ = ["FALLBACK_MODEL", "Rates", "bill_cost", "rates_for", "usage_cost"]

#: Whose rates price a model the table does not list.
FALLBACK_MODEL = "claude-sonnet-4-5"
MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per million tokens."""

    model: str
    input: float
    output: float
    write_5m: float
    write_1h: float
    read: float
    listed: bool = True
    """False: the model is not in the price table; these are :data:`FALLBACK_MODEL`'s."""


def rates_for(model: str) -> Rates:
    """``model``'s list rates (the fallback's, flagged, when the table has no row for it)."""
    prices = prices_of(model)
    listed = prices is not None
    if prices is None:
        prices = prices_of(FALLBACK_MODEL)
        assert prices is not None, "the price table lists the fallback model"
    return Rates(
        model=model,
        input=prices.input,
        output=prices.output,
        write_5m=prices.cache_write_5m,
        write_1h=prices.cache_write_1h,
        read=prices.cache_read,
        listed=listed,
    )


def usage_cost(usage: Usage, rates: Rates) -> tuple[float, float]:
    """(input-side cost, output cost) of a recorded request, USD."""
    spent = (
        usage.input * rates.input
        + usage.cache_read * rates.read
        + usage.cache_write_5m * rates.write_5m
        + usage.cache_write_1h * rates.write_1h
    )
    return spent / MILLION, usage.output * rates.output / MILLION


def bill_cost(bill: Bill, rates: Rates) -> float:
    """The input-side cost of a simulated request (or of many, summed), USD."""
    return bill.priced_at(rates.input, rates.write_5m, rates.write_1h, rates.read)
