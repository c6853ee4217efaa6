"""SillyTavern-style ``{{macros}}`` evaluated over a frozen input's working copy.

One :class:`MacroEngine` is one assembly.  It takes *deep copies* of the frozen local and global
variables; every prompt component and every request parameter of that assembly is rendered
through the same engine, so ``{{setvar::x::1}}`` in one component is seen by ``{{getvar::x}}``
in a later component or parameter.  The next assembly builds a new engine and starts again from
the frozen variables, which are never modified (TauriTavern: "each assembly uses a working copy;
the saved input never changes").  Nothing here reads the clock, the network or the disk:
``{{date}}``/``{{time}}`` are the strings captured when the input was frozen, and every random
choice comes from ``random.Random`` seeded by SHA-256 of the JSON text ``[seed, kind, key]``, where
``seed`` is the frozen input's id.

Syntax (SillyTavern's macro engine 2.0, ``public/scripts/macros/engine/``)
-------------------------------------------------------------------------
* A macro is ``{{`` + optional whitespace + a name + ``}}`` or + a separator and arguments.  A
  name is ``//`` or ``[A-Za-z][A-Za-z0-9_-]*`` and is matched case-insensitively
  (``{{USER}}`` == ``{{user}}``; SillyTavern's legacy regexes are all ``/gi``).  The separator is
  ``::``, a single ``:`` or whitespace: ``{{getvar::x}}``, ``{{roll:1d6}}``, ``{{roll 1d6}}``.
  Arguments are split on ``::`` at their own nesting level and each is stripped of surrounding
  whitespace; a name followed only by whitespace has no arguments (``{{ user }}``).
* Braces pair like parentheses: ``}}`` closes the innermost open ``{{``; in a run of three or more
  ``{`` only the last two open a macro (``{{{user}}}`` -> ``{User}``); an ``{{`` that is never
  closed is plain text, and complete macros after it are still evaluated.
* Nested macros in arguments are rendered first, left to right, with their side effects
  (``{{setvar::x::{{user}}}}``).  A macro's output is never scanned again: a variable holding
  ``{{user}}`` renders those eight characters.
* Unknown names, and text between braces that is not a macro (``{{ }}``, ``{{.x}}``), are left
  verbatim, with the macros nested inside them rendered (as SillyTavern does), and reported once
  each, in order of first appearance, in :attr:`MacroEngine.unknown` in that rendered form.
  A known macro with the wrong number of arguments (``{{setvar::x::a::b}}``, ``{{user::x}}``) is
  left verbatim the same way and reported in :attr:`MacroEngine.warnings` (SillyTavern 2.0
  rejects such calls instead of joining the extra arguments).
* Not supported (so reported as unknown): scoped blocks ``{{x}}...{{/x}}``, ``{{if}}``, flags
  (``{{!x}}``), variable shorthands (``{{.x}}``, ``{{$x}}``), legacy ``<USER>`` markers.

Macros
------
``{{user}}``, ``{{char}}``, ``{{lastMessage}}``: the :class:`MacroContext` strings.
``{{date}}``, ``{{time}}`` (and the SillyTavern aliases ``{{isodate}}``, ``{{isotime}}``): the
frozen ``date``/``time`` strings verbatim ("YYYY-MM-DD", "HH:MM"); SillyTavern formats
``{{date}}``/``{{time}}`` in the browser locale from the live clock, which a frozen input cannot.
``{{// anything}}`` and ``{{comment anything}}``: empty, and their body is *not* evaluated (no
setter inside a comment runs; SillyTavern 2.0 would run it).
``{{trim}}``: removes itself and every ``\\n``/``\\r\\n`` directly before and after it (not
spaces or tabs), exactly SillyTavern's ``(?:\\r?\\n)*{{trim}}(?:\\r?\\n)*``; it applies to the
text of the level it appears in (the whole text, or the one argument it sits in), including the
output of adjacent macros, rather than as a pass over the final string.

Variables.  ``getvar``/``setvar``/``addvar``/``incvar``/``decvar`` act on the local working copy,
the ``...globalvar`` forms on the global one; names are case-sensitive.

* ``{{setvar::n::v}}`` renders empty.  The value is stored as an ``int`` when it is a decimal
  integer literal, as a ``float`` when it is a finite decimal literal with a fraction or exponent
  (``1.50`` -> ``1.5``), otherwise as the string.  (SillyTavern stores the string and converts
  every numeric string to a number when read, so what renders is the same.)  Number literals
  are ``[+-]?(digits[.digits]|.digits)([eE][+-]?digits)``, at most 400 characters; ``0x10``,
  ``Infinity`` and ``""`` are not numbers.
* ``{{getvar::n}}`` renders the value: missing or ``None`` -> ``""``; a numeric string or a
  number -> the number formatted as JavaScript's ``String(number)`` does (``"007"`` -> ``7``,
  ``2.50`` -> ``2.5``, ``1e21`` -> ``1e+21``, ``0.0000001`` -> ``1e-7``; ints are exact); booleans
  -> ``true``/``false``; lists and dicts -> compact JSON; other strings as they are.
* ``{{addvar::n::v}}`` renders empty.  If the current value is a list (or a string holding a
  JSON array) ``v`` is appended (the string stays a JSON string).  Otherwise, when the current
  value is missing, ``""`` or numeric and ``v`` is a number literal, the sum is stored (int + int
  stays an exact int); else the current value as getvar renders it (``""`` when missing) is
  concatenated with ``v`` and the string stored.  Booleans are not numbers here.  (SillyTavern
  drops a current value of ``0`` before concatenating -- ``"abc"`` rather than ``"0abc"``; we keep
  it.)  A non-finite sum leaves the variable unchanged and is reported in ``warnings``.
* ``{{incvar::n}}``/``{{decvar::n}}`` are ``addvar`` with ``1``/``-1`` and render the *new* value
  (SillyTavern: "Increments a local variable by 1 and returns the new value"); a missing
  variable counts as 0, so the first ``{{incvar::n}}`` renders ``1``.  Like SillyTavern, a
  non-numeric string gets ``1``/``-1`` appended (``abc`` -> ``abc1``).

Randomness (``seed`` = :attr:`MacroContext.seed`).

* ``{{random::a::b::c}}`` picks one item per occurrence: the key is the number of ``{{random}}``
  macros this engine evaluated before (0, 1, ...), so repeated occurrences differ but the same
  assembly of the same input repeats exactly.  With exactly one argument the list is that
  argument split on commas (``{{random:a,b,c}}``, ``{{random a, b}}``; ``\\,`` is a literal
  comma) and each item stripped, as SillyTavern does.  No items -> ``""``.
* ``{{pick::...}}`` takes the same lists; its key is the macro's character offset in the text
  passed to :meth:`MacroEngine.render` (SillyTavern's ``globalOffset``), so the choice is stable
  for the same seed and position however often or in whatever order the text is rendered.
  SillyTavern also hashes the whole text into the seed; we do not, so editing text *after* a
  pick never changes it (prompt-cache friendly) -- the price is that two texts with a pick at the
  same offset over the same list choose the same item.
* ``{{roll::NdM+K}}`` (droll: ``^([1-9]\\d*)?d([1-9]\\d*)([+-]\\d+)?$``, ``d`` any case) sums ``N``
  (default 1, at most 1000) rolls of ``1..M`` (``M`` <= 999,999,999) plus ``K`` (<= 15 digits);
  ``{{roll::M}}`` is ``1dM``.  The key is the number of ``{{roll}}`` macros evaluated before.
  An invalid or over-limit formula renders ``""`` and is reported in ``warnings``.

Guards.  Per :meth:`MacroEngine.render` call: at most ``max_substitutions`` macros (10,000) are
evaluated, at most ``max_output_chars`` characters (1 MiB) are produced by macros, and macros nest
at most ``max_depth`` (64) deep.  Past any limit the engine *trips*: the macro that hit it and
every macro after it in the text is emitted as its original source text, unevaluated (setters
that completed before keep their effect), and one warning says why.  The result of ``render`` is
therefore at most ``len(text) + max_output_chars`` characters, and the work is linear in the
text times the nesting depth.  :meth:`MacroEngine.render` never raises on any string.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import random
import re
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

__all__ = [
    "MAX_SUBSTITUTIONS",
    "MAX_OUTPUT_CHARS",
    "MAX_DEPTH",
    "MacroContext",
    "MacroEngine",
]

#: Macros evaluated per ``render`` call before the rest is left verbatim.
MAX_SUBSTITUTIONS: Final = 10_000
#: Characters macros may produce per ``render`` call before the rest is left verbatim.
MAX_OUTPUT_CHARS: Final = 1 << 20
#: Deepest nesting of macros inside macro arguments that is evaluated.
MAX_DEPTH: Final = 64

_MAX_DICE: Final = 1000
_MAX_NUMBER_CHARS: Final = 400

_BRACE_RUNS = re.compile(r"\{\{+|\}\}+")
_HEAD = re.compile(r"\s*(//|[A-Za-z][A-Za-z0-9_-]*)")
_SPACES = re.compile(r"\s*")
_DIGITS = re.compile(r"[0-9]+")
_ROLL = re.compile(r"([1-9][0-9]{0,3})?[dD]([1-9][0-9]{0,8})([+-][0-9]{1,15})?")
_NUMBER = re.compile(
    r"[+-]?(?:[0-9]+(?P<frac>\.[0-9]*)?|(?P<lead>\.[0-9]+))(?P<exp>[eE][+-]?[0-9]+)?"
)

#: name -> (minimum, maximum or None) number of arguments.
_ARITY: Final[dict[str, tuple[int, int | None]]] = {
    "user": (0, 0),
    "char": (0, 0),
    "lastmessage": (0, 0),
    "date": (0, 0),
    "time": (0, 0),
    "isodate": (0, 0),
    "isotime": (0, 0),
    "trim": (0, 0),
    "getvar": (1, 1),
    "incvar": (1, 1),
    "decvar": (1, 1),
    "getglobalvar": (1, 1),
    "incglobalvar": (1, 1),
    "decglobalvar": (1, 1),
    "setvar": (2, 2),
    "addvar": (2, 2),
    "setglobalvar": (2, 2),
    "addglobalvar": (2, 2),
    "random": (0, None),
    "pick": (0, None),
    "roll": (1, 1),
    "comment": (0, None),
}


@dataclass(frozen=True, slots=True)
class MacroContext:
    """The frozen facts macros read; ``date``/``time``/``seed`` were captured at freeze time."""

    user: str = "User"
    char: str = "Assistant"
    last_message: str = ""
    date: str = ""  # "YYYY-MM-DD", captured when the input was frozen (never the wall clock)
    time: str = ""  # "HH:MM", same
    seed: str = ""  # the frozen input's id: seeds {{random}}, {{pick}}, {{roll}}


class _Trim:
    """Marker returned by ``{{trim}}``: the caller strips newlines around it."""


_TRIM: Final = _Trim()


# --------------------------------------------------------------------------- values


def _parse_number(text: str) -> int | float | None:
    """The number a string denotes (see the module docstring), else None."""
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


def _numeric(value: Any) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return _parse_number(value)
    return None


def _format_number(number: int | float) -> str:
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


def _to_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _format_number(value)
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        return ""


def _render_var(value: Any) -> str:
    """What ``{{getvar}}`` shows for a stored value."""
    if isinstance(value, str):
        number = _parse_number(value)
        return value if number is None else _format_number(number)
    return _to_text(value)


def _stored(value: str) -> Any:
    """What ``{{setvar}}`` stores for a rendered argument."""
    number = _parse_number(value)
    return value if number is None else number


def _list_items(args: list[str]) -> list[str]:
    if len(args) != 1:
        return args
    placeholder = "\x00comma\x00"
    pieces = args[0].replace("\\,", placeholder).split(",")
    return [piece.strip().replace(placeholder, ",") for piece in pieces]


def _rstrip_newlines(text: str) -> str:
    end = len(text)
    while end and text[end - 1] == "\n":
        end -= 1
        if end and text[end - 1] == "\r":
            end -= 1
    return text[:end]


def _lstrip_newlines(text: str) -> str:
    start = 0
    while True:
        if text.startswith("\n", start):
            start += 1
        elif text.startswith("\r\n", start):
            start += 2
        else:
            return text[start:]


def _pair_braces(text: str) -> dict[int, int]:
    """Offset of every macro-opening ``{{`` -> offset of its closing ``}}``."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for run in _BRACE_RUNS.finditer(text):
        start, end = run.span()
        if text[start] == "{":
            stack.append(end - 2)
            continue
        while end - start >= 2 and stack:
            pairs[stack.pop()] = start
            start += 2
    return pairs


