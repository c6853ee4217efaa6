"""Tests of the code generators: TypeScript, Lua (LuaCATS) and the Markdown reference pages.

They run over the real schema bundle and over a tiny hand-written schema that exercises
constructs the real one does not use yet (``allOf``, ``type`` arrays, recursion, tuples...).
Compiling the TypeScript and parsing the Lua need node / lua and are checked by hand, not here.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from protocol.export._lua import render_lua
from protocol.export._markdown import INDEX_PAGE, SHARED_PAGE, anchor, render_pages
from protocol.export._schema import build_schema
from protocol.export._typescript import render_typescript
from protocol.export._walk import Lit, Obj, Prim, Ref, SchemaModel, Union, make_union

Renderer = Callable[[dict[str, Any], str], str]


def render_markdown(schema: dict[str, Any], schema_hash: str) -> str:
    """Every page of the reference, one after the other (each opens with its ``# `` title)."""
    return "\n".join(render_pages(schema, schema_hash).values())


HASH = "0123456789abcdef0123456789abcdef"
RENDERERS: dict[str, Renderer] = {
    "typescript": render_typescript,
    "lua": render_lua,
    "markdown": render_markdown,
}
GROUP_OF = {
    ("clientToServer", "request"): "ClientRequests",
    ("clientToServer", "notification"): "ClientNotifications",
    ("serverToClient", "request"): "ServerRequests",
    ("serverToClient", "notification"): "ServerNotifications",
}
DIRECTION_LABEL = {"clientToServer": "client → server", "serverToClient": "server → client"}

#: Constructs the real schema does not (yet) contain.
TINY: dict[str, Any] = {
    "x-protocolVersion": 7,
    "x-methods": [
        {
            "name": "tree/get",
            "kind": "request",
            "direction": "clientToServer",
            "params": "TreeRef",
            "result": "Tree",
            "summary": "Get a tree.",
        },
        {
            "name": "tree/changed",
            "kind": "notification",
            "direction": "serverToClient",
            "params": "Tree",
            "result": None,
            "summary": "A tree changed.",
        },
    ],
    "$defs": {
        "Base": {
            "type": "object",
            "properties": {"id": {"type": "string", "format": "uuid"}},
            "required": ["id"],
            "additionalProperties": False,
        },
        "Tree": {
            "description": "A node.\n\nSecond paragraph.",
            "allOf": [
                {"$ref": "#/$defs/Base"},
                {
                    "type": "object",
                    "properties": {
                        "label": {"type": ["string", "null"], "description": "Shown."},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}},
                        "shape": {"const": "tree"},
                        "weight": {"type": ["integer", "number"]},
                    },
                    "required": ["children", "shape"],
                },
            ],
        },
        "TreeRef": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "depth": {
                    "anyOf": [
                        {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                        {"type": "null"},
                    ]
                },
            },
            "required": ["id"],
        },
        "Color": {"enum": ["red", "green"], "type": "string"},
        "Pair": {
            "type": "array",
            "prefixItems": [{"type": "string"}, {"type": "integer"}],
            "items": False,
        },
        "Shape": {
            "oneOf": [{"$ref": "#/$defs/Tree"}, {"$ref": "#/$defs/Leaf"}],
            "discriminator": {
                "propertyName": "shape",
                "mapping": {"tree": "#/$defs/Tree", "leaf": "#/$defs/Leaf"},
            },
        },
        "Leaf": {
            "type": "object",
            "properties": {
                "shape": {"const": "leaf"},
                "extra": {},
                "tags": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Color"}},
            },
            "required": ["shape"],
            "additionalProperties": True,
        },
        "Question": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "Ends */ early; @tag | pipe"},
                "weird-key": {"type": "boolean"},
                "end": {"type": "integer"},
                "nums": {"enum": [1, True, None]},
            },
            "required": ["text"],
        },
    },
}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return build_schema()


@pytest.fixture(scope="module")
def outputs(schema: dict[str, Any]) -> dict[str, str]:
    return {lang: render(schema, HASH) for lang, render in RENDERERS.items()}


def _block(text: str, opener: str) -> str:
    """The lines from ``opener`` up to the first line that is only ``}``."""
    start = text.index(opener)
    return text[start : text.index("\n}", start) + 2]


