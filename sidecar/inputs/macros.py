"""SillyTavern-style ``{{macros}}`` evaluated over a frozen input's working copy: the evaluator.

One :class:`MacroEngine` is one assembly.  It takes *deep copies* of the frozen local and global
variables; every prompt component and every request parameter of that assembly is rendered
through the same engine, so ``{{setvar::x::1}}`` in one component is seen by ``{{getvar::x}}``
in a later component or parameter.  The next assembly builds a new engine and starts again from
the frozen variables, which are never modified (TauriTavern: "each assembly uses a working copy;
the saved input never changes").  Nothing here reads the clock, the network or the disk:
``{{date}}``/``{{time}}`` are the strings captured when the input was frozen, and every random
choice comes from ``random.Random`` seeded by SHA-256 of the JSON text ``[seed, kind, key]``, where
``seed`` is the frozen input's id.

This module says what each macro does; where macros are in a text — the syntax, nesting,
``{{trim}}`` and the guards on hostile input — is the parser's
(:mod:`sidecar.inputs.macro_parser`), and number literals and their formatting are
:mod:`sidecar.inputs.macro_values`.

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
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sidecar.inputs.macro_parser import TRIM, RenderPass, Trim
from sidecar.inputs.macro_values import (
    list_items,
    numeric,
    parse_number,
    render_var,
    stored_value,
    to_text,
)

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

_DIGITS = re.compile(r"[0-9]+")
_ROLL = re.compile(r"([1-9][0-9]{0,3})?[dD]([1-9][0-9]{0,8})([+-][0-9]{1,15})?")

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


class MacroEngine:
    """Renders macros for one assembly over deep copies of the frozen variables.

    Its ``_arity``, ``_call``, ``_warn`` and ``_note_unknown`` are what a render pass of the
    parser calls (:class:`~sidecar.inputs.macro_parser.MacroCalls`), not a public surface.
    """

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
        return RenderPass(self, text).render_range(0, len(text), 0)

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

    def _arity(self, name: str) -> tuple[int, int | None] | None:
        return _ARITY.get(name)

    def _rng(self, kind: str, key: int) -> random.Random:
        material = json.dumps([self._context.seed, kind, key])  # ASCII: lone surrogates escaped
        digest = hashlib.sha256(material.encode("ascii")).digest()
        return random.Random(int.from_bytes(digest, "big"))

    def _call(self, name: str, args: list[str], offset: int) -> str | Trim:
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
                return TRIM
            case "comment":
                return ""
            case "getvar" | "getglobalvar":
                variables = self._local if name == "getvar" else self._global
                return render_var(variables.get(args[0]))
            case "setvar" | "setglobalvar":
                variables = self._local if name == "setvar" else self._global
                variables[args[0]] = stored_value(args[1])
                return ""
            case "addvar" | "addglobalvar":
                self._add(self._local if name == "addvar" else self._global, args[0], args[1])
                return ""
            case "incvar" | "decvar" | "incglobalvar" | "decglobalvar":
                variables = self._local if "global" not in name else self._global
                return to_text(self._add(variables, args[0], 1 if "inc" in name else -1))
            case "random":
                items = list_items(args)
                rng = self._rng("random", self._random_count)
                self._random_count += 1
                return items[rng.randrange(len(items))] if items else ""
            case "pick":
                items = list_items(args)
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
        base = 0 if empty else numeric(current)
        increment = value if isinstance(value, int) else parse_number(value)
        if base is None or increment is None:
            joined = ("" if empty else render_var(current)) + to_text(value)
            variables[name] = joined
            return joined
        try:
            total = base + increment
        except OverflowError:
            total = math.inf
        if isinstance(total, float) and not math.isfinite(total):
            self._warn(f"adding {to_text(value)} to variable {name!r} is not finite; unchanged")
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
