"""The wire models: camelCase, closed, strict, frozen; unions; the method registry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from protocol import methods as m
from protocol._base import WireModel, dump_wire, parse_wire
from protocol.entries import (
    CompactionInput,
    ContentPart,
    DropInput,
    Entry,
    EntryInput,
    ImagePart,
    ItemRef,
    MessageEntry,
    MessageInput,
    NoteEntry,
    NoteInput,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    VariablesInput,
)
from protocol.errors import ErrorData
from protocol.server import Limits, ServerSleepParams
from protocol.sessions import (
    Session,
    SessionAppendParams,
    SessionCreateParams,
    SessionReadParams,
    SessionRef,
)
from sidecar.context.tokens import Tokenizers
from sidecar.methods.state import SidecarState
from sidecar.methods.table import ROUTES
from sidecar.rpc.server import build_server
from sidecar.store import Store

ENTRY_INPUT: TypeAdapter[Any] = TypeAdapter(EntryInput)
ENTRY: TypeAdapter[Any] = TypeAdapter(Entry)
CONTENT_PART: TypeAdapter[Any] = TypeAdapter(ContentPart)

STORED = {"seq": 3, "id": "ent_x", "time": "2026-01-01T00:00:00.000Z", "hash": "ab"}


def error_types(exc: ValidationError) -> set[tuple[str, str]]:
    return {(".".join(str(p) for p in e["loc"]), e["type"]) for e in exc.errors()}


def parse_union(adapter: TypeAdapter[Any], raw: object) -> Any:
    return adapter.validate_python(raw, by_alias=True, by_name=False)


# --- camelCase, None omitted -----------------------------------------------------------------


def test_dump_wire_is_camel_case_and_omits_none() -> None:
    params = SessionReadParams(session_id="ses_1", after_seq=4, with_tokens=True)
    assert dump_wire(params) == {
        "sessionId": "ses_1",
        "afterSeq": 4,
        "limit": 200,
        "withTokens": True,
    }
    part = ToolResultPart(type="toolResult", call_id="c", content=[TextPart(type="text", text="t")])
    assert dump_wire(part) == {
        "type": "toolResult",
        "callId": "c",
        "content": [{"type": "text", "text": "t"}],
        "isError": False,
    }
    assert "retryAfterMs" not in dump_wire(ErrorData(code="x"))


def test_dump_then_parse_round_trips() -> None:
    session = Session(
        session_id="ses_1",
        title="t",
        workspace_roots=["/w"],
        created_at="2026-01-01T00:00:00.000Z",
        updated_at="2026-01-01T00:00:00.000Z",
        head_seq=2,
        meta={"nested": {"snake_case_key": None}},
    )
    wire = dump_wire(session)
    assert wire["meta"] == {"nested": {"snake_case_key": None}}  # free JSON is kept verbatim
    assert parse_wire(Session, wire) == session


def test_parse_wire_rejects_snake_case_names() -> None:
    with pytest.raises(ValidationError) as info:
        parse_wire(SessionRef, {"session_id": "ses_1"})
    assert error_types(info.value) == {("sessionId", "missing"), ("session_id", "extra_forbidden")}
    with pytest.raises(ValidationError):
        parse_wire(SessionReadParams, {"sessionId": "s", "with_tokens": True})
    # Python code may still build models by field name.
    assert SessionRef(session_id="ses_1").session_id == "ses_1"


def test_parse_wire_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError) as info:
        parse_wire(SessionCreateParams, {"title": "t", "color": "red"})
    assert error_types(info.value) == {("color", "extra_forbidden")}
    with pytest.raises(ValidationError) as nested:
        parse_wire(
            SessionAppendParams,
            {
                "sessionId": "s",
                "entries": [{"kind": "note", "text": "n", "extra": 1}],
            },
        )
    assert ("entries.0.note.extra", "extra_forbidden") in error_types(nested.value)


@pytest.mark.parametrize(
    ("model", "raw", "loc", "kind"),
    [
        (SessionReadParams, {"sessionId": "s", "limit": "1"}, "limit", "int_type"),
        (SessionReadParams, {"sessionId": "s", "limit": 1.0}, "limit", "int_type"),
        (SessionReadParams, {"sessionId": "s", "limit": True}, "limit", "int_type"),
        (SessionReadParams, {"sessionId": "s", "withTokens": 1}, "withTokens", "bool_type"),
        (SessionReadParams, {"sessionId": "s", "withTokens": "true"}, "withTokens", "bool_type"),
        (SessionRef, {"sessionId": 5}, "sessionId", "string_type"),
        (SessionCreateParams, {"workspaceRoots": "/w"}, "workspaceRoots", "list_type"),
        (ServerSleepParams, {"ms": 60_001}, "ms", "less_than_equal"),
        (SessionRef, {"sessionId": ""}, "sessionId", "string_too_short"),
    ],
)
def test_parse_wire_is_strict(model: type[WireModel], raw: Any, loc: str, kind: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_wire(model, raw)
    assert error_types(info.value) == {(loc, kind)}


def test_parse_wire_treats_none_as_empty_params() -> None:
    assert parse_wire(m.EmptyParams, None) == m.EmptyParams()
    with pytest.raises(ValidationError):
        parse_wire(SessionRef, None)


def test_models_are_frozen() -> None:
    ref = SessionRef(session_id="a")
    with pytest.raises(ValidationError) as info:
        ref.session_id = "b"  # type: ignore[misc]
    assert info.value.errors()[0]["type"] == "frozen_instance"
    assert ref.session_id == "a"
    assert hash(ref) == hash(SessionRef(session_id="a"))


def test_every_wire_model_is_closed_strict_and_frozen() -> None:
    seen: set[type[BaseModel]] = set()
    pending: list[type[BaseModel]] = [
        model for spec in m.ALL_METHODS for model in (spec.params, spec.result) if model is not None
    ]
    while pending:
        model = pending.pop()
        if model in seen:
            continue
        seen.add(model)
        assert issubclass(model, WireModel), model
        config = model.model_config
        assert config.get("extra") == "forbid", model
        assert config.get("strict") is True, model
        assert config.get("frozen") is True, model
        for field in model.model_fields.values():
            for arg in _model_types(field.annotation):
                pending.append(arg)
    assert MessageEntry in seen and ToolResultPart in seen and Limits in seen


def _model_types(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list[type[BaseModel]] = []
    for arg in getattr(annotation, "__args__", ()) + getattr(annotation, "__metadata__", ()):
        out += _model_types(arg)
    if hasattr(annotation, "__origin__") and not hasattr(annotation, "__args__"):
        out += _model_types(annotation.__origin__)
    return out


# --- discriminated unions --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "model"),
    [
        (
            {"kind": "message", "role": "user", "content": [{"type": "text", "text": "hi"}]},
            MessageInput,
        ),
        ({"kind": "note", "text": "n"}, NoteInput),
        ({"kind": "compaction", "summary": "s", "throughSeq": 3}, CompactionInput),
        ({"kind": "drop", "target": {"kind": "file", "locator": "a.py"}}, DropInput),
        ({"kind": "variables", "values": {"x": 1}}, VariablesInput),
    ],
)
def test_entry_input_dispatches_on_kind(raw: dict[str, Any], model: type[WireModel]) -> None:
    parsed = parse_union(ENTRY_INPUT, raw)
    assert type(parsed) is model
    assert {k: v for k, v in dump_wire(parsed).items() if k in raw} == raw


def test_entry_input_with_an_unknown_or_missing_kind() -> None:
    with pytest.raises(ValidationError) as info:
        parse_union(ENTRY_INPUT, {"kind": "poem", "text": "x"})
    assert [e["type"] for e in info.value.errors()] == ["union_tag_invalid"]
    with pytest.raises(ValidationError) as missing:
        parse_union(ENTRY_INPUT, {"text": "x"})
    assert [e["type"] for e in missing.value.errors()] == ["union_tag_not_found"]


def test_entry_dispatches_on_kind_and_needs_the_stored_fields() -> None:
    note = parse_union(ENTRY, {**STORED, "kind": "note", "text": "n"})
    assert type(note) is NoteEntry
    assert (note.seq, note.id, note.text) == (3, "ent_x", "n")
    message = parse_union(
        ENTRY,
        {
            **STORED,
            "kind": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}],
            "tokens": {"cl100k_base": 5},
        },
    )
    assert type(message) is MessageEntry
    assert message.tokens == {"cl100k_base": 5}
    with pytest.raises(ValidationError) as info:
        parse_union(ENTRY, {"kind": "note", "text": "n"})
    assert {loc for loc, kind in error_types(info.value) if kind == "missing"} == {
        "note.seq",
        "note.id",
        "note.time",
        "note.hash",
    }
    # An input is not an entry, and an entry is not an input.
    with pytest.raises(ValidationError):
        parse_union(ENTRY_INPUT, {**STORED, "kind": "note", "text": "n"})


@pytest.mark.parametrize(
    ("raw", "model"),
    [
        ({"type": "text", "text": "t"}, TextPart),
        ({"type": "image", "blob": "ab", "mediaType": "image/png"}, ImagePart),
        ({"type": "toolCall", "callId": "c", "name": "n", "arguments": {}}, ToolCallPart),
        ({"type": "toolResult", "callId": "c", "content": []}, ToolResultPart),
        ({"type": "reasoning", "text": "r"}, ReasoningPart),
    ],
)
def test_content_part_dispatches_on_type(raw: dict[str, Any], model: type[WireModel]) -> None:
    assert type(parse_union(CONTENT_PART, raw)) is model


def test_content_part_errors_point_at_the_tagged_member() -> None:
    with pytest.raises(ValidationError) as info:
        parse_union(CONTENT_PART, {"type": "toolCall", "callId": "c", "name": "n"})
    assert error_types(info.value) == {("toolCall.arguments", "missing")}
    with pytest.raises(ValidationError) as bad_tag:
        parse_union(CONTENT_PART, {"type": "video", "url": "x"})
    assert [e["type"] for e in bad_tag.value.errors()] == ["union_tag_invalid"]
    with pytest.raises(ValidationError):
        # tool results hold text and images only
        parse_union(
            CONTENT_PART,
            {"type": "toolResult", "callId": "c", "content": [{"type": "reasoning", "text": "r"}]},
        )


# --- cross-field rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        {"kind": "file", "locator": "src/a.py"},
        {"kind": "instruction", "locator": "AGENTS.md"},
        {"kind": "skill", "locator": "deploy"},
        {"kind": "range", "fromSeq": 2, "throughSeq": 2},
        {"kind": "range", "fromSeq": 0, "throughSeq": 9},
        {"kind": "item", "itemId": "ctx_file_0123456789abcdef"},
    ],
)
def test_item_ref_accepts_what_each_kind_needs(raw: dict[str, Any]) -> None:
    assert dump_wire(parse_wire(ItemRef, raw)) == raw


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"kind": "file"}, "needs a locator"),
        ({"kind": "skill", "locator": ""}, "needs a locator"),
        ({"kind": "instruction", "itemId": "x"}, "needs a locator"),
        ({"kind": "range", "fromSeq": 1}, "needs fromSeq and throughSeq"),
        ({"kind": "range", "throughSeq": 1}, "needs fromSeq and throughSeq"),
        ({"kind": "range", "fromSeq": 5, "throughSeq": 4}, "not be greater"),
        ({"kind": "item"}, "needs itemId"),
        ({"kind": "item", "locator": "a.py"}, "needs itemId"),
    ],
)
def test_item_ref_rejects_what_a_kind_lacks(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_wire(ItemRef, raw)
    assert message in str(info.value)


def test_item_ref_rejects_an_unknown_kind_and_negative_seqs() -> None:
    with pytest.raises(ValidationError):
        parse_wire(ItemRef, {"kind": "url", "locator": "https://x"})
    with pytest.raises(ValidationError):
        parse_wire(ItemRef, {"kind": "range", "fromSeq": -1, "throughSeq": 1})


def test_compaction_keep_from_seq_must_not_pass_through_seq() -> None:
    ok = parse_wire(CompactionInput, {"kind": "compaction", "summary": "s", "throughSeq": 5})
    assert ok.keep_from_seq is None
    edge = {"kind": "compaction", "summary": "s", "throughSeq": 5, "keepFromSeq": 5}
    assert parse_wire(CompactionInput, edge).keep_from_seq == 5
    with pytest.raises(ValidationError) as info:
        parse_wire(
            CompactionInput,
            {"kind": "compaction", "summary": "s", "throughSeq": 5, "keepFromSeq": 6},
        )
    assert "keepFromSeq must not be greater than throughSeq" in str(info.value)
    with pytest.raises(ValidationError):
        parse_wire(CompactionInput, {"kind": "compaction", "summary": "", "throughSeq": 5})


def test_message_needs_content() -> None:
    with pytest.raises(ValidationError) as info:
        parse_wire(MessageInput, {"kind": "message", "role": "user", "content": []})
    assert error_types(info.value) == {("content", "too_short")}
    with pytest.raises(ValidationError):
        parse_wire(
            MessageInput,
            {"kind": "message", "role": "tool", "content": [{"type": "text", "text": "x"}]},
        )


# --- the method registry ---------------------------------------------------------------------


def test_every_method_has_a_unique_name_and_pydantic_models() -> None:
    names = [spec.name for spec in m.ALL_METHODS]
    assert len(names) == len(set(names))
    assert {spec.name: spec for spec in m.ALL_METHODS} == m.METHODS_BY_NAME
    for spec in m.ALL_METHODS:
        assert spec.name.count("/") == 1 and all(spec.name.split("/")), spec.name
        assert issubclass(spec.params, WireModel), spec.name
        if spec.kind == "request":
            assert spec.result is not None and issubclass(spec.result, WireModel), spec.name
        else:
            assert spec.result is None, spec.name
        assert spec.summary.strip(), spec.name
        assert spec.kind in ("request", "notification")
        assert spec.direction in ("clientToServer", "serverToClient")


def test_every_client_request_has_a_route() -> None:
    routed = [route.spec.name for route in ROUTES]
    assert len(routed) == len(set(routed))
    wanted = {
        spec.name
        for spec in m.ALL_METHODS
        if spec.direction == "clientToServer" and spec.kind == "request"
    }
    assert wanted <= set(routed)
    for route in ROUTES:
        assert m.METHODS_BY_NAME[route.spec.name] is route.spec, route.spec.name


def test_build_server_registers_every_route(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    try:
        state = SidecarState(
            store=store,
            tokenizers=Tokenizers.discover(),
            limits=Limits(
                max_message_bytes=1 << 20,
                max_append_entries=1000,
                max_read_limit=1000,
                max_list_limit=500,
                max_count_bytes=1 << 20,
            ),
        )
        server = build_server(state)
        features = server.protocol.fm.features
        for route in ROUTES:
            assert route.spec.name in features, route.spec.name
        caps = state.capabilities()
        assert caps.methods == [spec.name for spec in m.CLIENT_METHODS]
        assert caps.default_tokenizer in {t.id for t in caps.tokenizers}
    finally:
        store.close()