def _lua_block(text: str, opener: str) -> str:
    """The annotation lines from ``opener`` up to the next blank line."""
    start = text.index(opener)
    end = text.find("\n\n", start)
    return text[start : end if end >= 0 else len(text)]


def _md_section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}\n")
    end = text.find("\n### ", start + 1)
    return text[start : end if end >= 0 else len(text)]


# -- determinism ------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", sorted(RENDERERS))
def test_render_is_deterministic(lang: str, schema: dict[str, Any]) -> None:
    render = RENDERERS[lang]
    first = render(schema, HASH)
    assert render(copy.deepcopy(schema), HASH) == first
    shuffled = dict(schema, **{"$defs": dict(reversed(list(schema["$defs"].items())))})
    assert render(shuffled, HASH) == first
    assert first.endswith("\n") and not first.endswith("\n\n")


@pytest.mark.parametrize("lang", sorted(RENDERERS))
def test_render_carries_version_and_hash(lang: str, outputs: dict[str, str]) -> None:
    text = outputs[lang]
    assert HASH in text
    assert "python -m protocol.export" in text
    assert "1" in text


def test_typescript_header_constants(outputs: dict[str, str]) -> None:
    ts = outputs["typescript"]
    assert ts.startswith("// ")
    assert "export const PROTOCOL_VERSION = 1 as const;" in ts
    assert f'export const SCHEMA_HASH = "{HASH}" as const;' in ts
    assert "import " not in ts


def test_lua_is_a_meta_file_returning_the_method_table(
    schema: dict[str, Any], outputs: dict[str, str]
) -> None:
    lua = outputs["lua"]
    assert lua.splitlines()[0] == "---@meta"
    tail = lua[lua.rindex("\nreturn {") :]
    assert "PROTOCOL_VERSION = 1," in tail
    assert f'SCHEMA_HASH = "{HASH}",' in tail
    names = re.findall(r'\{ name = "([^"]+)", kind = "(\w+)", direction = "(\w+)" \}', tail)
    assert names == [(m["name"], m["kind"], m["direction"]) for m in schema["x-methods"]]
    assert tail.rstrip().endswith("}")


# -- every definition -------------------------------------------------------------------------


def test_every_def_appears_in_typescript(schema: dict[str, Any], outputs: dict[str, str]) -> None:
    ts = outputs["typescript"]
    for name in schema["$defs"]:
        assert f"export interface {name} {{" in ts or f"export type {name} =" in ts, name


def test_every_def_appears_in_lua(schema: dict[str, Any], outputs: dict[str, str]) -> None:
    lua = outputs["lua"]
    for name in schema["$defs"]:
        assert (
            f"---@class context_sidecar.{name}\n" in lua
            or f"---@alias context_sidecar.{name} " in lua
        ), name


def test_every_def_appears_in_markdown(schema: dict[str, Any], outputs: dict[str, str]) -> None:
    md = outputs["markdown"]
    for name in schema["$defs"]:
        assert f"\n### {name}\n" in md, name


def test_object_models_are_interfaces_and_classes(
    schema: dict[str, Any], outputs: dict[str, str]
) -> None:
    for name, definition in schema["$defs"].items():
        if definition.get("type") == "object" and definition.get("properties"):
            assert f"export interface {name} {{" in outputs["typescript"]
            assert f"---@class context_sidecar.{name}\n" in outputs["lua"]


# -- fields -----------------------------------------------------------------------------------


def test_required_and_optional_fields_typescript(outputs: dict[str, str]) -> None:
    block = _block(outputs["typescript"], "export interface SessionReadParams {")
    assert "\n  sessionId: string;\n" in block
    assert "\n  limit?: number;\n" in block
    assert "@default 200" in block
    assert "\n  withTokens?: boolean;\n" in block


def test_required_and_optional_fields_lua(outputs: dict[str, str]) -> None:
    block = _lua_block(outputs["lua"], "---@class context_sidecar.SessionReadParams")
    assert "---@field sessionId string\n" in block
    assert "---@field limit? integer\n" in block
    assert "---@field tokenizer? string # Tokenizer id for ``withTokens``" in block


def test_required_and_optional_fields_markdown(outputs: dict[str, str]) -> None:
    section = _md_section(outputs["markdown"], "### SessionReadParams")
    assert "| `sessionId` | string | yes |" in section
    assert "| `limit` | integer | no (default `200`) |" in section
    assert "| Field | Type | Required | Description |" in section


