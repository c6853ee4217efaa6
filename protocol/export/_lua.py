"""Lua generation: LuaCATS annotations of the protocol for lua-language-server.

Owns :func:`render_lua`, a pure function of the schema bundle.  The file it writes (meant
for ``protocol/lua/context_sidecar/types.lua``) is a ``---@meta`` file: a ``---@class`` per
object model, a ``---@alias`` per union / alias (plus ``<Name>Kind`` for discriminated
unions), the four method tables as classes keyed by method name, and, so that it can be
``require``d, a runtime table with ``PROTOCOL_VERSION``, ``SCHEMA_HASH`` and ``METHODS``.

JSON ``null`` is typed ``nil``.  LuaCATS has no intersection or tuple types: an intersection
is typed as its first member, a tuple as an array of the union of its item types.
"""

from __future__ import annotations

from typing import Any

from protocol.export._walk import (
    GENERATOR_COMMAND,
    METHOD_GROUPS,
    Arr,
    Definition,
    Field,
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
    is_identifier,
    make_union,
    type_ident,
    without_null,
)

__all__ = ["NAMESPACE", "render_lua"]

#: Prefix of every generated class and alias name.
NAMESPACE = "context_sidecar"

_INDENT = "  "
_TOP, _UNION, _POSTFIX = 0, 1, 2
_PRIMS = {
    "string": "string",
    "number": "number",
    "integer": "integer",
    "boolean": "boolean",
    "null": "nil",
    "unknown": "any",
    "never": "nil",
}
_KEYWORDS = frozenset(
    {
        "and",
        "break",
        "do",
        "else",
        "elseif",
        "end",
        "false",
        "for",
        "function",
        "goto",
        "if",
        "in",
        "local",
        "nil",
        "not",
        "or",
        "repeat",
        "return",
        "then",
        "true",
        "until",
        "while",
    }
)
_FIXED_NAMES = ("MethodName",)


def render_lua(schema: dict[str, Any], schema_hash: str) -> str:
    """The whole ``types.lua`` for ``schema``; same input, same bytes."""
    return _LuaModule(SchemaModel(schema), schema_hash).render()


