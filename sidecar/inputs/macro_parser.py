"""The macro parser: reads macros out of a text and renders it in order through the engine.

One :class:`RenderPass` is one ``MacroEngine.render`` call: it pairs the text's braces, reads
each macro's name and arguments, renders nested macros in arguments first, applies
``{{trim}}``, leaves unknown macros and wrong arities verbatim, and keeps the guards.  What a
known macro does — its context, variables and randomness — is the evaluator's
(:class:`MacroCalls`, implemented by :class:`~sidecar.inputs.macros.MacroEngine`).

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
  each, in order of first appearance, in ``MacroEngine.unknown`` in that rendered form.
  A known macro with the wrong number of arguments (``{{setvar::x::a::b}}``, ``{{user::x}}``) is
  left verbatim the same way and reported in ``MacroEngine.warnings`` (SillyTavern 2.0
  rejects such calls instead of joining the extra arguments).
* Not supported (so reported as unknown): scoped blocks ``{{x}}...{{/x}}``, ``{{if}}``, flags
  (``{{!x}}``), variable shorthands (``{{.x}}``, ``{{$x}}``), legacy ``<USER>`` markers.

Guards.  Per ``render`` call: at most ``max_substitutions`` macros (10,000) are evaluated, at
most ``max_output_chars`` characters (1 MiB) are produced by macros, and macros nest at most
``max_depth`` (64) deep.  Past any limit the engine *trips*: the macro that hit it and
every macro after it in the text is emitted as its original source text, unevaluated (setters
that completed before keep their effect), and one warning says why.  The result of ``render`` is
therefore at most ``len(text) + max_output_chars`` characters, and the work is linear in the
text times the nesting depth.  ``render`` never raises on any string.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import Final, Protocol

__all__ = ["TRIM", "MacroCalls", "RenderPass", "Trim"]

_BRACE_RUNS = re.compile(r"\{\{+|\}\}+")
_HEAD = re.compile(r"\s*(//|[A-Za-z][A-Za-z0-9_-]*)")
_SPACES = re.compile(r"\s*")


class Trim:
    """Marker returned by ``{{trim}}``: the caller strips newlines around it."""


TRIM: Final = Trim()


class MacroCalls(Protocol):
    """The engine's side of a render pass: the guards' limits, which macros exist and what
    each returns, and where unknown macros and warnings are reported."""

    max_substitutions: int
    max_output_chars: int
    max_depth: int

    def _arity(self, name: str) -> tuple[int, int | None] | None:
        """A known macro's (minimum, maximum or None) number of arguments, else None."""
        ...

    def _call(self, name: str, args: list[str], offset: int) -> str | Trim:
        """A known macro's output for its rendered arguments (``offset``: where it starts)."""
        ...

    def _warn(self, message: str) -> None: ...

    def _note_unknown(self, macro: str) -> None: ...


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


class RenderPass:
    """One ``render`` call: the text, its brace pairs and its guard counters."""

    def __init__(self, engine: MacroCalls, text: str) -> None:
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
            outputs: list[str | Trim] = [text[position:stop]] if stop > position else []
            if opener >= 0:
                outputs.append(self._macro(opener, self.pairs[opener], depth))
            for out in outputs:
                if isinstance(out, Trim):
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

    def _macro(self, opener: int, close: int, depth: int) -> str | Trim:
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
        arity = self.engine._arity(name)
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
        if isinstance(result, Trim):
            return result
        if self.produced + len(result) > self.engine.max_output_chars:
            self._trip(f"macros produced more than {self.engine.max_output_chars} characters")
            return raw
        self.produced += len(result)
        return result
