"""JSON Schema -> the Gemini ``Schema`` object (the OpenAPI 3.0 subset ``parameters`` accepts).

Gemini's ``FunctionDeclaration.parameters`` rejects any key it does not know with a 400
("Unknown name ... Cannot find field"), so conversion works from an allow-list.  Kept, under the
Gemini names: ``type`` (upper-cased: ``STRING``, ``NUMBER``, ``INTEGER``, ``BOOLEAN``,
``ARRAY``, ``OBJECT``, ``NULL``), ``format`` (only the documented ``float``/``double`` for
numbers, ``int32``/``int64`` for integers, ``enum``/``date-time`` for strings), ``description``,
``nullable``, ``enum`` (values as strings), ``properties``, ``required``, ``minProperties``,
``maxProperties``, ``items``, ``minItems``, ``maxItems``, ``minLength``, ``maxLength``,
``pattern``, ``minimum``, ``maximum``, ``anyOf``, ``propertyOrdering``.

Rewritten: local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) is inlined (a recursive
reference becomes a bare ``{"type": "OBJECT"}``); ``allOf`` is merged into its parent;
``oneOf`` becomes ``anyOf``; ``const`` becomes a one-value ``enum``; a ``null`` in ``type``,
``enum`` or ``anyOf`` becomes ``nullable: true``; a ``type`` list keeps its first non-null
type; a schema with ``properties`` but no ``type`` is an ``OBJECT``, with ``items`` an
``ARRAY``, with ``enum`` a ``STRING``.

Dropped: everything else, notably ``$schema``, ``$id``, ``$defs``/``definitions`` (after
inlining), ``additionalProperties``, ``title``, ``default``, ``examples``, ``exclusiveMinimum``,
``exclusiveMaximum``, ``multipleOf``, ``uniqueItems``, ``not``, ``if``/``then``/``else``,
``patternProperties``, ``dependentRequired``, other ``format`` values; also ``properties`` and
``required`` outside ``OBJECT`` ("only allowed for OBJECT type"), ``items`` and item counts
outside ``ARRAY``, an empty ``properties`` ("should be non-empty for OBJECT type") and
``required`` names that are not properties.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["function_parameters", "to_gemini_schema"]

Schema = dict[str, Any]

_TYPES = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
    "null": "NULL",
}
_FORMATS = {
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64"}),
    "STRING": frozenset({"enum", "date-time"}),
}
_OBJECT_COUNTS = ("minProperties", "maxProperties")
_ARRAY_COUNTS = ("minItems", "maxItems")
_STRING_LIMITS = ("minLength", "maxLength")
_NUMBER_LIMITS = ("minimum", "maximum")
_MAX_DEPTH = 64


def function_parameters(parameters: Schema) -> Schema | None:
    """``FunctionDeclaration.parameters`` for a tool's JSON Schema, or ``None`` (omit it) when the
    tool takes no arguments: Gemini rejects an ``OBJECT`` with empty ``properties``."""
    converted = to_gemini_schema(parameters)
    if not converted.get("properties"):
        return None
    converted["type"] = "OBJECT"
    return converted


def to_gemini_schema(schema: object) -> Schema:
    """The Gemini form of a JSON Schema (see the module docstring for what changes)."""
    defs: dict[str, Any] = {}
    if isinstance(schema, dict):
        for key in ("definitions", "$defs"):
            found = schema.get(key)
            if isinstance(found, dict):
                defs.update(found)
    return _Converter(defs).convert(schema, frozenset(), 0)


class _Converter:
    def __init__(self, defs: dict[str, Any]) -> None:
        self._defs = defs

    def convert(self, node: object, expanding: frozenset[str], depth: int) -> Schema:
        if not isinstance(node, dict) or depth > _MAX_DEPTH:
            return {}
        node, expanding = self._resolve(node, expanding)
        if node is None:
            return {"type": "OBJECT"}
        node = self._merge_all_of(node, expanding)

        out: Schema = {}
        nullable = node.get("nullable") is True
        type_name, type_nullable = _type_name(node.get("type"))
        nullable = nullable or type_nullable

        enum = node.get("enum")
        if "const" in node:
            enum = [node["const"]]
        enum_values: list[str] | None = None
        if isinstance(enum, list):
            if None in enum:
                nullable = True
            enum_values = [
                v if isinstance(v, str) else json.dumps(v) for v in enum if v is not None
            ]

        any_of: list[Schema] = []
        raw_any_of = node.get("anyOf", node.get("oneOf"))
        if isinstance(raw_any_of, list):
            for sub in raw_any_of:
                if isinstance(sub, dict) and sub.get("type") == "null":
                    nullable = True
                    continue
                any_of.append(self.convert(sub, expanding, depth + 1))

        if type_name is None:
            if isinstance(node.get("properties"), dict):
                type_name = "OBJECT"
            elif "items" in node:
                type_name = "ARRAY"
            elif enum_values is not None:
                type_name = "STRING"

        if type_name is not None:
            out["type"] = type_name
        fmt = node.get("format")
        if type_name in _FORMATS and isinstance(fmt, str) and fmt in _FORMATS[type_name]:
            out["format"] = fmt
        if isinstance(node.get("description"), str):
            out["description"] = node["description"]
        if nullable:
            out["nullable"] = True
        if enum_values:
            out["enum"] = enum_values

        if type_name == "OBJECT":
            self._object_fields(node, out, expanding, depth)
        if type_name == "ARRAY":
            if "items" in node:
                out["items"] = self.convert(node["items"], expanding, depth + 1)
            _copy_numbers(node, out, _ARRAY_COUNTS)
        if type_name in (None, "STRING"):
            _copy_numbers(node, out, _STRING_LIMITS)
            if isinstance(node.get("pattern"), str):
                out["pattern"] = node["pattern"]
        if type_name in (None, "NUMBER", "INTEGER"):
            _copy_numbers(node, out, _NUMBER_LIMITS)

        if len(any_of) == 1 and type_name is None:
            merged = any_of[0]
            for key, value in out.items():
                merged.setdefault(key, value)
            return merged
        if any_of:
            out["anyOf"] = any_of
        return out

    def _object_fields(
        self, node: Schema, out: Schema, expanding: frozenset[str], depth: int
    ) -> None:
        properties = node.get("properties")
        if isinstance(properties, dict) and properties:
            out["properties"] = {
                str(name): self.convert(sub, expanding, depth + 1)
                for name, sub in properties.items()
            }
            required = node.get("required")
            if isinstance(required, list):
                names = [name for name in required if name in out["properties"]]
                if names:
                    out["required"] = names
            ordering = node.get("propertyOrdering")
            if isinstance(ordering, list):
                ordered = [name for name in ordering if name in out["properties"]]
                if ordered:
                    out["propertyOrdering"] = ordered
        _copy_numbers(node, out, _OBJECT_COUNTS)

    def _merge_all_of(self, node: Schema, expanding: frozenset[str]) -> Schema:
        """``allOf`` folded into one schema: later keys win, properties and required add up."""
        parts = node.get("allOf")
        if not isinstance(parts, list):
            return node
        merged: Schema = {}
        properties: dict[str, Any] = {}
        required: list[Any] = []
        for raw in [*parts, {k: v for k, v in node.items() if k != "allOf"}]:
            part = self._resolve(raw, expanding)[0] if isinstance(raw, dict) else None
            if part is None:
                continue
            merged.update(part)
            if isinstance(part.get("properties"), dict):
                properties.update(part["properties"])
            if isinstance(part.get("required"), list):
                required.extend(r for r in part["required"] if r not in required)
        if properties:
            merged["properties"] = properties
        if required:
            merged["required"] = required
        return merged

    def _resolve(
        self, node: Schema, expanding: frozenset[str]
    ) -> tuple[Schema | None, frozenset[str]]:
        """Inline a local ``$ref``; ``None`` for a recursive one.  Keys next to ``$ref`` win."""
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return node, expanding
        name = ref.rsplit("/", 1)[-1] if ref.startswith(("#/$defs/", "#/definitions/")) else None
        target = self._defs.get(name) if name is not None else None
        if name is None or not isinstance(target, dict):
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return rest, expanding
        if name in expanding:
            return None, expanding
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return merged, expanding | {name}


def _type_name(raw: object) -> tuple[str | None, bool]:
    """The Gemini type of a JSON Schema ``type`` (string or list) and whether it allows null."""
    if isinstance(raw, str):
        return _TYPES.get(raw.lower()), False
    if isinstance(raw, list):
        names = [r.lower() for r in raw if isinstance(r, str)]
        concrete = [_TYPES[n] for n in names if n != "null" and n in _TYPES]
        return (concrete[0] if concrete else None), "null" in names
    return None, False


def _copy_numbers(node: Schema, out: Schema, keys: tuple[str, ...]) -> None:
    for key in keys:
        value = node.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = value
