"""TypeScript generation: the protocol's types and typed method table as one ``.ts`` module.

Owns :func:`render_typescript`, a pure function of the schema bundle.  The module it writes
has no imports and compiles under ``tsc --strict``: an ``interface`` per object model, a
``type`` per union / alias (plus ``<Name>Kind`` for discriminated unions), the four method
tables (``ClientRequests`` ...), their method-name unions and a ``METHODS`` constant.
"""

from __future__ import annotations

import json
import re
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
    type_ident,
)

__all__ = ["render_typescript"]

_MAX_LINE = 100
_INDENT = "  "
# Binding strength of the context a type is rendered in.
_TOP, _UNION, _INTER, _POSTFIX = 0, 1, 2, 3

_PRIMS = {
    "string": "string",
    "number": "number",
    "integer": "number",
    "boolean": "boolean",
    "null": "null",
    "unknown": "unknown",
    "never": "never",
}
#: Names a type may not take (TypeScript's predefined types and reserved words).
_RESERVED = frozenset(
    {
        "any",
        "bigint",
        "boolean",
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "debugger",
        "default",
        "delete",
        "do",
        "else",
        "enum",
        "export",
        "extends",
        "false",
        "finally",
        "for",
        "function",
        "if",
        "import",
        "in",
        "instanceof",
        "never",
        "new",
        "null",
        "number",
        "object",
        "return",
        "string",
        "super",
        "switch",
        "symbol",
        "this",
        "throw",
        "true",
        "try",
        "typeof",
        "undefined",
        "unknown",
        "var",
        "void",
        "while",
        "with",
    }
)
_PROPERTY_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_FIXED_NAMES = ("PROTOCOL_VERSION", "SCHEMA_HASH", "METHODS", "MethodName")


def render_typescript(schema: dict[str, Any], schema_hash: str) -> str:
    """The whole ``.ts`` module for ``schema``; same input, same bytes."""
    return _TsModule(SchemaModel(schema), schema_hash).render()


def _str(value: str) -> str:
    return json.dumps(value)


def _ts_ident(name: str) -> str:
    ident = type_ident(name)
    return f"{ident}_" if ident in _RESERVED else ident


def _property_key(name: str) -> str:
    return name if _PROPERTY_IDENT.match(name) else _str(name)


def _jsdoc(text: list[str], indent: str, tags: tuple[str, ...] = ()) -> list[str]:
    """A JSDoc block of description lines then ``tags``.

    ``*/`` is escaped everywhere, and so is a description line's leading ``@`` (it would
    start a tag).
    """
    body = [line.replace("*/", "*\\/") for line in text]
    body = ["\\" + line if line.lstrip().startswith("@") else line for line in body]
    body += [tag.replace("*/", "*\\/") for tag in tags]
    if not body:
        return []
    if len(body) == 1 and len(indent) + len(body[0]) + 7 <= _MAX_LINE:
        return [f"{indent}/** {body[0]} */"]
    return [f"{indent}/**", *(f"{indent} * {line}".rstrip() for line in body), f"{indent} */"]


