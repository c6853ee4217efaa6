"""The light routes (``sidecar/methods/light.py``) answer exactly as the full routes do, or hand
the request over: the same result for every params they take, and no answer for params or
sessions the models would refuse or change."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from protocol._base import dump_wire, parse_wire
from protocol.sessions import ForkOrigin, Session
from sidecar.methods import light
from sidecar.methods.capabilities import schema_facts
from sidecar.methods.route import bind
from sidecar.methods.state import SidecarState
from sidecar.methods.table import CONNECTION_FREE_ROUTES

pytestmark = pytest.mark.anyio

#: Full routes, by method: what each light route must agree with.
FULL = {r.spec.name: r for r in CONNECTION_FREE_ROUTES}


def light_server(state: SidecarState) -> light.LightServer:
    """What the light routes answer from, for the same server as ``state``."""
    return light.LightServer(
        state.store, state.limits.max_message_bytes, state.started_at, state.latencies
    )


async def full_answer(state: SidecarState, method: str, params: Any) -> Any:
    """The full route's result, or the exception it answers with."""
    try:
        return await bind(state, FULL[method])(params)
    except Exception as exc:
        return exc


async def sessions_of_every_shape(state: SidecarState) -> list[str]:
    """Sessions with and without a profile, metadata, a fork origin and history."""
    sessions = state.store.sessions
    plain = await sessions.create(title="plain", workspace_roots=[], profile_id=None, meta=None)
    rich = await sessions.create(
        title="rich ✓ \ud83d\ude00",
        workspace_roots=["/work/a", "/work/b"],
        profile_id="prf_x",
        meta={"editor": "nvim", "nested": {"n": None, "list": [1, 2.5, "x", True]}},
    )
    empty_meta = await sessions.create(title="", workspace_roots=["/w"], profile_id=None, meta={})
    forked = await sessions.fork(rich.session_id, at_seq=None, title="fork")
    return [plain.session_id, rich.session_id, empty_meta.session_id, forked.session_id]


def test_the_light_routes_are_routes_of_the_protocol() -> None:
    methods = set(schema_facts().methods)
    assert set(light.LIGHT_ROUTES) <= set(FULL) and set(light.LIGHT_ROUTES) <= methods


def test_the_session_shape_is_the_models() -> None:
    fields = Session.model_fields
    aliases = {info.alias for info in fields.values()}
    required = {info.alias for info in fields.values() if info.is_required()}
    assert required == light.SESSION_REQUIRED
    assert aliases == light.SESSION_REQUIRED | light.SESSION_OPTIONAL
    assert {info.alias for info in ForkOrigin.model_fields.values()} == {"sessionId", "atSeq"}


@pytest.mark.parametrize(
    "params",
    [None, {}, [], {"limit": 1}, {"limit": 2}, {"limit": 500}, {"cursor": None, "limit": 3}],
)
async def test_session_list_answers_as_the_full_route(
    state: SidecarState, params: dict[str, Any] | None
) -> None:
    assert light.session_list(light_server(state), params) == await full_answer(
        state, "session/list", params
    )
    await sessions_of_every_shape(state)
    answer = light.session_list(light_server(state), params)
    assert answer is not None
    assert answer == await full_answer(state, "session/list", params)
    # the same bytes on the wire, not only equal values
    full = await full_answer(state, "session/list", params)
    assert json.dumps(answer) == json.dumps(full)


async def test_session_list_pages_as_the_full_route(state: SidecarState) -> None:
    await sessions_of_every_shape(state)
    cursor: str | None = None
    for _ in range(5):
        params = {"cursor": cursor, "limit": 1}
        answer = light.session_list(light_server(state), params)
        assert answer == await full_answer(state, "session/list", params)
        assert answer is not None
        cursor = answer.get("nextCursor")
        if cursor is None:
            break
    assert cursor is None


#: Values of every JSON type, for the params' fields and the sessions' fields.
JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=600),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
    st.just("ses_00000000000000000000000000"),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


