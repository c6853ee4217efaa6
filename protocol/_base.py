"""The base every wire model derives from: camelCase on the wire, frozen, strict, closed.

Wire models are validated at the edge with ``by_alias=True, by_name=False`` (see
:func:`parse_wire`), so a client must speak camelCase; Python code may still construct them
with snake_case field names.  ``strict=True`` means no silent coercion (``"1"`` is not an int,
``1`` is not a bool).  Times are ISO-8601 strings on the wire, never native datetimes, so the
same model validates identically from JSON and from Python.
"""

from __future__ import annotations

import ast
import inspect
import sys
from functools import cache
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = [
    "JsonObject",
    "TextKeyedJsonObject",
    "NonEmptyStr",
    "NonEmptyPath",
    "PathStr",
    "SeqNumber",
    "Timestamp",
    "WireModel",
    "dump_wire",
    "parse_wire",
    "with_attribute_docstrings",
]

M = TypeVar("M", bound="WireModel")


def _empty_array_as_object(value: object) -> object:
    """``[]`` read as ``{}``: Neovim's ``vim.json`` encodes an empty Lua table, which is
    both, as an array.  Only the empty one: any other array is still not an object."""
    return {} if isinstance(value, list) and not value else value


#: A JSON object with arbitrary values (metadata, tool arguments, variables); ``[]`` is
#: accepted for ``{}`` (see :func:`_empty_array_as_object`).
JsonObject = Annotated[dict[str, Any], BeforeValidator(_empty_array_as_object)]


def _text_keys(value: Any) -> Any:
    """Every key, at any depth, is text: a lone surrogate (``"\\ud800"`` decodes to one) cannot
    be written to the store or sent back as UTF-8, so it is refused here, not half-stored."""
    if isinstance(value, dict):
        for key, item in value.items():
            try:
                key.encode()
            except UnicodeEncodeError:
                raise ValueError(f"key {key!r} is not text (it holds a lone surrogate)") from None
            _text_keys(item)
    elif isinstance(value, list):
        for item in value:
            _text_keys(item)
    return value


#: A :data:`JsonObject` kept as it is (a session's metadata): its keys must be text.
TextKeyedJsonObject = Annotated[JsonObject, AfterValidator(_text_keys)]
#: A per-session sequence number; the first entry of a session is 1, 0 means "before the first".
SeqNumber = Annotated[int, Field(ge=0)]
#: ISO-8601 UTC timestamp with millisecond precision, e.g. ``2026-11-30T12:00:00.000Z``.
Timestamp = Annotated[str, Field(min_length=1, max_length=40)]
NonEmptyStr = Annotated[str, Field(min_length=1)]
#: A filesystem path or path-like locator.  No file name contains a NUL byte, and the OS
#: refuses one, so it is rejected here, at the edge, instead of failing deep in a handler.
PathStr = Annotated[str, Field(pattern=r"^[^\x00]*$")]
NonEmptyPath = Annotated[str, Field(min_length=1, pattern=r"^[^\x00]*$")]


class WireModel(BaseModel):
    """Base of every params / result / event model."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=True,
        serialize_by_alias=True,
        frozen=True,
        extra="forbid",
        strict=True,
        # Attribute docstrings become field descriptions only when the schema is exported
        # (:func:`with_attribute_docstrings`): reading every class's source at class creation
        # was half the cost of importing the wire models, on every start-up.
        use_attribute_docstrings=False,
        # Build validators on first use, not at import: start-up is on every editor launch.
        defer_build=True,
    )


def parse_wire(model: type[M], raw: object) -> M:
    """Validate raw JSON (already decoded) against ``model``, accepting camelCase names only.
    Absent params (``None``) and ``[]`` stand for ``{}``, as in a :data:`JsonObject`."""
    raw = {} if raw is None else _empty_array_as_object(raw)
    return model.model_validate(raw, by_alias=True, by_name=False)


def dump_wire(model: BaseModel) -> dict[str, Any]:
    """The JSON form of a model as it goes on the wire (camelCase, ``None`` fields omitted)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def with_attribute_docstrings() -> list[type[WireModel]]:
    """Give every wire model's fields the description their attribute docstring holds (what
    the JSON Schema and the generated clients show), as pydantic's ``use_attribute_docstrings``
    would at class creation: the docstring right under a field, unless the field has an
    explicit ``description``.  Returns the models, rebuilt (a validator built before kept the
    old field descriptions)."""
    models = _all_subclasses(WireModel)
    for model in models:
        for name, info in model.model_fields.items():
            if info.description is not None:
                continue
            owner = next(k for k in model.__mro__ if name in vars(k).get("__annotations__", {}))
            doc = _attribute_docstrings(owner.__module__).get(owner.__qualname__, {}).get(name)
            if doc is not None:
                info.description = doc
    for _ in range(2):  # the second pass rebuilds on referenced models already rebuilt
        for model in models:
            model.model_rebuild(force=True)
    return models


def _all_subclasses(cls: type[WireModel]) -> list[type[WireModel]]:
    out: dict[type[WireModel], None] = {}
    todo = [cls]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in out:
                out[sub] = None
                todo.append(sub)
    return list(out)


@cache
def _attribute_docstrings(module: str) -> dict[str, dict[str, str]]:
    """``{class qualname: {field: docstring}}`` for the classes of a module, read from its
    source once (a string statement right after an annotated assignment)."""
    try:
        tree = ast.parse(inspect.getsource(sys.modules[module]))
    except (KeyError, OSError, TypeError):
        return {}
    out: dict[str, dict[str, str]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if not isinstance(node, ast.ClassDef):
                continue
            qualname = f"{prefix}{node.name}"
            docs: dict[str, str] = {}
            for before, after in zip(node.body, node.body[1:], strict=False):
                if (
                    isinstance(before, ast.AnnAssign)
                    and isinstance(before.target, ast.Name)
                    and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)
                ):
                    docs[before.target.id] = inspect.cleandoc(after.value.value)
            out[qualname] = docs
            visit(node.body, f"{qualname}.")

    visit(tree.body, "")
    return out