# --------------------------------------------------------------------------- engine


class MacroEngine:
    """Renders macros for one assembly over deep copies of the frozen variables."""

    def __init__(
        self,
        context: MacroContext,
        local_vars: Mapping[str, Any] | None = None,
        global_vars: Mapping[str, Any] | None = None,
        *,
        max_substitutions: int = MAX_SUBSTITUTIONS,
        max_output_chars: int = MAX_OUTPUT_CHARS,
        max_depth: int = MAX_DEPTH,
    ) -> None:
        self._context = context
        self._local: dict[str, Any] = copy.deepcopy(dict(local_vars or {}))
        self._global: dict[str, Any] = copy.deepcopy(dict(global_vars or {}))
        self.max_substitutions = max_substitutions
        self.max_output_chars = max_output_chars
        self.max_depth = max_depth
        self._unknown: list[str] = []
        self._warnings: list[str] = []
        self._reported: set[tuple[str, str]] = set()
        self._random_count = 0
        self._roll_count = 0

    @property
    def context(self) -> MacroContext:
        return self._context

    @property
    def local_vars(self) -> dict[str, Any]:
        """A deep copy of the local working copy as it stands now."""
        return copy.deepcopy(self._local)

    @property
    def global_vars(self) -> dict[str, Any]:
        """A deep copy of the global working copy as it stands now."""
        return copy.deepcopy(self._global)

    @property
    def unknown(self) -> list[str]:
        """Unknown macros left verbatim, as rendered, first appearance first, no duplicates."""
        return list(self._unknown)

    @property
    def warnings(self) -> list[str]:
        """Wrong arity, invalid rolls, non-finite sums and tripped guards, without duplicates."""
        return list(self._warnings)

    def render(self, text: str) -> str:
        """``text`` with every macro evaluated (see the module docstring)."""
        if "{{" not in text:
            return text
        return _Pass(self, text).render_range(0, len(text), 0)

    def render_value(self, value: Any) -> Any:
        """A new structure with every ``str`` inside dicts, lists and tuples rendered.

        Dict keys are not rendered; any other leaf is deep-copied.  The argument is not mutated.
        """
        if isinstance(value, str):
            return self.render(value)
        if isinstance(value, Mapping):
            return {key: self.render_value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.render_value(item) for item in value]
        if isinstance(value, tuple):
            return tuple(self.render_value(item) for item in value)
        return copy.deepcopy(value)

    # ----------------------------------------------------------------- reporting

    def _note_unknown(self, macro: str) -> None:
        if ("unknown", macro) not in self._reported:
            self._reported.add(("unknown", macro))
            self._unknown.append(macro)

    def _warn(self, message: str) -> None:
        if ("warning", message) not in self._reported:
            self._reported.add(("warning", message))
            self._warnings.append(message)

    # ----------------------------------------------------------------- macros

    def _rng(self, kind: str, key: int) -> random.Random:
        material = json.dumps([self._context.seed, kind, key])  # ASCII: lone surrogates escaped
        digest = hashlib.sha256(material.encode("ascii")).digest()
        return random.Random(int.from_bytes(digest, "big"))

    def _call(self, name: str, args: list[str], offset: int) -> str | _Trim:
        ctx = self._context
        match name:
            case "user":
                return ctx.user
            case "char":
                return ctx.char
            case "lastmessage":
                return ctx.last_message
            case "date" | "isodate":
                return ctx.date
            case "time" | "isotime":
                return ctx.time
            case "trim":
                return _TRIM
            case "comment":
                return ""
            case "getvar" | "getglobalvar":
                variables = self._local if name == "getvar" else self._global
                return _render_var(variables.get(args[0]))
            case "setvar" | "setglobalvar":
                variables = self._local if name == "setvar" else self._global
                variables[args[0]] = _stored(args[1])
                return ""
            case "addvar" | "addglobalvar":
                self._add(self._local if name == "addvar" else self._global, args[0], args[1])
                return ""
            case "incvar" | "decvar" | "incglobalvar" | "decglobalvar":
                variables = self._local if "global" not in name else self._global
                return _to_text(self._add(variables, args[0], 1 if "inc" in name else -1))
            case "random":
                items = _list_items(args)
                rng = self._rng("random", self._random_count)
                self._random_count += 1
                return items[rng.randrange(len(items))] if items else ""
            case "pick":
                items = _list_items(args)
                return items[self._rng("pick", offset).randrange(len(items))] if items else ""
            case "roll":
                return self._roll(args[0])
        raise AssertionError(name)  # pragma: no cover - _ARITY and this match list the same names

    def _add(self, variables: dict[str, Any], name: str, value: str | int) -> Any:
        current = variables.get(name)
        if isinstance(current, list):
            appended = [*current, value]
            variables[name] = appended
            return appended
        if isinstance(current, str) and current.lstrip().startswith("["):
            try:
                parsed = json.loads(current)
            except (ValueError, RecursionError):
                parsed = None
            if isinstance(parsed, list):
                parsed.append(value)
                variables[name] = json.dumps(parsed, ensure_ascii=False, separators=(",", ":"))
                return parsed
        empty = current is None or current == ""
        base = 0 if empty else _numeric(current)
        increment = value if isinstance(value, int) else _parse_number(value)
        if base is None or increment is None:
            joined = ("" if empty else _render_var(current)) + _to_text(value)
            variables[name] = joined
            return joined
        try:
            total = base + increment
        except OverflowError:
            total = math.inf
        if isinstance(total, float) and not math.isfinite(total):
            self._warn(f"adding {_to_text(value)} to variable {name!r} is not finite; unchanged")
            return current
        variables[name] = total
        return total

    def _roll(self, formula: str) -> str:
        if _DIGITS.fullmatch(formula):
            formula = f"1d{formula}"
        match = _ROLL.fullmatch(formula)
        dice = int(match[1] or 1) if match else 0
        if match is None or dice > _MAX_DICE:
            self._warn(f"invalid roll formula {formula[:80]!r}; rendered empty")
            return ""
        sides = int(match[2])
        rng = self._rng("roll", self._roll_count)
        self._roll_count += 1
        total = sum(rng.randint(1, sides) for _ in range(dice)) + int(match[3] or 0)
        return str(total)


