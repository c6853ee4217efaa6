"""The values macros read and write: number literals, JavaScript's number formatting, what
``{{getvar}}`` shows and ``{{setvar}}`` stores, and ``{{random}}``/``{{pick}}`` lists.

The rules are those of :mod:`sidecar.inputs.macros` (its "Variables" section); SillyTavern keeps
variables as strings and converts numeric ones when read, so the rendered text is the same.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any, Final

__all__ = [
    "format_number",
    "list_items",
    "numeric",
    "parse_number",
    "render_var",
    "stored_value",
    "to_text",
]

_MAX_NUMBER_CHARS: Final = 400
_NUMBER = re.compile(
    r"[+-]?(?:[0-9]+(?P<frac>\.[0-9]*)?|(?P<lead>\.[0-9]+))(?P<exp>[eE][+-]?[0-9]+)?"
)


def parse_number(text: str) -> int | float | None:
    """The number a string denotes (see :mod:`sidecar.inputs.macros`), else None."""
    if len(text) > _MAX_NUMBER_CHARS:
        return None
    stripped = text.strip()
    match = _NUMBER.fullmatch(stripped)
    if match is None:
        return None
    if match["frac"] is None and match["lead"] is None and match["exp"] is None:
        return int(stripped)
    number = float(stripped)
    return number if math.isfinite(number) else None


def numeric(value: Any) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return parse_number(value)
    return None


def format_number(number: int | float) -> str:
    """JavaScript's ``String(number)``; ints stay exact."""
    if isinstance(number, int):
        try:
            return str(number)
        except ValueError:  # beyond Python's int->str digit limit: JS would say Infinity
            return "Infinity" if number > 0 else "-Infinity"
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    decimal = Decimal(repr(abs(number)))  # repr is the shortest round-trip form, as in JS
    _, digit_tuple, exponent = decimal.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len(digit_tuple) - len(digits)
    k = len(digits)
    n = k + exponent  # value = 0.<digits> * 10**n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        body = "0." + "0" * -n + digits
    else:
        e = n - 1
        mantissa = digits[0] + (f".{digits[1:]}" if k > 1 else "")
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body


def to_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return format_number(value)
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        return ""


def render_var(value: Any) -> str:
    """What ``{{getvar}}`` shows for a stored value."""
    if isinstance(value, str):
        number = parse_number(value)
        return value if number is None else format_number(number)
    return to_text(value)


def stored_value(value: str) -> Any:
    """What ``{{setvar}}`` stores for a rendered argument."""
    number = parse_number(value)
    return value if number is None else number


def list_items(args: list[str]) -> list[str]:
    if len(args) != 1:
        return args
    placeholder = "\x00comma\x00"
    pieces = args[0].replace("\\,", placeholder).split(",")
    return [piece.strip().replace(placeholder, ",") for piece in pieces]
