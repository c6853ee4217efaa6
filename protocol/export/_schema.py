"""Build the JSON Schema bundle of the whole protocol from the pydantic models."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import models_json_schema

from protocol._base import with_attribute_docstrings
from protocol.entries import ContentPart, Entry, EntryInput
from protocol.errors import ErrorData
from protocol.methods import ALL_METHODS, MethodSpec
from protocol.runs import KeepEverythingCall
from protocol.server import PROTOCOL_VERSION, ServerCapabilities
from protocol.tools import BuiltinCallRequested, PlanUpdated, ToolApproval, ToolResultStored

__all__ = ["REF_TEMPLATE", "build_schema", "method_table"]

REF_TEMPLATE = "#/$defs/{model}"
SCHEMA_ID = "https://context-sidecar.dev/schema/context-sidecar.schema.json"

#: Unions that are type aliases in Python; named in the bundle so clients get one type each.
NAMED_UNIONS: dict[str, Any] = {
    "ContentPart": ContentPart,
    "EntryInput": EntryInput,
    "Entry": Entry,
}
#: Models that belong to the contract without being a method's params or result.
EXTRA_MODELS: tuple[type[BaseModel], ...] = (
    ErrorData,
    ServerCapabilities,
    BuiltinCallRequested,
    KeepEverythingCall,
    PlanUpdated,
    ToolApproval,
    ToolResultStored,
)


def _models(methods: tuple[MethodSpec[Any, Any], ...]) -> list[type[BaseModel]]:
    seen: dict[str, type[BaseModel]] = {}
    for spec in methods:
        for model in (spec.params, spec.result):
            if model is not None:
                seen.setdefault(model.__name__, model)
    for model in EXTRA_MODELS:
        seen.setdefault(model.__name__, model)
    return [seen[name] for name in sorted(seen)]


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _name_unions(node: Any, unions: dict[str, str]) -> Any:
    """Replace every inline copy of a named union with a ``$ref`` to its definition."""
    if isinstance(node, dict):
        key = _canon(node)
        if key in unions:
            return {"$ref": REF_TEMPLATE.format(model=unions[key])}
        return {k: _name_unions(v, unions) for k, v in node.items()}
    if isinstance(node, list):
        return [_name_unions(v, unions) for v in node]
    return node


def _drop_property_titles(schema: dict[str, Any]) -> dict[str, Any]:
    """pydantic titles every property after its name ("Sessionid"): noise in generated code."""
    props = schema.get("properties")
    if isinstance(props, dict):
        schema = dict(schema)
        schema["properties"] = {
            name: {k: v for k, v in prop.items() if k != "title"} for name, prop in props.items()
        }
    return schema


def method_table(methods: tuple[MethodSpec[Any, Any], ...] = ALL_METHODS) -> list[dict[str, Any]]:
    """The registry as plain JSON, in declaration order."""
    return [
        {
            "name": m.name,
            "kind": m.kind,
            "direction": m.direction,
            "params": m.params.__name__,
            "result": m.result.__name__ if m.result is not None else None,
            "summary": m.summary,
        }
        for m in methods
    ]


def build_schema(methods: tuple[MethodSpec[Any, Any], ...] = ALL_METHODS) -> dict[str, Any]:
    """One JSON Schema document: every model under ``$defs``, the method table under
    ``x-methods``.  Deterministic: same models, same bytes."""
    with_attribute_docstrings()
    _, bundle = models_json_schema(
        [(m, "validation") for m in _models(methods)], ref_template=REF_TEMPLATE
    )
    defs: dict[str, Any] = dict(bundle.get("$defs", {}))
    unions: dict[str, str] = {}
    for name, alias in NAMED_UNIONS.items():
        union_schema = TypeAdapter(alias).json_schema(ref_template=REF_TEMPLATE)
        union_schema.pop("$defs", None)
        unions[_canon(union_schema)] = name
        defs[name] = union_schema
    named = {
        name: (
            schema if name in NAMED_UNIONS else _name_unions(_drop_property_titles(schema), unions)
        )
        for name, schema in defs.items()
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "context-sidecar protocol",
        "x-protocolVersion": PROTOCOL_VERSION,
        "x-methods": method_table(methods),
        "$defs": {name: named[name] for name in sorted(named)},
    }