#: ``session/list`` params of the right shape (mostly valid), then anything at all.
LIST_PARAMS = st.fixed_dictionaries(
    {},
    optional={
        "cursor": st.one_of(st.none(), st.text(max_size=3)),
        # JSON has one number type: what decodes to a bool or a float is not a limit
        "limit": st.one_of(
            st.integers(min_value=-1, max_value=502), st.booleans(), st.floats(0, 600)
        ),
    },
)
ANY_PARAMS = st.one_of(
    JSON_VALUES,
    st.dictionaries(st.sampled_from(["cursor", "limit", "other", "session_id"]), JSON_VALUES),
)


@settings(max_examples=200, deadline=None)
@given(params=st.booleans().flatmap(lambda shaped: LIST_PARAMS if shaped else ANY_PARAMS))
@example(params={"limit": True})
@example(params={"limit": 5.0})
@example(params={"cursor": 1})
async def test_session_list_takes_only_params_the_model_takes_alike(params: Any) -> None:
    """Whatever the light route accepts, the model accepts with the same values; whatever the
    model refuses, the light route leaves to it."""
    from protocol.sessions import SessionListParams

    taken = _light_params(params)
    try:
        model = parse_wire(SessionListParams, params)
    except Exception:
        event("refused by the model")
        assert taken is None
        return
    event("taken by the light route" if taken is not None else "handed over")
    if taken is not None:
        assert taken == {"cursor": model.cursor, "limit": model.limit}


def _light_params(params: Any) -> dict[str, Any] | None:
    """The ``cursor`` and ``limit`` the light route lists with, or ``None`` (handed over)."""
    seen: dict[str, Any] = {}

    class Sessions:
        def list_page_wire(self, *, cursor: str | None, limit: int) -> tuple[list[Any], None]:
            seen.update(cursor=cursor, limit=limit)
            return [], None

    class FakeStore:
        sessions = Sessions()

    server = light.LightServer(FakeStore(), 1 << 20, "")  # type: ignore[arg-type]
    if light.session_list(server, params) is None:
        return None
    return seen


def _session_wire(**changes: Any) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "sessionId": "ses_00000000000000000000000000",
        "title": "t",
        "workspaceRoots": ["/w"],
        "profileId": "prf_1",
        "createdAt": "2026-01-01T00:00:00.000Z",
        "updatedAt": "2026-01-01T00:00:00.000Z",
        "headSeq": 3,
        "forkedFrom": {"sessionId": "ses_1", "atSeq": 2},
        "meta": {"k": [1, {"x": None}]},
    }
    for key, value in changes.items():
        if value is _DROP:
            wire.pop(key, None)
        else:
            wire[key] = value
    return wire


_DROP = object()
SESSION_KEYS = [*sorted(light.SESSION_REQUIRED | light.SESSION_OPTIONAL), "extra"]


#: Free-form JSON, as a session's ``meta`` holds (non-finite floats included).
JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.text(max_size=2), inner, max_size=2)
    ),
    max_leaves=5,
)
#: Changes to a session that keep its shape (mostly sent as they are)...
SHAPED_CHANGES = st.fixed_dictionaries(
    {},
    optional={
        "title": st.text(max_size=3),
        "workspaceRoots": st.lists(st.text(max_size=3), max_size=2),
        "profileId": st.one_of(st.just(_DROP), st.text(max_size=3)),
        "createdAt": st.text(min_size=0, max_size=41),
        "headSeq": st.integers(min_value=-1, max_value=10**6),
        "forkedFrom": st.one_of(
            st.just(_DROP),
            st.fixed_dictionaries(
                {"sessionId": st.text(max_size=2), "atSeq": st.integers(min_value=-1, max_value=3)}
            ),
        ),
        "meta": st.one_of(st.just(_DROP), st.dictionaries(st.text(max_size=2), JSON, max_size=3)),
    },
)
#: ... and changes of any kind (mostly left to the model).
ANY_CHANGES = st.dictionaries(
    st.sampled_from(SESSION_KEYS), st.one_of(JSON_VALUES, st.just(_DROP), JSON), max_size=2
)


@settings(max_examples=300, deadline=None)
@given(changes=st.booleans().flatmap(lambda shaped: SHAPED_CHANGES if shaped else ANY_CHANGES))
def test_a_session_is_sent_only_as_the_model_would_send_it(changes: dict[str, Any]) -> None:
    wire = _session_wire(**changes)
    if light._plain_session(wire):
        event("sent as it is")
        assert dump_wire(parse_wire(Session, wire)) == wire
    else:
        event("left to the model")


