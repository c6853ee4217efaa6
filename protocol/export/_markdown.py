"""Markdown generation: the protocol reference pages of the docs site (``docs/protocol/``).

Owns :func:`render_pages`, a pure function of the schema bundle (plus the fixed error codes of
:mod:`protocol.errors`) giving every page's file name and text:

- ``index.md``: version and schema hash, the transport, the method index by family, the error
  shape and codes, scripted runs;
- ``<family>.md``, one per method family (``session``, ``run``, ...): its methods and the types
  only that family's methods reach (through params, results and the types those refer to);
- ``types.md``: the types several families share, and those no method reaches.

Every type has one section, on one page; a type name links to it (``#typename`` on the same
page, ``page.md#typename`` across pages: the heading anchor of mkdocs and of GitHub alike).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from protocol.errors import (
    DOMAIN_ERROR,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    SERVER_NOT_INITIALIZED,
    ErrorCode,
)
from protocol.export._walk import (
    GENERATOR_COMMAND,
    Arr,
    Definition,
    Field,
    Inter,
    Lit,
    Method,
    Obj,
    Prim,
    Ref,
    SchemaModel,
    Tup,
    TypeExpr,
    Union,
    description_lines,
    first_paragraph,
    type_ident,
)

__all__ = ["INDEX_PAGE", "SHARED_PAGE", "anchor", "render_pages"]

#: The overview page and the page of the types several families share (or none reaches).
INDEX_PAGE = "index.md"
SHARED_PAGE = "types.md"
_ERROR_DEF = "ErrorData"
_CAPABILITIES_DEF = "ServerCapabilities"
_TOP, _UNION, _INTER, _POSTFIX = 0, 1, 2, 3
_PRIMS = {
    "string": "string",
    "number": "number",
    "integer": "integer",
    "boolean": "boolean",
    "null": "null",
    "unknown": "any",
    "never": "never",
}
_DIRECTIONS = {"clientToServer": "client → server", "serverToClient": "server → client"}
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_NOT_SLUG = re.compile(r"[^a-z0-9 _-]")
#: (JSON-RPC code, meaning) of the protocol faults, for the Errors section.
_RPC_CODES = (
    (PARSE_ERROR, "parse error"),
    (INVALID_REQUEST, "invalid request"),
    (METHOD_NOT_FOUND, "unknown method"),
    (INVALID_PARAMS, "invalid params"),
    (INTERNAL_ERROR, "internal error"),
    (SERVER_NOT_INITIALIZED, "not initialized"),
    (REQUEST_CANCELLED, "request cancelled"),
)


def render_pages(schema: dict[str, Any], schema_hash: str) -> dict[str, str]:
    """Every page of the reference for ``schema``, by file name (the overview first, then the
    families in registry order, then the shared types); same input, same bytes."""
    model = SchemaModel(schema)
    owner = _owners(model)
    families = model.families()
    pages = {INDEX_PAGE: _Reference(model, schema_hash, owner, INDEX_PAGE).index()}
    for family, methods in families:
        page = _family_page(family)
        pages[page] = _Reference(model, schema_hash, owner, page).family(family, methods)
    pages[SHARED_PAGE] = _Reference(model, schema_hash, owner, SHARED_PAGE).shared()
    return pages


def anchor(name: str) -> str:
    """The heading anchor of a type's section (GitHub's and mkdocs' alike): its name,
    lowercased."""
    return _NOT_SLUG.sub("", type_ident(name).lower()).replace(" ", "-")


def _family_page(family: str) -> str:
    page = f"{_NOT_SLUG.sub('', family.lower()).replace(' ', '-') or 'family'}.md"
    if page in (INDEX_PAGE, SHARED_PAGE):
        raise ValueError(f"method family {family!r} would overwrite the page {page}")
    return page


# ---------------------------------------------------------------------------------------------
# Which page holds which type
# ---------------------------------------------------------------------------------------------


def _refs(t: TypeExpr) -> list[str]:
    """The definitions ``t`` names directly (not through them)."""
    if isinstance(t, Ref):
        return [t.name]
    if isinstance(t, Arr):
        return _refs(t.item)
    if isinstance(t, Tup):
        rest = () if t.rest is None else (t.rest,)
        return [n for i in (*t.items, *rest) for n in _refs(i)]
    if isinstance(t, Obj):
        inner = [f.type for f in t.fields] + ([t.extra] if t.extra is not None else [])
        return [n for i in inner for n in _refs(i)]
    if isinstance(t, Union | Inter):
        return [n for m in t.members for n in _refs(m)]
    return []


def _owners(model: SchemaModel) -> dict[str, str]:
    """Each definition's page: the one family whose methods reach it, else the shared page."""
    reached_by: dict[str, set[str]] = {d.name: set() for d in model.definitions}
    for family, methods in model.families():
        todo = [n for m in methods for n in (m.params, m.result) if n is not None]
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen or name not in reached_by:
                continue
            seen.add(name)
            reached_by[name].add(family)
            todo += _refs(model.type_of_def(name))
    return {
        name: _family_page(next(iter(fams))) if len(fams) == 1 else SHARED_PAGE
        for name, fams in reached_by.items()
    }