def lua_string(value: str) -> str:
    """A double-quoted Lua string literal (valid in Lua 5.1+ and LuaJIT)."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\{code:03d}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _key(name: str) -> str:
    """A field name as written in ``---@field`` and table types."""
    return name if is_identifier(name) and name not in _KEYWORDS else f"[{lua_string(name)}]"


def _comment(text: str) -> str:
    """Text safe to put after ``---``: a leading ``@`` or ``|`` would start an annotation."""
    stripped = text.lstrip()
    return "\\" + stripped if stripped.startswith(("@", "|")) else text


class _LuaModule:
    def __init__(self, model: SchemaModel, schema_hash: str) -> None:
        self.model = model
        self.schema_hash = schema_hash
        generated = {*_FIXED_NAMES}
        for group in METHOD_GROUPS:
            generated.update((group.table, group.alias))
        self.names: dict[str, str] = {}
        taken: dict[str, str] = {}
        for d in model.definitions:
            ident = type_ident(d.name)
            if ident in generated:
                raise ValueError(f"definition {d.name!r} collides with generated name {ident!r}")
            if ident in taken:
                raise ValueError(
                    f"definitions {taken[ident]!r} and {d.name!r} both map to {ident!r}"
                )
            taken[ident] = d.name
            self.names[d.name] = ident
        self.reserved = generated | set(taken)

    def qualified(self, ident: str) -> str:
        return f"{NAMESPACE}.{ident}"

    # -- types --------------------------------------------------------------------------------

    def type(self, t: TypeExpr, ctx: int = _TOP) -> str:
        if isinstance(t, Prim):
            return _PRIMS[t.name]
        if isinstance(t, Lit):
            return self.literal(t)
        if isinstance(t, Ref):
            ident = self.names.get(t.name)
            return self.qualified(ident) if ident is not None else "any"
        if isinstance(t, Arr):
            return f"{self.type(t.item, _POSTFIX)}[]"
        if isinstance(t, Tup):
            items = [*t.items, t.rest] if t.rest is not None else list(t.items)
            return f"{self.type(make_union(items), _POSTFIX)}[]"
        if isinstance(t, Obj):
            return self.inline_object(t)
        if isinstance(t, Union):
            members = list(dict.fromkeys(self.type(m, _UNION) for m in t.members))
            if len(members) == 1:
                return self.type(t.members[0], ctx)
            text = "|".join(members)
            return f"({text})" if ctx > _UNION else text
        # Inter: no intersection types in LuaCATS; a value of A & B is at least an A.
        return self.type(t.members[0], ctx)

    def literal(self, lit: Lit) -> str:
        value = lit.value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return "number"  # LuaCATS has integer literal types only
        return lua_string(value)

    def inline_object(self, obj: Obj) -> str:
        if not obj.fields:
            if obj.extra is None:
                return "{}"
            return f"table<string, {self.type(obj.extra)}>"
        members = []
        for f in obj.fields:
            optional = "" if f.required else "?"
            members.append(f"{_key(f.name)}{optional}: {self.field_type(f)}")
        if obj.extra is not None:
            members.append("[string]: any")
        return f"{{ {', '.join(members)} }}"

    def field_type(self, f: Field) -> str:
        """An optional field's ``?`` already admits ``nil``: drop a redundant ``|nil``."""
        t = f.type if f.required else without_null(f.type)
        return self.type(t)

    # -- definitions --------------------------------------------------------------------------

    def doc(self, text: str | None) -> list[str]:
        return [f"--- {_comment(line)}".rstrip() for line in description_lines(text)]

    def definition(self, d: Definition) -> list[str]:
        name = self.qualified(self.names[d.name])
        lines = self.doc(d.description)
        t = d.type
        if isinstance(t, Obj) and not t.is_map:
            lines.append(f"---@class {name}")
            for f in t.fields:
                optional = "" if f.required else "?"
                line = f"---@field {_key(f.name)}{optional} {self.field_type(f)}"
                summary = first_paragraph(f.description)
                lines.append(f"{line} # {summary}" if summary else line)
            if t.extra is not None:
                lines.append(f"---@field [string] {self.type(t.extra)}")
        else:
            lines.append(f"---@alias {name} {self.type(t)}")
        if d.discriminator is not None and d.variants:
            kind = f"{self.names[d.name]}Kind"
            if kind not in self.reserved:
                values = make_union(Lit(v) for v, _ in d.variants)
                lines += [
                    "",
                    f"--- The values of {name}'s `{d.discriminator}` tag.",
                    f"---@alias {self.qualified(kind)} {self.type(values)}",
                ]
        return lines

    # -- methods ------------------------------------------------------------------------------

    def ref_or_any(self, name: str | None) -> str:
        return self.type(Ref(name)) if name is not None else "any"

    def method_field(self, m: Method) -> str:
        params = f"params: {self.ref_or_any(m.params)}"
        if m.kind == "request":
            result = self.ref_or_any(m.result) if m.result is not None else "nil"
            shape = f"{{ {params}, result: {result} }}"
        else:
            shape = f"{{ {params} }}"
        line = f"---@field [{lua_string(m.name)}] {shape}"
        summary = first_paragraph(m.summary)
        return f"{line} # {summary}" if summary else line

    def method_tables(self) -> list[str]:
        lines: list[str] = []
        for group in METHOD_GROUPS:
            methods = self.model.group(group)
            sender = "client" if group.direction == "clientToServer" else "server"
            noun = "Requests" if group.kind == "request" else "Notifications"
            lines += [
                f"--- {noun} the {sender} sends, by method name.",
                f"---@class {self.qualified(group.table)}",
                *(self.method_field(m) for m in methods),
                "",
                self.names_alias(group.alias, [m.name for m in methods]),
                "",
            ]
        lines.append(self.names_alias("MethodName", [m.name for m in self.model.methods]))
        return lines

    def names_alias(self, alias: str, names: list[str]) -> str:
        union = "|".join(lua_string(n) for n in names) if names else "nil"
        return f"---@alias {self.qualified(alias)} {union}"

    def runtime_table(self) -> list[str]:
        version = self.model.protocol_version
        lines = [
            "return {",
            f"{_INDENT}PROTOCOL_VERSION = {version if version is not None else 'nil'},",
            f"{_INDENT}SCHEMA_HASH = {lua_string(self.schema_hash)},",
            f"{_INDENT}METHODS = {{",
        ]
        for m in self.model.methods:
            lines.append(
                f"{_INDENT * 2}{{ name = {lua_string(m.name)}, kind = {lua_string(m.kind)}, "
                f"direction = {lua_string(m.direction)} }},"
            )
        lines += [f"{_INDENT}}},", "}"]
        return lines

    # -- module -------------------------------------------------------------------------------

    def render(self) -> str:
        lines = [
            "---@meta",
            "-- context-sidecar protocol: LuaCATS type annotations (lua-language-server).",
            "-- Generated from the protocol schema. Do not edit: regenerate with",
            f"-- `{GENERATOR_COMMAND}`.",
        ]
        for d in self.model.definitions:
            lines += ["", *self.definition(d)]
        lines += ["", *self.method_tables(), "", *self.runtime_table()]
        return "\n".join(lines) + "\n"