def test_nullable_fields(outputs: dict[str, str]) -> None:
    session = _block(outputs["typescript"], "export interface Session {")
    assert "\n  forkedFrom?: ForkOrigin | null;\n" in session
    assert "\n  meta?: { [key: string]: unknown } | null;\n" in session
    lua = _lua_block(outputs["lua"], "---@class context_sidecar.Session\n")
    assert "---@field forkedFrom? context_sidecar.ForkOrigin\n" in lua
    md = _md_section(outputs["markdown"], "### Session")
    assert "| `forkedFrom` | [ForkOrigin](#forkorigin) \\| null | no |" in md
    assert "| `profileId` | string \\| null | no |" in md


def test_arrays_maps_enums_and_consts(outputs: dict[str, str]) -> None:
    ts = outputs["typescript"]
    assert "\n  entries: Entry[];\n" in _block(ts, "export interface SessionReadResult {")
    tool_result = _block(ts, "export interface ToolResultPart {")
    assert "\n  content: (TextPart | ImagePart)[];\n" in tool_result
    assert '\n  type: "toolResult";\n' in tool_result
    message = _block(ts, "export interface MessageEntry {")
    assert '\n  role: "user" | "assistant" | "system";\n' in message
    assert "\n  tokens?: { [key: string]: number } | null;\n" in message
    lua = outputs["lua"]
    assert "---@field content (context_sidecar.TextPart|context_sidecar.ImagePart)[]\n" in lua
    assert '---@field role "user"|"assistant"|"system"\n' in lua
    assert "---@field tokens? table<string, integer> # " in lua
    assert "---@field arguments table<string, any>\n" in lua


def test_empty_params_is_an_empty_object(outputs: dict[str, str]) -> None:
    assert "export type EmptyParams = Record<string, never>;" in outputs["typescript"]
    assert "---@class context_sidecar.EmptyParams\n" in outputs["lua"]


# -- unions -----------------------------------------------------------------------------------


@pytest.mark.parametrize("union", ["ContentPart", "EntryInput", "Entry"])
def test_discriminated_union_is_a_ts_union_and_a_lua_alias(
    union: str, schema: dict[str, Any], outputs: dict[str, str]
) -> None:
    definition = schema["$defs"][union]
    members = [ref["$ref"].rsplit("/", 1)[1] for ref in definition["oneOf"]]
    tag = definition["discriminator"]["propertyName"]

    ts = outputs["typescript"]
    one_line = f"export type {union} = {' | '.join(members)};"
    multi_line = f"export type {union} =\n" + "\n".join(f"  | {m}" for m in members) + ";"
    assert one_line in ts or multi_line in ts
    assert f'export type {union}Kind = {union}["{tag}"];' in ts

    lua = outputs["lua"]
    alias = "|".join(f"context_sidecar.{m}" for m in members)
    assert f"---@alias context_sidecar.{union} {alias}\n" in lua
    values = "|".join(f'"{v}"' for v in _tag_values(definition, members))
    assert f"---@alias context_sidecar.{union}Kind {values}\n" in lua

    md = _md_section(outputs["markdown"], f"### {union}")
    assert f"One of, selected by `{tag}`:" in md
    for value, member in zip(_tag_values(definition, members), members, strict=True):
        assert f'| `"{value}"` | [{member}](#{member.lower()}) |' in md


def _tag_values(definition: dict[str, Any], members: list[str]) -> list[str]:
    by_target = {t.rsplit("/", 1)[1]: v for v, t in definition["discriminator"]["mapping"].items()}
    return [by_target[m] for m in members]


# -- methods ----------------------------------------------------------------------------------


def test_typescript_method_tables_list_every_method(
    schema: dict[str, Any], outputs: dict[str, str]
) -> None:
    ts = outputs["typescript"]
    for m in schema["x-methods"]:
        table = GROUP_OF[(m["direction"], m["kind"])]
        block = _block(ts, f"export interface {table} {{")
        if m["kind"] == "request":
            result = m["result"] or "null"
            shape = f'"{m["name"]}": {{ params: {m["params"]}; result: {result} }};'
        else:
            shape = f'"{m["name"]}": {{ params: {m["params"]} }};'
        assert shape in block, m["name"]
        entry = f'{{ name: "{m["name"]}", kind: "{m["kind"]}", direction: "{m["direction"]}" }},'
        assert entry in ts[ts.index("export const METHODS = [") : ts.index("] as const;")]
    for table in GROUP_OF.values():
        assert f"export interface {table} {{" in ts or (
            f"export type {table} = Record<never, never>;" in ts
        )
    assert "export type ClientRequestMethod = keyof ClientRequests;" in ts
    assert "export type ServerNotificationMethod = keyof ServerNotifications;" in ts