# ---------------------------------------------------------------------------------------------
# Markdown text helpers
# ---------------------------------------------------------------------------------------------


def _escape_text(text: str) -> str:
    """Prose for a table cell or paragraph: ``|`` escaped everywhere, ``<`` outside code."""
    out: list[str] = []
    pos = 0
    for match in _CODE_SPAN.finditer(text):
        out.append(text[pos : match.start()].replace("<", "&lt;"))
        code = match.group(2)
        out.append(_html_code(code) if "|" in code else match.group(0))
        pos = match.end()
    out.append(text[pos:].replace("<", "&lt;"))
    return "".join(out).replace("|", "\\|")


def _code(text: str) -> str:
    """``text`` as a code span (safe in a table cell)."""
    if "|" in text:
        return _html_code(text)
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _html_code(text: str) -> str:
    """Code holding a ``|``, as HTML: a table cell ends at a bare ``|`` on GitHub, and a
    ``\\|`` inside a code span shows its backslash in Python-Markdown (mkdocs); ``&#124;``
    is a pipe to both."""
    return f"<code>{html.escape(text, quote=False).replace('|', '&#124;')}</code>"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell or " " for cell in row) + " |" for row in rows]
    return lines


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# Constraint notes
# ---------------------------------------------------------------------------------------------