def test_sessions_of_odd_shape_are_left_to_the_model() -> None:
    for odd in (
        _session_wire(title=5),
        _session_wire(headSeq=True),
        _session_wire(headSeq=-1),
        _session_wire(meta=[]),  # the model reads it as {}
        _session_wire(meta={"x": float("inf")}),  # the model writes null
        _session_wire(createdAt=""),
        _session_wire(updatedAt="x" * 41),
        _session_wire(forkedFrom={"sessionId": "", "atSeq": 1}),
        _session_wire(workspaceRoots=["/w", 1]),
        _session_wire(sessionId=_DROP),
        _session_wire(extra=1),
    ):
        assert not light._plain_session(odd)
    assert light._plain_session(_session_wire())
    assert light._plain_session(_session_wire(profileId=_DROP, forkedFrom=_DROP, meta=_DROP))


async def test_a_hand_edited_session_is_listed_by_the_full_route(state: SidecarState) -> None:
    [session_id, *_] = await sessions_of_every_shape(state)
    path = state.store.root / "sessions" / session_id / "session.json"
    meta = json.loads(path.read_bytes())
    path.write_text(json.dumps({**meta, "title": 7}))
    state.store.sessions.close()  # forget what was loaded: read the file again
    assert light.session_list(light_server(state), {}) is None
    assert isinstance(await full_answer(state, "session/list", {}), Exception)


@pytest.mark.parametrize("params", [None, {}, []])
async def test_server_ping_answers_as_the_full_route(state: SidecarState, params: Any) -> None:
    answer = light.server_ping(light_server(state), params)
    full = await full_answer(state, "server/ping", params)
    assert answer is not None and set(answer) == set(full) == {"time"}
    assert len(answer["time"]) == len(full["time"])


@pytest.mark.parametrize("params", [None, {}, []])
async def test_server_info_answers_as_the_full_route(state: SidecarState, params: Any) -> None:
    answer = light.server_info(light_server(state), params)
    full = await full_answer(state, "server/info", params)
    assert answer == full
    assert json.dumps(answer) == json.dumps(full)  # the same bytes on the wire


@pytest.mark.parametrize("method", ["server/ping", "server/info"])
@pytest.mark.parametrize("params", [{"x": 1}, [1], 5, "x"])
async def test_odd_params_are_left_to_the_model(
    state: SidecarState, method: str, params: Any
) -> None:
    assert light.LIGHT_ROUTES[method](light_server(state), params) is None
    assert isinstance(await full_answer(state, method, params), Exception)


# --- session/create: the one write ------------------------------------------------------


def _without_clock(session: Any) -> Any:
    """A session less what differs between two creates (its id and times, the time it was
    taken)."""
    if not isinstance(session, dict):
        return session
    out = {k: v for k, v in session.items() if k not in {"sessionId", "createdAt", "updatedAt"}}
    if isinstance(out.get("heldBy"), dict):
        out["heldBy"] = {k: v for k, v in out["heldBy"].items() if k != "since"}
    return out


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        [],
        {"title": "first"},
        {"title": "✓ \U0001f600" * 166, "workspaceRoots": ["/w", "/w/../x/"]},
        {"title": "t", "workspaceRoots": [], "profileId": "prf_1", "meta": {"a": [1, None]}},
        {"profileId": None, "meta": None},
        {"meta": {}},
    ],
)
async def test_session_create_answers_as_the_full_route(state: SidecarState, params: Any) -> None:
    answer = light.session_create(light_server(state), params)
    full = await full_answer(state, "session/create", params)
    assert answer is not None and not isinstance(full, Exception)
    assert _without_clock(answer) == _without_clock(full)
    assert list(answer) == list(full)  # the same keys in the same order: the same bytes
    # both are stored alike: read back by the full route as they were answered
    for created in (answer, full):
        got = await full_answer(state, "session/get", {"sessionId": created["sessionId"]})
        assert got == created


