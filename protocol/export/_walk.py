"""Schema walking shared by the code generators.

Owns the translation of the JSON Schema bundle built by :mod:`protocol.export._schema` into a
small, language-neutral type model (:data:`TypeExpr`, :class:`Definition`, :class:`Method`).
The TypeScript, Lua and Markdown renderers only walk this model; every JSON Schema subtlety
(``anyOf`` / ``oneOf`` / ``allOf``, ``type`` arrays, ``const`` / ``enum``, ``$ref``, free and
typed maps, tuples) is resolved here, once.

Everything is deterministic: definitions come out sorted by name, properties, union members
and methods keep their schema order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = [
    "GENERATOR_COMMAND",
    "METHOD_GROUPS",
    "Arr",
    "Definition",
    "Field",
    "Inter",
    "Lit",
    "Method",
    "MethodGroup",
    "Obj",
    "Prim",
    "Ref",
    "SchemaModel",
    "Tup",
    "TypeExpr",
    "Union",
    "description_lines",
    "first_paragraph",
    "is_identifier",
    "make_union",
    "type_ident",
    "without_null",
]

#: The command that regenerates every artefact; quoted in each generated header.
GENERATOR_COMMAND = "python -m protocol.export"

PrimName = Literal["string", "number", "integer", "boolean", "null", "unknown", "never"]
LitValue: TypeAlias = str | int | float | bool

_DEF_PREFIXES = ("#/$defs/", "#/definitions/")
_OBJECT_KEYS = ("properties", "additionalProperties", "patternProperties", "required")
_ARRAY_KEYS = ("items", "prefixItems")


# ---------------------------------------------------------------------------------------------
# Type model
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Prim:
    """A primitive: ``unknown`` is JSON Schema's ``{}`` (anything), ``never`` is ``false``."""

    name: PrimName
    format: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Lit:
    """A literal value (from ``const`` or ``enum``); ``null`` is :class:`Prim` ``null``.

    ``kind`` (the value's Python type name) keeps ``1``, ``1.0`` and ``True`` apart, which
    Python's ``==`` would not.
    """

    value: LitValue
    kind: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", type(self.value).__name__)


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference to the definition named ``name`` (present in the bundle's ``$defs``)."""

    name: str


@dataclass(frozen=True, slots=True)
class Arr:
    """A homogeneous array."""

    item: TypeExpr


@dataclass(frozen=True, slots=True)
class Tup:
    """A positional array (``prefixItems``); ``rest`` types any items past the prefix."""

    items: tuple[TypeExpr, ...]
    rest: TypeExpr | None


@dataclass(frozen=True, slots=True)
class Field:
    """One property of an object."""

    name: str
    type: TypeExpr
    required: bool
    description: str | None = field(default=None, compare=False)
    has_default: bool = field(default=False, compare=False)
    default: Any = field(default=None, compare=False)
    deprecated: bool = field(default=False, compare=False)
    #: The raw property schema (for constraint notes in the reference).
    schema: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class Obj:
    """An object.  ``extra`` types properties beyond ``fields``; ``None`` means closed.

    ``Obj((), Prim("unknown"))`` is a free JSON object, ``Obj((), T)`` a string-keyed map.
    """

    fields: tuple[Field, ...]
    extra: TypeExpr | None

    @property
    def is_map(self) -> bool:
        return not self.fields and self.extra is not None


@dataclass(frozen=True, slots=True)
class Union:
    """Any one of ``members`` (flattened, deduplicated, ``null`` last; see :func:`make_union`)."""

    members: tuple[TypeExpr, ...]


@dataclass(frozen=True, slots=True)
class Inter:
    """All of ``members`` at once (an ``allOf`` that could not be merged into one object)."""

    members: tuple[TypeExpr, ...]


TypeExpr: TypeAlias = Prim | Lit | Ref | Arr | Tup | Obj | Union | Inter

UNKNOWN = Prim("unknown")
NEVER = Prim("never")
NULL = Prim("null")


def make_union(members: Iterable[TypeExpr]) -> TypeExpr:
    """Flatten nested unions, drop duplicates and ``never``, put ``null`` last."""
    flat: list[TypeExpr] = []
    for member in members:
        for item in member.members if isinstance(member, Union) else (member,):
            if item == UNKNOWN:
                return UNKNOWN
            if item != NEVER and item not in flat:
                flat.append(item)
    if NULL in flat:
        flat.remove(NULL)
        flat.append(NULL)
    if not flat:
        return NEVER
    return flat[0] if len(flat) == 1 else Union(tuple(flat))


def without_null(t: TypeExpr) -> TypeExpr:
    """``t`` minus its ``null`` member (``t`` itself when it is not a union with null)."""
    if isinstance(t, Union):
        return make_union(m for m in t.members if m != NULL)
    return t


# ---------------------------------------------------------------------------------------------
# Definitions and methods
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Definition:
    """One entry of ``$defs``.

    ``discriminator`` is the tag property of a discriminated union; ``variants`` pairs each of
    its tag values with the member it selects, in member order.
    """

    name: str
    type: TypeExpr
    description: str | None
    discriminator: str | None = None
    variants: tuple[tuple[LitValue, TypeExpr], ...] = ()

    @property
    def is_object(self) -> bool:
        """Rendered as an interface / class: an object with named properties."""
        return isinstance(self.type, Obj) and bool(self.type.fields)


@dataclass(frozen=True, slots=True)
class Method:
    name: str
    kind: Literal["request", "notification"]
    direction: Literal["clientToServer", "serverToClient"]
    params: str | None
    result: str | None
    summary: str

    @property
    def family(self) -> str:
        return self.name.split("/", 1)[0]


@dataclass(frozen=True, slots=True)
class MethodGroup:
    """One of the four typed method tables."""

    table: str  # e.g. "ClientRequests"
    alias: str  # e.g. "ClientRequestMethod": the union of its method names
    direction: Literal["clientToServer", "serverToClient"]
    kind: Literal["request", "notification"]


METHOD_GROUPS: tuple[MethodGroup, ...] = (
    MethodGroup("ClientRequests", "ClientRequestMethod", "clientToServer", "request"),
    MethodGroup(
        "ClientNotifications", "ClientNotificationMethod", "clientToServer", "notification"
    ),
    MethodGroup("ServerRequests", "ServerRequestMethod", "serverToClient", "request"),
    MethodGroup(
        "ServerNotifications", "ServerNotificationMethod", "serverToClient", "notification"
    ),
)


# ---------------------------------------------------------------------------------------------
# Description helpers
# ---------------------------------------------------------------------------------------------


def description_lines(text: str | None) -> list[str]:
    """The description's lines, right-stripped, without leading and trailing blank lines."""
    if not text:
        return []
    return [line.rstrip() for line in text.strip().splitlines()]


def first_paragraph(text: str | None) -> str:
    """The description up to its first blank line, joined into one line."""
    para: list[str] = []
    for line in description_lines(text):
        if not line.strip():
            break
        para.append(line.strip())
    return " ".join(para)


# ---------------------------------------------------------------------------------------------
# The walker
# ---------------------------------------------------------------------------------------------


def _def_name(ref: str) -> str | None:
    for prefix in _DEF_PREFIXES:
        if ref.startswith(prefix):
            return ref[len(prefix) :].replace("~1", "/").replace("~0", "~")
    return None


class SchemaModel:
    """The bundle, read once: definitions, methods, version.  Construct, then query."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        raw_defs = schema.get("$defs", schema.get("definitions", {}))
        self._raw: dict[str, Any] = dict(raw_defs) if isinstance(raw_defs, Mapping) else {}
        self._merging: set[str] = set()
        self._types: dict[str, TypeExpr] = {}
        version = schema.get("x-protocolVersion")
        self.protocol_version: int | None = version if isinstance(version, int) else None
        self.definitions: tuple[Definition, ...] = tuple(
            self._definition(name) for name in sorted(self._raw)
        )
        self.methods: tuple[Method, ...] = tuple(
            _method(item) for item in schema.get("x-methods", []) or []
        )

    # -- queries ------------------------------------------------------------------------------

    def definition(self, name: str) -> Definition | None:
        for d in self.definitions:
            if d.name == name:
                return d
        return None

    def has_def(self, name: str | None) -> bool:
        return name is not None and name in self._raw

    def group(self, group: MethodGroup) -> list[Method]:
        return [m for m in self.methods if (m.direction, m.kind) == (group.direction, group.kind)]

    def families(self) -> list[tuple[str, list[Method]]]:
        """Methods grouped by family (the name before ``/``), families in first-seen order."""
        out: dict[str, list[Method]] = {}
        for m in self.methods:
            out.setdefault(m.family, []).append(m)
        return list(out.items())

    def resolve(self, t: TypeExpr) -> TypeExpr:
        """Follow references (cycle-safe) to the first non-reference type."""
        seen: set[str] = set()
        while isinstance(t, Ref) and t.name not in seen:
            seen.add(t.name)
            t = self.type_of_def(t.name)
        return t

    def type_of_def(self, name: str) -> TypeExpr:
        if name not in self._types:
            if name in self._merging:  # a def that is its own allOf member: leave it named
                return Ref(name)
            self._merging.add(name)
            try:
                self._types[name] = self.type_of(self._raw.get(name, {}))
            finally:
                self._merging.discard(name)
        return self._types[name]

    # -- schema -> type -----------------------------------------------------------------------

    def type_of(self, node: Any) -> TypeExpr:
        """The type a schema node describes."""
        if node is True:
            return UNKNOWN
        if node is False:
            return NEVER
        if not isinstance(node, Mapping):
            return UNKNOWN
        parts: list[TypeExpr] = []
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = _def_name(ref)
            parts.append(Ref(name) if name is not None and name in self._raw else UNKNOWN)
        literal = self._literal_part(node)
        if literal is not None:
            parts.append(literal)
        else:
            structural = self._structural_part(node)
            if structural is not None:
                parts.append(structural)
        for key in ("anyOf", "oneOf"):
            options = node.get(key)
            if isinstance(options, list) and options:
                parts.append(make_union(self.type_of(o) for o in options))
        all_of = node.get("allOf")
        if isinstance(all_of, list):
            parts.extend(self.type_of(o) for o in all_of)
        return self._intersect(parts)

    def _literal_part(self, node: Mapping[str, Any]) -> TypeExpr | None:
        if "const" in node:
            return _literal(node["const"])
        enum = node.get("enum")
        if isinstance(enum, list):
            return make_union(_literal(v) for v in enum)
        return None

    def _structural_part(self, node: Mapping[str, Any]) -> TypeExpr | None:
        declared = node.get("type")
        if isinstance(declared, list):
            return make_union(self._of_type(node, t) for t in declared if isinstance(t, str))
        if isinstance(declared, str):
            return self._of_type(node, declared)
        if any(k in node for k in _OBJECT_KEYS):
            return self._object(node)
        if any(k in node for k in _ARRAY_KEYS):
            return self._array(node)
        return None

    def _of_type(self, node: Mapping[str, Any], declared: str) -> TypeExpr:
        if declared == "object":
            return self._object(node)
        if declared == "array":
            return self._array(node)
        if declared == "string":
            fmt = node.get("format")
            return Prim("string", fmt if isinstance(fmt, str) else None)
        if declared == "integer":
            return Prim("integer")
        if declared == "number":
            return Prim("number")
        if declared == "boolean":
            return Prim("boolean")
        if declared == "null":
            return NULL
        return UNKNOWN

    def _array(self, node: Mapping[str, Any]) -> TypeExpr:
        prefix = node.get("prefixItems")
        items = node.get("items")
        if isinstance(prefix, list):
            rest = None if items is False else self.type_of(items if items is not None else True)
            return Tup(tuple(self.type_of(p) for p in prefix), rest)
        if isinstance(items, list):  # draft-07 tuple form
            extra = node.get("additionalItems")
            rest = None if extra is False else self.type_of(extra if extra is not None else True)
            return Tup(tuple(self.type_of(p) for p in items), rest)
        return Arr(self.type_of(items if items is not None else True))

    def _object(self, node: Mapping[str, Any]) -> TypeExpr:
        props = node.get("properties")
        required = node.get("required")
        required_names = set(required) if isinstance(required, list) else set()
        fields: list[Field] = []
        if isinstance(props, Mapping):
            for name, prop in props.items():
                prop_map: Mapping[str, Any] = prop if isinstance(prop, Mapping) else {}
                desc = prop_map.get("description")
                fields.append(
                    Field(
                        name=str(name),
                        type=self.type_of(prop),
                        required=name in required_names,
                        description=desc if isinstance(desc, str) else None,
                        has_default="default" in prop_map,
                        default=prop_map.get("default"),
                        deprecated=prop_map.get("deprecated") is True,
                        schema=prop_map,
                    )
                )
        additional = node.get("additionalProperties")
        pattern = node.get("patternProperties")
        extra: TypeExpr | None
        if additional is False:
            extra = None
        elif isinstance(additional, Mapping):
            extra = self.type_of(additional)
        elif additional is True:
            extra = UNKNOWN
        elif isinstance(pattern, Mapping) and pattern:
            extra = make_union(self.type_of(v) for v in pattern.values())
        elif isinstance(props, Mapping):
            # A model that does not forbid extras ignores them: type it closed so typos fail.
            extra = None
        else:
            extra = UNKNOWN
        return Obj(tuple(fields), extra)

    # -- allOf --------------------------------------------------------------------------------

    def _intersect(self, parts: list[TypeExpr]) -> TypeExpr:
        kept: list[TypeExpr] = []
        for part in parts:
            if part == NEVER:
                return NEVER
            if part != UNKNOWN and part not in kept:
                kept.append(part)
        if not kept:
            return UNKNOWN
        if len(kept) == 1:
            return kept[0]
        objects: list[Obj] = []
        for part in kept:
            resolved = self.resolve(part) if isinstance(part, Ref) else part
            if not isinstance(resolved, Obj):
                return Inter(tuple(kept))
            objects.append(resolved)
        return _merge_objects(objects)

    # -- definitions --------------------------------------------------------------------------

    def _definition(self, name: str) -> Definition:
        raw = self._raw[name]
        raw_map: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        desc = raw_map.get("description")
        t = self.type_of_def(name)
        disc = raw_map.get("discriminator")
        prop = disc.get("propertyName") if isinstance(disc, Mapping) else None
        if isinstance(prop, str) and isinstance(t, Union):
            mapping = disc.get("mapping") if isinstance(disc, Mapping) else None
            variants = self._variants(t, prop, mapping if isinstance(mapping, Mapping) else {})
            return Definition(name, t, desc if isinstance(desc, str) else None, prop, variants)
        return Definition(name, t, desc if isinstance(desc, str) else None)

    def _variants(
        self, union: Union, prop: str, mapping: Mapping[str, Any]
    ) -> tuple[tuple[LitValue, TypeExpr], ...]:
        by_target: dict[str, list[str]] = {}
        for value, target in mapping.items():
            ref_name = _def_name(target) if isinstance(target, str) else None
            if ref_name is not None:
                by_target.setdefault(ref_name, []).append(str(value))
        out: list[tuple[LitValue, TypeExpr]] = []
        for member in union.members:
            values: list[LitValue] = []
            if isinstance(member, Ref) and member.name in by_target:
                values.extend(by_target[member.name])
            else:
                values.extend(self._tag_values(member, prop))
            out.extend((v, member) for v in values if (v, member) not in out)
        return tuple(out)

    def _tag_values(self, member: TypeExpr, prop: str) -> list[LitValue]:
        obj = self.resolve(member)
        if not isinstance(obj, Obj):
            return []
        for f in obj.fields:
            if f.name == prop:
                tag = self.resolve(f.type)
                members = tag.members if isinstance(tag, Union) else (tag,)
                return [m.value for m in members if isinstance(m, Lit)]
        return []


def _literal(value: Any) -> TypeExpr:
    """The type of a JSON value used as ``const`` / ``enum`` member."""
    if value is None:
        return NULL
    if isinstance(value, bool | int | float | str):
        return Lit(value)
    if isinstance(value, Mapping):
        fields = tuple(Field(str(k), _literal(v), True) for k, v in value.items())
        return Obj(fields, None)
    if isinstance(value, Sequence):
        return Tup(tuple(_literal(v) for v in value), None)
    return UNKNOWN


def _merge_objects(objects: Sequence[Obj]) -> Obj:
    order: list[str] = []
    merged: dict[str, Field] = {}
    for obj in objects:
        for f in obj.fields:
            prev = merged.get(f.name)
            if prev is None:
                order.append(f.name)
                merged[f.name] = f
                continue
            both = [prev.type, f.type]
            t = prev.type if prev.type == f.type else Inter(tuple(both))
            merged[f.name] = Field(
                name=f.name,
                type=t,
                required=prev.required or f.required,
                description=prev.description or f.description,
                has_default=prev.has_default or f.has_default,
                default=prev.default if prev.has_default else f.default,
                deprecated=prev.deprecated or f.deprecated,
                schema=prev.schema or f.schema,
            )
    extras = [o.extra for o in objects]
    extra = None if any(e is None for e in extras) else make_union(e for e in extras if e)
    return Obj(tuple(merged[n] for n in order), extra)


_DIRECTIONS = ("clientToServer", "serverToClient")
_KINDS = ("request", "notification")


def _method(item: Any) -> Method:
    if not isinstance(item, Mapping):
        raise ValueError(f"x-methods entry is not an object: {item!r}")
    name, kind, direction = item.get("name"), item.get("kind"), item.get("direction")
    if not isinstance(name, str) or not name:
        raise ValueError(f"x-methods entry without a name: {item!r}")
    if kind not in _KINDS:
        raise ValueError(f"method {name!r}: unknown kind {kind!r}")
    if direction not in _DIRECTIONS:
        raise ValueError(f"method {name!r}: unknown direction {direction!r}")
    params, result, summary = item.get("params"), item.get("result"), item.get("summary")
    return Method(
        name=name,
        kind=kind,
        direction=direction,
        params=params if isinstance(params, str) else None,
        result=result if isinstance(result, str) else None,
        summary=summary if isinstance(summary, str) else "",
    )


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NOT_IDENT_CHAR = re.compile(r"[^A-Za-z0-9_]")


def is_identifier(name: str) -> bool:
    """A plain ASCII identifier (valid unquoted in TypeScript and Lua)."""
    return bool(_IDENT.match(name))


def type_ident(name: str) -> str:
    """A definition name made a plain identifier (pydantic's names already are)."""
    ident = _NOT_IDENT_CHAR.sub("_", name) or "_"
    return f"_{ident}" if ident[0].isdigit() else ident