def test_lua_method_tables_list_every_method(
    schema: dict[str, Any], outputs: dict[str, str]
) -> None:
    lua = outputs["lua"]
    for m in schema["x-methods"]:
        table = GROUP_OF[(m["direction"], m["kind"])]
        block = _lua_block(lua, f"---@class context_sidecar.{table}")
        params = f"params: context_sidecar.{m['params']}"
        if m["kind"] == "request":
            result = f"context_sidecar.{m['result']}" if m["result"] else "nil"
            shape = f"{{ {params}, result: {result} }}"
        else:
            shape = f"{{ {params} }}"
        assert f'---@field ["{m["name"]}"] {shape} # {m["summary"]}' in block, m["name"]


def test_markdown_method_index_lists_every_method(
    schema: dict[str, Any], outputs: dict[str, str]
) -> None:
    pages = render_pages(schema, HASH)
    md = pages[INDEX_PAGE]
    index = md[md.index("## Methods") : md.index("## Errors")]
    for m in schema["x-methods"]:
        family = m["name"].split("/", 1)[0]
        assert f"### Family `{family}`" in index
        assert f"[Family `{family}`]({family}.md)" in index
        direction = DIRECTION_LABEL[m["direction"]]
        row = f"| `{m['name']}` | {m['kind']} | {direction} | [{m['params']}]("
        assert row in index, m["name"]
        assert m["summary"] in index
        # the family's page has the same row, its params' section on that page or shared
        assert row in pages[f"{family}.md"], m["name"]


# -- markdown specifics -----------------------------------------------------------------------


def test_markdown_sections(outputs: dict[str, str]) -> None:
    md = outputs["markdown"]
    assert md.startswith("# ")
    for heading in ("## Transport", "## Methods", "## Errors", "## Types"):
        assert f"\n{heading}\n" in md
    transport = md[md.index("## Transport") : md.index("## Methods")]
    for fact in ("Content-Length", "bytes", "JSON-RPC 2.0", "initialized", "shutdown", "exit"):
        assert fact in transport
    assert "$/cancelRequest" in transport and "-32800" in transport
    errors = md[md.index("## Errors") : md.index("## Types")]
    assert "| `retryAfterMs` | integer \\| null | no |" in errors
    assert "| `code` | string | yes |" in errors


def test_markdown_links_resolve_to_type_sections(schema: dict[str, Any]) -> None:
    pages = render_pages(schema, HASH)
    headings = {
        page: {anchor(h) for h in re.findall(r"^### (\w+)$", md, re.MULTILINE)}
        for page, md in pages.items()
    }
    targets = 0
    for page, md in pages.items():
        for target_page, target in re.findall(r"\]\(([\w-]*\.md)?#([^)]+)\)", md):
            assert target in headings[target_page or page], (page, target_page, target)
            assert target == target.lower()
            targets += 1
    assert targets


def test_every_type_has_one_section_on_the_page_of_its_users(schema: dict[str, Any]) -> None:
    """A type only one family's methods reach is on that family's page; one several reach
    (or none) is on the shared page; each has exactly one section."""
    pages = render_pages(schema, HASH)
    where: dict[str, list[str]] = {}
    for page, md in pages.items():
        for name in re.findall(r"^### (\w+)$", md, re.MULTILINE):
            if page != INDEX_PAGE:
                where.setdefault(name, []).append(page)
    assert set(where) == set(schema["$defs"])
    assert all(len(found) == 1 for found in where.values()), where
    assert where["SessionCreateParams"] == ["session.md"]  # only session/create takes it
    assert where["ToolExecuteParams"] == ["tool.md"]
    assert where["ErrorData"] == [SHARED_PAGE]  # no method's params or result
    assert where["TextPart"] == [SHARED_PAGE]  # message content: sessions, runs, tools
    assert not re.findall(r"^### (?!Family )", pages[INDEX_PAGE], re.MULTILINE)  # no types