class _TsModule:
    def __init__(self, model: SchemaModel, schema_hash: str) -> None:
        self.model = model
        self.schema_hash = schema_hash
        self.names: dict[str, str] = {}
        taken: dict[str, str] = {}
        generated = set(_FIXED_NAMES)
        for group in METHOD_GROUPS:
            generated.update((group.table, group.alias))
        for d in model.definitions:
            ident = _ts_ident(d.name)
            if ident in generated:
                raise ValueError(f"definition {d.name!r} collides with generated name {ident!r}")
            if ident in taken:
                raise ValueError(
                    f"definitions {taken[ident]!r} and {d.name!r} both map to {ident!r}"
                )
            taken[ident] = d.name
            self.names[d.name] = ident
        self.reserved = generated | set(taken)

    # -- types --------------------------------------------------------------------------------

    def type(self, t: TypeExpr, ctx: int = _TOP) -> str:
        if isinstance(t, Prim):
            return _PRIMS[t.name]
        if isinstance(t, Lit):
            return json.dumps(t.value)
        if isinstance(t, Ref):
            return self.names.get(t.name, "unknown")
        if isinstance(t, Arr):
            return f"{self.type(t.item, _POSTFIX)}[]"
        if isinstance(t, Tup):
            items = [self.type(i) for i in t.items]
            if t.rest is not None:
                items.append(f"...{self.type(t.rest, _POSTFIX)}[]")
            return f"[{', '.join(items)}]"
        if isinstance(t, Obj):
            return self.inline_object(t)
        if isinstance(t, Union):
            # Distinct schema types can share a TS type (integer | number): list each once.
            members = self.union_members(t)
            if len(members) == 1:
                return self.type(t.members[0], ctx)
            text = " | ".join(members)
            return f"({text})" if ctx > _UNION else text
        text = " & ".join(self.type(m, _INTER) for m in t.members)
        return f"({text})" if ctx > _INTER else text

    def union_members(self, union: Union) -> list[str]:
        return list(dict.fromkeys(self.type(m, _UNION) for m in union.members))

    def inline_object(self, obj: Obj) -> str:
        if not obj.fields:
            if obj.extra is None:
                return "Record<string, never>"
            return f"{{ [key: string]: {self.type(obj.extra)} }}"
        members = [
            f"{_property_key(f.name)}{'' if f.required else '?'}: {self.type(f.type)}"
            for f in obj.fields
        ]
        if obj.extra is not None:
            members.append("[key: string]: unknown")
        return f"{{ {'; '.join(members)} }}"

    # -- definitions --------------------------------------------------------------------------

    def definition(self, d: Definition) -> list[str]:
        name = self.names[d.name]
        doc = _jsdoc(description_lines(d.description), "")
        if d.is_object:
            assert isinstance(d.type, Obj)
            return [*doc, *self.interface(name, d.type)]
        if isinstance(d.type, Union) and len(self.union_members(d.type)) > 1:
            members = self.union_members(d.type)
            one_line = f"export type {name} = {' | '.join(members)};"
            if len(one_line) <= _MAX_LINE:
                lines = [*doc, one_line]
            else:
                lines = [*doc, f"export type {name} =", *(f"{_INDENT}| {m}" for m in members)]
                lines[-1] += ";"
        else:
            lines = [*doc, f"export type {name} = {self.type(d.type)};"]
        if d.discriminator is not None:
            kind = f"{name}Kind"
            if kind not in self.reserved:
                lines += [
                    "",
                    f"/** The values of {name}'s `{d.discriminator}` tag. */",
                    f"export type {kind} = {name}[{_str(d.discriminator)}];",
                ]
        return lines

    def interface(self, name: str, obj: Obj) -> list[str]:
        lines = [f"export interface {name} {{"]
        for f in obj.fields:
            lines += _jsdoc(description_lines(f.description), _INDENT, _field_tags(f))
            optional = "" if f.required else "?"
            lines.append(f"{_INDENT}{_property_key(f.name)}{optional}: {self.type(f.type)};")
        if obj.extra is not None:
            lines.append(f"{_INDENT}[key: string]: unknown;")
        lines.append("}")
        return lines

    # -- methods ------------------------------------------------------------------------------

    def ref_or_unknown(self, name: str | None) -> str:
        return self.names[name] if name is not None and name in self.names else "unknown"

    def method_entry(self, m: Method) -> list[str]:
        params = f"params: {self.ref_or_unknown(m.params)}"
        if m.kind == "request":
            result = self.ref_or_unknown(m.result) if m.result is not None else "null"
            shape = f"{{ {params}; result: {result} }}"
        else:
            shape = f"{{ {params} }}"
        doc = _jsdoc([m.summary] if m.summary else [], _INDENT)
        return [*doc, f"{_INDENT}{_str(m.name)}: {shape};"]

    def method_tables(self) -> list[str]:
        lines: list[str] = []
        for group in METHOD_GROUPS:
            methods = self.model.group(group)
            sender = "client" if group.direction == "clientToServer" else "server"
            noun = "Requests" if group.kind == "request" else "Notifications"
            lines.append(f"/** {noun} the {sender} sends, by method name. */")
            if methods:
                lines.append(f"export interface {group.table} {{")
                for m in methods:
                    lines += self.method_entry(m)
                lines.append("}")
            else:
                lines.append(f"export type {group.table} = Record<never, never>;")
            lines.append("")
        for group in METHOD_GROUPS:
            lines.append(f"export type {group.alias} = keyof {group.table};")
        entries = [
            f"{_INDENT}{{ name: {_str(m.name)}, kind: {_str(m.kind)}, "
            f"direction: {_str(m.direction)} }},"
            for m in self.model.methods
        ]
        lines += ["", "/** Every method, in registry order. */"]
        if entries:
            lines += ["export const METHODS = [", *entries, "] as const;"]
        else:
            lines.append("export const METHODS = [] as const;")
        lines += ["", 'export type MethodName = (typeof METHODS)[number]["name"];']
        return lines

    # -- module -------------------------------------------------------------------------------

    def render(self) -> str:
        version = self.model.protocol_version
        lines = [
            "// context-sidecar protocol: wire types and typed method table.",
            "// Generated from the protocol schema. Do not edit: regenerate with",
            f"// `{GENERATOR_COMMAND}`.",
            "",
            (
                f"export const PROTOCOL_VERSION = {version} as const;"
                if version is not None
                else "export const PROTOCOL_VERSION = null;"
            ),
            f"export const SCHEMA_HASH = {_str(self.schema_hash)} as const;",
        ]
        for d in self.model.definitions:
            lines += ["", *self.definition(d)]
        lines += ["", *self.method_tables()]
        return "\n".join(lines) + "\n"


def _field_tags(f: Field) -> tuple[str, ...]:
    tags: list[str] = []
    if f.has_default and f.default is not None:
        tags.append(f"@default {json.dumps(f.default, sort_keys=True)}")
    if f.deprecated:
        tags.append("@deprecated")
    return tuple(tags)