def _value_branch(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The one non-null branch of a nullable property schema (else the schema itself)."""
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            rest = [o for o in options if isinstance(o, Mapping) and o.get("type") != "null"]
            return rest[0] if len(rest) == 1 else {}
    return schema


def _range(low: Any, high: Any, unit: str = "") -> str | None:
    suffix = f" {unit}" if unit else ""
    if low is not None and high is not None:
        return f"{low}\N{EN DASH}{high}{suffix}"
    if low is not None:
        return f"≥ {low}{suffix}"
    if high is not None:
        return f"≤ {high}{suffix}"
    return None


def _constraints(schema: Mapping[str, Any]) -> list[str]:
    s = _value_branch(schema)
    notes: list[str] = []
    bounds = _range(s.get("minimum"), s.get("maximum"))
    if bounds:
        notes.append(bounds)
    if s.get("exclusiveMinimum") is not None:
        notes.append(f"> {s['exclusiveMinimum']}")
    if s.get("exclusiveMaximum") is not None:
        notes.append(f"< {s['exclusiveMaximum']}")
    if s.get("multipleOf") is not None:
        notes.append(f"multiple of {s['multipleOf']}")
    length = _range(s.get("minLength"), s.get("maxLength"))
    if length:
        notes.append(f"length {length}")
    items = _range(s.get("minItems"), s.get("maxItems"), "items")
    if items:
        notes.append(items)
    if s.get("uniqueItems") is True:
        notes.append("unique items")
    if isinstance(s.get("format"), str):
        notes.append(f"format {_code(s['format'])}")
    if isinstance(s.get("pattern"), str):
        notes.append(f"pattern {_code(s['pattern'])}")
    return notes


# ---------------------------------------------------------------------------------------------
# The reference
# ---------------------------------------------------------------------------------------------


class _Reference:
    """One page: ``owner`` says on which page each type's section is."""

    def __init__(
        self, model: SchemaModel, schema_hash: str, owner: Mapping[str, str], page: str
    ) -> None:
        self.model = model
        self.schema_hash = schema_hash
        self.owner = owner
        self.page = page

    # -- types --------------------------------------------------------------------------------

    def link(self, name: str) -> str:
        where = self.owner.get(name, SHARED_PAGE)
        target = "" if where == self.page else where
        return f"[{type_ident(name)}]({target}#{anchor(name)})"

    def type(self, t: TypeExpr, ctx: int = _TOP) -> str:
        """A compact rendering, e.g. ``string \\| null``, ``[Entry](#entry)\\[\\]``."""
        if isinstance(t, Prim):
            return _PRIMS[t.name]
        if isinstance(t, Lit):
            return _code(_json(t.value))
        if isinstance(t, Ref):
            return self.link(t.name) if self.model.has_def(t.name) else "any"
        if isinstance(t, Arr):
            return f"{self.type(t.item, _POSTFIX)}\\[\\]"
        if isinstance(t, Tup):
            items = [self.type(i) for i in t.items]
            if t.rest is not None:
                items.append(f"...{self.type(t.rest, _POSTFIX)}\\[\\]")
            return f"\\[{', '.join(items)}\\]"
        if isinstance(t, Obj):
            return self.inline_object(t)
        if isinstance(t, Union):
            text = " \\| ".join(self.type(m, _UNION) for m in t.members)
            return f"({text})" if ctx > _UNION else text
        assert isinstance(t, Inter)
        text = " & ".join(self.type(m, _INTER) for m in t.members)
        return f"({text})" if ctx > _INTER else text

    def inline_object(self, obj: Obj) -> str:
        if not obj.fields:
            if obj.extra is None:
                return "{}"
            if obj.extra == Prim("unknown"):
                return "object"
            return f"map&lt;string, {self.type(obj.extra)}&gt;"
        members = [f"{f.name}{'' if f.required else '?'}: {self.type(f.type)}" for f in obj.fields]
        if obj.extra is not None:
            members.append("...")
        return f"{{ {', '.join(members)} }}"

    def ref_cell(self, name: str | None, none: str = "—") -> str:
        if name is None:
            return none
        return self.link(name) if self.model.has_def(name) else _code(name)

    # -- sections -----------------------------------------------------------------------------

    def header(self, title: str) -> list[str]:
        return [
            f"# {title}",
            "",
            f"<!-- Generated from the protocol schema. Do not edit: regenerate with "
            f"`{GENERATOR_COMMAND}`. -->",
        ]

    def facts(self) -> list[str]:
        version = self.model.protocol_version
        return [
            f"- **Protocol version:** {version if version is not None else 'unversioned'}",
            f"- **Schema hash:** {_code(self.schema_hash)}",
            "",
            "Generated from the pydantic models of the `protocol` package; do not edit by hand "
            f"(regenerate with `{GENERATOR_COMMAND}`). Each method family has a page with its "
            "methods and the types only its methods use; the types several families share are "
            f"under [Shared types]({SHARED_PAGE}).",
        ]

    def transport(self) -> list[str]:
        caps = (
            f"a {self.link(_CAPABILITIES_DEF)}"
            if self.model.has_def(_CAPABILITIES_DEF)
            else "its capabilities"
        )
        return [
            "## Transport",
            "",
            "The sidecar is a child process speaking JSON-RPC 2.0 over its stdin and stdout. "
            "Messages are framed as in the LSP base protocol: a `Content-Length` header giving "
            "the length of the body in bytes (of its UTF-8 encoding, not characters), a blank "
            "line (`\\r\\n\\r\\n`), then the JSON body; other headers, such as `Content-Type`, "
            "are ignored. A session follows the LSP lifecycle: the client sends `initialize`, "
            f"whose answer carries {caps} under `capabilities.experimental.contextSidecar`, "
            "then the `initialized` notification, before any other method; "
            "`shutdown` then the `exit` notification end it. A request in flight is cancelled "
            'with the `$/cancelRequest` notification (`{"id": <request id>}`) and is then '
            f"answered with error code {REQUEST_CANCELLED} ({_code(ErrorCode.CANCELLED)}).",
            "",
            "As LSP requires, a notification the sidecar does not handle (an editor's "
            "`textDocument/didSave`, `workspace/didChangeConfiguration`, `$/progress`, any "
            "`$/` one) is ignored; an unknown request is answered with error code "
            f"{METHOD_NOT_FOUND} ({_code(ErrorCode.METHOD_NOT_FOUND)}). The `initialize` "
            "answer's `textDocumentSync` asks editors to send no document traffic at all.",
            "",
            "Where params, or a free-form object field (typed `object` below: `arguments`, "
            "`meta`, `parameters`, `script`, ...), is an object, an empty array `[]` is read as "
            "`{}`: Neovim's `vim.json` encodes an empty Lua table, which is both, as `[]`. Any "
            f"other array is refused ({INVALID_PARAMS}, {_code(ErrorCode.PARAMS_INVALID)}).",
        ]

    def scripted(self) -> list[str]:
        """The ``script`` of ``run/start`` / ``run/resume``: free-form in the schema, read by
        the ``scripted`` provider (``sidecar/runs/scripted.py``)."""
        example = {
            "rounds": [
                {
                    "deltas": ["Reading ", "a.py"],
                    "toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a.py"}}],
                    "usage": {"inputTokens": 100, "outputTokens": 10},
                },
                {"text": "Done."},
            ]
        }
        return [
            "## Scripted runs",
            "",
            "The `scripted` provider plays model answers from a script instead of calling a "
            "model: the offline default for demos and tests. A run uses it when `run/start` or "
            "`run/resume` carries `script`, or when it has no model connection (from its "
            'profile or its input) or one with `provider: "scripted"`. A script is '
            '`{"rounds": [round, ...]}`; each model call plays the next round (a `run/resume` '
            "that carries a `script` plays it from its first round). Every field of a round is "
            "optional:",
            "",
            *_table(
                ("Field", "Type", "Effect"),
                [
                    ["`text`", "string", "One text delta."],
                    ["`deltas`", "string\\[\\]", "Several text deltas, in order (not `text`)."],
                    ["`delayMs`", "integer", "Milliseconds to wait before each delta."],
                    [
                        "`toolCalls`",
                        "{ name: string, arguments?: object, id?: string }\\[\\]",
                        "Tool calls, after the text; `id` defaults to `call_<round>_<n>`.",
                    ],
                    [
                        "`usage`",
                        "{ inputTokens?, outputTokens?, cacheReadTokens?, cacheWriteTokens? }",
                        "Token counts reported for the call (0 when absent).",
                    ],
                    [
                        "`stopReason`",
                        "string",
                        "Why the model stopped; default `tool_use` when the round has tool calls, "
                        "else `end_turn` (e.g. `max_tokens`).",
                    ],
                    [
                        "`error`",
                        "{ code?: string, message?: string, retryable?: boolean }",
                        "The call fails with this error instead (code `model.request_failed` by "
                        "default); nothing else of the round is played.",
                    ],
                ],
            ),
            "",
            'When the rounds run out, the model answers "(end of script)" and stops, so a run '
            "always ends. Example, a tool round then an answer:",
            "",
            "```json",
            json.dumps(example),
            "```",
        ]

    def methods(self) -> list[str]:
        lines = ["## Methods"]
        if not self.model.methods:
            return [*lines, "", "No methods."]
        for family, methods in self.model.families():
            lines += ["", f"### Family {_code(family)}", ""]
            lines += [
                f"Their params and results: [Family {_code(family)}]({_family_page(family)}).",
                "",
            ]
            lines += self.method_table(methods)
        return lines

    def method_table(self, methods: Sequence[Method]) -> list[str]:
        return _table(
            ("Method", "Kind", "Direction", "Params", "Result", "Summary"),
            [self.method_row(m) for m in methods],
        )

    def method_row(self, m: Method) -> list[str]:
        result = self.ref_cell(m.result, "`null`") if m.kind == "request" else "—"
        return [
            _code(m.name),
            m.kind,
            _DIRECTIONS[m.direction],
            self.ref_cell(m.params),
            result,
            _escape_text(first_paragraph(m.summary)),
        ]

    def errors(self) -> list[str]:
        faults = ", ".join(f"{code} {meaning}" for code, meaning in _RPC_CODES)
        error_data = self.link(_ERROR_DEF) if self.model.has_def(_ERROR_DEF) else _code(_ERROR_DEF)
        lines = [
            "## Errors",
            "",
            "Every error answer is a JSON-RPC error object `{code, message, data}` whose `data` "
            f"is an {error_data}, so a client can always switch on `error.data.code`. Protocol "
            f"faults use the JSON-RPC codes ({faults}); every domain error uses {DOMAIN_ERROR} "
            "and says what went wrong in `data.code`.",
        ]
        d = self.model.definition(_ERROR_DEF)
        if d is not None and isinstance(d.type, Obj) and d.type.fields:
            lines += ["", f"`{_ERROR_DEF}` fields:", "", *self.field_table(d.type.fields)]
        lines += ["", "Codes sent in `data.code`, by family:", ""]
        for family, codes in _error_codes():
            lines.append(f"- {family}: " + ", ".join(_code(c) for c in codes))
        return lines

    def field_table(self, fields: Sequence[Field]) -> list[str]:
        return _table(
            ("Field", "Type", "Required", "Description"), [self.field_row(f) for f in fields]
        )

    def field_row(self, f: Field) -> list[str]:
        if f.required:
            required = "yes"
        elif f.has_default and f.default is not None:
            required = f"no (default {_code(_json(f.default))})"
        else:
            required = "no"
        parts = [_escape_text(first_paragraph(f.description))] if f.description else []
        notes = _constraints(f.schema)
        if notes:
            parts.append("(" + ", ".join(notes) + ")")
        if f.deprecated:
            parts.insert(0, "**Deprecated.**")
        return [_code(f.name), self.type(f.type), required, " ".join(parts)]

    def definition(self, d: Definition) -> list[str]:
        lines = [f"### {type_ident(d.name)}", ""]
        desc = description_lines(d.description)
        if desc:
            lines += [*_escape_text("\n".join(desc)).split("\n"), ""]
        t = d.type
        if isinstance(t, Obj) and t.fields:
            lines += self.field_table(t.fields)
            if t.extra is not None:
                lines += ["", f"Other properties are allowed ({self.type(t.extra)})."]
        elif isinstance(t, Obj) and t.extra is None:
            lines.append("An object with no fields: `{}`.")
        elif d.discriminator is not None and d.variants:
            lines += [f"One of, selected by {_code(d.discriminator)}:", ""]
            lines += _table(
                (_code(d.discriminator), "Type"),
                [[_code(_json(value)), self.type(member)] for value, member in d.variants],
            )
        elif isinstance(t, Union) and all(isinstance(m, Ref | Obj) for m in t.members):
            lines += ["One of:", ""]
            lines += [f"- {self.type(m)}" for m in t.members]
        else:
            lines.append(f"Type: {self.type(t)}")
        return lines

    def types(self, none: str) -> list[str]:
        """The sections of the types this page holds (``none`` when it holds none)."""
        lines = ["## Types"]
        mine = [d for d in self.model.definitions if self.owner.get(d.name) == self.page]
        for d in mine:
            lines += ["", *self.definition(d)]
        return lines if mine else [*lines, "", none]

    # -- pages --------------------------------------------------------------------------------

    def index(self) -> str:
        return _join(
            self.header("context-sidecar protocol"),
            self.facts(),
            self.transport(),
            self.methods(),
            self.errors(),
            self.scripted(),
        )

    def family(self, family: str, methods: Sequence[Method]) -> str:
        return _join(
            self.header(f"Family {_code(family)}"),
            [
                f"The {_code(family)} methods of the [context-sidecar protocol]({INDEX_PAGE}), "
                "and the types only they use; the types other families use too are under "
                f"[Shared types]({SHARED_PAGE}).",
            ],
            ["## Methods", "", *self.method_table(methods)],
            self.types(f"These methods use only [shared types]({SHARED_PAGE})."),
        )

    def shared(self) -> str:
        return _join(
            self.header("Shared types"),
            [
                f"The types of the [context-sidecar protocol]({INDEX_PAGE}) that the methods of "
                "several families use, and those no method's params or result reaches (such "
                "as the error data and the server's capabilities).",
            ],
            self.types("No type is shared."),
        )


def _join(*sections: list[str]) -> str:
    """Sections separated by a blank line, one newline at the end."""
    lines: list[str] = []
    for section in sections:
        if lines:
            lines.append("")
        lines += section
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def _error_codes() -> list[tuple[str, list[str]]]:
    """The dotted codes of :class:`protocol.errors.ErrorCode`, grouped by their prefix."""
    out: dict[str, list[str]] = {}
    for attr, value in vars(ErrorCode).items():
        if not attr.startswith("_") and isinstance(value, str):
            out.setdefault(value.split(".", 1)[0], []).append(value)
    return list(out.items())