def test_page_anchors_are_unique(schema: dict[str, Any]) -> None:
    for page, md in render_pages(schema, HASH).items():
        heads = [anchor(h) for h in re.findall(r"^#+ (.+)$", md, re.MULTILINE)]
        assert len(heads) == len(set(heads)), page


def test_markdown_tables_are_well_formed(outputs: dict[str, str]) -> None:
    for block in re.split(r"\n\n", outputs["markdown"]):
        lines = block.splitlines()
        if not lines or not lines[0].startswith("| "):
            continue
        cells = [len(re.findall(r"(?<!\\)\|", line)) for line in lines]
        assert len(set(cells)) == 1, block


# -- a tiny schema with the harder constructs -------------------------------------------------


@pytest.fixture(scope="module")
def tiny() -> dict[str, str]:
    return {lang: render(TINY, "h") for lang, render in RENDERERS.items()}


def test_tiny_typescript(tiny: dict[str, str]) -> None:
    ts = tiny["typescript"]
    tree = _block(ts, "export interface Tree {")
    # allOf of a $ref and an inline object: one merged interface, base fields first.
    assert tree.index("  id: string;") < tree.index("  children: Tree[];")  # recursive ref
    assert "\n  label?: string | null;\n" in tree  # type array with null
    assert '\n  shape: "tree";\n' in tree  # const
    assert "\n  weight?: number;\n" in tree  # integer | number collapse in TS
    assert " * Second paragraph.\n" in ts
    assert "\n  depth?: number | string | null;\n" in ts  # nested anyOf flattened
    assert 'export type Color = "red" | "green";' in ts
    assert "export type Pair = [string, number];" in ts
    assert "export type Shape = Tree | Leaf;" in ts
    assert 'export type ShapeKind = Shape["shape"];' in ts
    leaf = _block(ts, "export interface Leaf {")
    assert "\n  extra?: unknown;\n" in leaf
    assert "\n  tags?: { [key: string]: Color };\n" in leaf
    assert "\n  [key: string]: unknown;\n" in leaf  # additionalProperties: true
    question = _block(ts, "export interface Question {")
    assert '\n  "weird-key"?: boolean;\n' in question
    assert "\n  end?: number;\n" in question
    assert "\n  nums?: 1 | true | null;\n" in question  # 1 and True stay distinct
    assert "*\\/ early; @tag | pipe" in question  # no early end of the JSDoc comment
    assert '"tree/get": { params: TreeRef; result: Tree };' in ts
    notifications = _block(ts, "export interface ServerNotifications {")
    assert '"tree/changed": { params: Tree };' in notifications
    assert "export type ClientNotifications = Record<never, never>;" in ts
    assert "export type ServerRequests = Record<never, never>;" in ts
    assert "export const PROTOCOL_VERSION = 7 as const;" in ts


def test_tiny_lua(tiny: dict[str, str]) -> None:
    lua = tiny["lua"]
    tree = _lua_block(lua, "---@class context_sidecar.Tree")
    assert "---@field id string\n" in tree
    assert "---@field label? string # Shown.\n" in tree
    assert "---@field children context_sidecar.Tree[]\n" in tree
    assert '---@field shape "tree"\n' in tree
    assert "---@field weight? integer|number" in tree
    assert "--- A node.\n---\n--- Second paragraph.\n---@class context_sidecar.Tree" in lua
    assert "---@field depth? integer|string\n" in lua
    assert '---@alias context_sidecar.Color "red"|"green"\n' in lua
    assert "---@alias context_sidecar.Pair (string|integer)[]\n" in lua
    assert "---@alias context_sidecar.Shape context_sidecar.Tree|context_sidecar.Leaf\n" in lua
    assert '---@alias context_sidecar.ShapeKind "tree"|"leaf"\n' in lua
    leaf = _lua_block(lua, "---@class context_sidecar.Leaf")
    assert "---@field extra? any\n" in leaf
    assert "---@field tags? table<string, context_sidecar.Color>\n" in leaf
    assert "---@field [string] any" in leaf
    question = _lua_block(lua, "---@class context_sidecar.Question")
    assert '---@field ["weird-key"]? boolean\n' in question
    assert '---@field ["end"]? integer\n' in question  # Lua keyword
    assert "---@field nums? 1|true" in question
    assert '---@field ["tree/changed"] { params: context_sidecar.Tree } # A tree changed.' in lua
    assert "PROTOCOL_VERSION = 7," in lua