@pytest.mark.parametrize(
    "params",
    [
        {"title": "x" * 501},
        {"title": 5},
        {"title": "\ud800"},
        {"workspaceRoots": ["relative"]},  # the store refuses it: the full route says so
        {"workspaceRoots": [""]},
        {"workspaceRoots": ["/a\x00b"]},
        {"workspaceRoots": "/w"},
        {"profileId": 1},
        {"meta": []},  # the model reads it as {}
        {"meta": {"x": float("nan")}},  # the model writes null
        {"meta": {"\ud800": 1}},  # the model's keys are text: a lone surrogate is replaced
        {"meta": {"a": {"b\udfff": 1}}},
        {"meta": "x"},
        {"other": 1},
        {"session_id": "x"},
        [1],
        "x",
    ],
)
async def test_session_create_leaves_odd_params_to_the_model_having_written_nothing(
    state: SidecarState, params: Any
) -> None:
    assert light.session_create(light_server(state), params) is None
    assert state.store.sessions.list_page_wire(cursor=None, limit=10) == ([], None)


async def test_session_create_on_a_store_it_may_not_write_takes_the_full_route(
    state: SidecarState, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(type(state.store), "writable", property(lambda self: False))
    assert light.session_create(light_server(state), {"title": "x"}) is None
    assert state.store.sessions.list_page_wire(cursor=None, limit=10) == ([], None)


#: ``session/create`` params of the right shape (mostly valid), then anything at all.
CREATE_PARAMS = st.fixed_dictionaries(
    {},
    optional={
        "title": st.one_of(st.text(max_size=3), st.just("x" * 500), st.just("x" * 501)),
        "workspaceRoots": st.lists(
            st.one_of(st.sampled_from(["/w", "/", "rel", "", "/a\x00"]), st.text(max_size=3)),
            max_size=2,
        ),
        "profileId": st.one_of(st.none(), st.text(max_size=3), st.integers()),
        "meta": st.one_of(st.none(), st.dictionaries(st.text(max_size=2), JSON, max_size=3)),
    },
)
ANY_CREATE_PARAMS = st.one_of(
    JSON_VALUES,
    st.dictionaries(
        st.sampled_from(["title", "workspaceRoots", "profileId", "meta", "other"]),
        st.one_of(JSON_VALUES, JSON),
    ),
)


@settings(max_examples=300, deadline=None)
@given(params=st.booleans().flatmap(lambda shaped: CREATE_PARAMS if shaped else ANY_CREATE_PARAMS))
@example(params={"title": True})
@example(params={"meta": {"x": float("inf")}})
@example(params={"workspaceRoots": ["/w", "rel"]})
@example(params={"meta": {"\ud800": 1}})  # the model's keys are text: it replaces the surrogate
@example(params={"meta": {"a": [{"\udc00x": None}]}})
def test_session_create_takes_only_params_the_model_takes_alike(params: Any) -> None:
    """Whatever the light route writes, the model accepts with the same values (and the
    store too: absolute roots); whatever the model refuses, the light route leaves to it."""
    from protocol.sessions import SessionCreateParams

    taken = _light_create(params)
    try:
        model = parse_wire(SessionCreateParams, params)
    except Exception:
        event("refused by the model")
        assert taken is None
        return
    event("taken by the light route" if taken is not None else "handed over")
    if taken is not None:
        assert taken == {
            "title": model.title,
            "workspace_roots": model.workspace_roots,
            "profile_id": model.profile_id,
            "meta": model.meta,
        }
        assert all(os.path.isabs(root) for root in model.workspace_roots)
        assert json.dumps(taken["meta"], allow_nan=False)  # stored and sent as it is


def _light_create(params: Any) -> dict[str, Any] | None:
    """What the light route creates the session with, or ``None`` (handed over)."""
    seen: dict[str, Any] = {}

    class Sessions:
        writable = True

        def create_now_wire(self, **kwargs: Any) -> dict[str, Any]:
            seen.update(kwargs)
            return _session_wire()

    class FakeStore:
        sessions = Sessions()
        writable = True

    server = light.LightServer(FakeStore(), 1 << 20, "")  # type: ignore[arg-type]
    if light.session_create(server, params) is None:
        return None
    return seen