class _Pass:
    """One ``render`` call: the text, its brace pairs and its guard counters."""

    def __init__(self, engine: MacroEngine, text: str) -> None:
        self.engine = engine
        self.text = text
        self.pairs = _pair_braces(text)
        self.openers = sorted(self.pairs)
        self.evaluated = 0
        self.produced = 0
        self.tripped = False

    def _next_opener(self, start: int, end: int) -> int:
        index = bisect_left(self.openers, start)
        if index < len(self.openers) and self.openers[index] < end:
            return self.openers[index]
        return -1

    def _halted(self) -> bool:
        return self.tripped

    def _trip(self, reason: str) -> None:
        self.tripped = True
        self.engine._warn(f"{reason}; the rest of the text is left verbatim")

    def render_range(self, start: int, end: int, depth: int) -> str:
        text = self.text
        pieces: list[str] = []
        after_trim = False
        position = start
        while True:
            opener = self._next_opener(position, end)
            stop = end if opener < 0 else opener
            outputs: list[str | _Trim] = [text[position:stop]] if stop > position else []
            if opener >= 0:
                outputs.append(self._macro(opener, self.pairs[opener], depth))
            for out in outputs:
                if isinstance(out, _Trim):
                    while pieces:
                        kept = _rstrip_newlines(pieces[-1])
                        if kept:
                            pieces[-1] = kept
                            break
                        pieces.pop()
                    after_trim = True
                    continue
                if after_trim:
                    out = _lstrip_newlines(out)
                    if not out:
                        continue
                    after_trim = False
                pieces.append(out)
            if opener < 0:
                return "".join(pieces)
            position = self.pairs[opener] + 2

    def _split_args(self, start: int, close: int) -> list[tuple[int, int]]:
        """Argument ranges between ``start`` and ``close``, split on ``::`` at this level."""
        ranges: list[tuple[int, int]] = []
        begin = position = start
        separator = -1
        while True:
            if separator < position:
                separator = self.text.find("::", position, close)
            if separator < 0:
                ranges.append((begin, close))
                return ranges
            nested = self._next_opener(position, separator)
            if nested >= 0:
                position = self.pairs[nested] + 2
                continue
            ranges.append((begin, separator))
            begin = position = separator + 2

    def _verbatim(self, opener: int, close: int, depth: int, *, unknown: bool) -> str:
        inner = self.render_range(opener + 2, close, depth + 1)
        if self.tripped:
            return self.text[opener : close + 2]
        out = "{{" + inner + "}}"
        if unknown:
            self.engine._note_unknown(out)
        return out

    def _macro(self, opener: int, close: int, depth: int) -> str | _Trim:
        text = self.text
        raw = text[opener : close + 2]
        if self.tripped:
            return raw
        self.evaluated += 1
        if self.evaluated > self.engine.max_substitutions:
            self._trip(f"more than {self.engine.max_substitutions} macros in one text")
            return raw
        if depth >= self.engine.max_depth:
            self._trip(f"macros nested more than {self.engine.max_depth} deep")
            return raw

        head = _HEAD.match(text, opener + 2, close)
        if head is None:
            return self._verbatim(opener, close, depth, unknown=True)
        name = head[1].lower()
        after = head.end()
        if name == "//":
            return ""
        args_start: int | None
        if after == close:
            args_start = None
        elif text.startswith("::", after, close):
            args_start = after + 2
        elif text[after] == ":":
            args_start = after + 1
        elif text[after].isspace():
            blank = _SPACES.match(text, after, close)
            args_start = None if blank is not None and blank.end() == close else after
        else:
            return self._verbatim(opener, close, depth, unknown=True)
        arity = _ARITY.get(name)
        if arity is None:
            return self._verbatim(opener, close, depth, unknown=True)
        if name == "comment":
            return ""

        ranges = [] if args_start is None else self._split_args(args_start, close)
        low, high = arity
        if len(ranges) < low or (high is not None and len(ranges) > high):
            out = self._verbatim(opener, close, depth, unknown=False)
            if not self._halted():
                expected = f"{low}" if low == high else f"{low} or more"
                self.engine._warn(
                    f"{out}: {head[1]} takes {expected} argument(s), got {len(ranges)};"
                    " left verbatim"
                )
            return out

        args = [self.render_range(a, b, depth + 1).strip() for a, b in ranges]
        if self._halted():  # a guard tripped while rendering the arguments
            return raw
        result = self.engine._call(name, args, opener)
        if isinstance(result, _Trim):
            return result
        if self.produced + len(result) > self.engine.max_output_chars:
            self._trip(f"macros produced more than {self.engine.max_output_chars} characters")
            return raw
        self.produced += len(result)
        return result