def test_tiny_markdown(tiny: dict[str, str]) -> None:
    md = tiny["markdown"]
    tree = _md_section(md, "### Tree")
    assert "A node.\n\nSecond paragraph." in tree
    assert "| `id` | string | yes | (format `uuid`) |" in tree
    assert "| `children` | [Tree](#tree)\\[\\] | yes |" in tree
    assert "| `label` | string \\| null | no | Shown. |" in tree
    assert '| `shape` | `"tree"` | yes |' in tree
    assert "| `depth` | integer \\| string \\| null | no |" in md
    assert 'Type: `"red"` \\| `"green"`' in md
    assert "Type: \\[string, integer\\]" in md
    assert "| `tags` | map&lt;string, [Color](#color)&gt; | no |" in md
    assert "Ends */ early; @tag \\| pipe" in md
    assert "| `tree/changed` | notification | server → client | [Tree](#tree) | — |" in md


def test_tiny_renders_deterministically() -> None:
    for render in RENDERERS.values():
        assert render(TINY, "h") == render(copy.deepcopy(TINY), "h")


def test_empty_schema_renders() -> None:
    for render in RENDERERS.values():
        assert render({}, "h").endswith("\n")
    assert "export const METHODS = [] as const;" in render_typescript({}, "h")


def test_generated_name_collision_is_an_error() -> None:
    bad = copy.deepcopy(TINY)
    bad["$defs"]["ClientRequests"] = {"type": "object", "properties": {}}
    with pytest.raises(ValueError, match="ClientRequests"):
        render_typescript(bad, "h")
    with pytest.raises(ValueError, match="ClientRequests"):
        render_lua(bad, "h")


def test_unknown_method_direction_is_an_error() -> None:
    bad = copy.deepcopy(TINY)
    bad["x-methods"][0]["direction"] = "sideways"
    for render in RENDERERS.values():
        with pytest.raises(ValueError, match="sideways"):
            render(bad, "h")


# -- the shared walker ------------------------------------------------------------------------


def test_make_union_flattens_dedupes_and_puts_null_last() -> None:
    null = Prim("null")
    nested = make_union([null, Union((Ref("A"), Prim("string"))), Ref("A")])
    assert nested == Union((Ref("A"), Prim("string"), null))
    assert make_union([Prim("string"), Prim("unknown")]) == Prim("unknown")
    assert make_union([Lit(1), Lit(True), Lit(1.0)]) == Union((Lit(1), Lit(True), Lit(1.0)))


def test_walker_merges_all_of_and_keeps_recursion_named() -> None:
    model = SchemaModel(TINY)
    tree = model.definition("Tree")
    assert tree is not None and isinstance(tree.type, Obj)
    assert [f.name for f in tree.type.fields] == ["id", "label", "children", "shape", "weight"]
    assert tree.type.extra is None
    shape = model.definition("Shape")
    assert shape is not None and shape.discriminator == "shape"
    assert [v for v, _ in shape.variants] == ["tree", "leaf"]


def test_walker_handles_self_referencing_all_of() -> None:
    loop = {
        "$defs": {
            "Loop": {
                "allOf": [
                    {"$ref": "#/$defs/Loop"},
                    {"type": "object", "properties": {"x": {"type": "string"}}},
                ]
            }
        }
    }
    for render in RENDERERS.values():
        assert "Loop" in render(loop, "h")


def test_a_pipe_in_code_is_a_pipe_on_github_and_in_mkdocs(schema: dict[str, Any]) -> None:
    """In a table cell GitHub ends the cell at a bare ``|`` even inside code, and mkdocs shows
    the backslash of a ``\\|`` inside code: code holding a pipe is HTML with ``&#124;``."""
    text = render_markdown(schema, HASH)
    assert "<code>^(env&#124;secret):" in text
    spans = [m.group(2) for line in text.splitlines() for m in re.finditer(r"(`+)(.+?)\1", line)]
    assert spans
    assert not [span for span in spans if "|" in span]
