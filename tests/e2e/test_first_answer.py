"""The first requests after ``initialize`` are answered from the store before pydantic, the
wire models, pygls or the tokenizers load — and, when they come right behind ``initialize``,
before the event loop exists (``sidecar/methods/light.py``, ``sidecar/rpc/first_requests.py``).

What is loaded when an answer is written is a property of the code path, not of the clock:
``first_answer_probe.py`` takes the timing out of the picture.  ``make bench`` measures the
time."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sidecar.client import RpcError, SidecarClient
from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio

PROBE = [sys.executable, str(Path(__file__).with_name("first_answer_probe.py")), "serve"]

#: Never loaded on the way to the first answer.
HEAVY = (
    "pydantic",
    "pydantic_core",
    "protocol._base",
    "protocol.methods",
    "sidecar.methods.table",
    "sidecar.methods.state",
    "pygls",
    "lsprotocol",
    "cattrs",
    "tiktoken",
    "httpx",
)
#: Not loaded either when the answer is made before the event loop starts.
EVENT_LOOP = ("asyncio", "anyio")


def loaded(modules: list[str], roots: tuple[str, ...]) -> list[str]:
    return [m for m in modules if m in roots or m.startswith(tuple(f"{r}." for r in roots))]


async def make_sessions(sidecars: SidecarFactory) -> None:
    """Sessions of every shape in the store: roots, a profile, metadata, a fork."""
    client = await sidecars.start()
    await client.request("session/create", {"title": "plain"})
    rich = await client.request(
        "session/create",
        {"title": "rich", "workspaceRoots": ["/w"], "profileId": "prf_1", "meta": {"a": [1]}},
    )
    await client.request("session/fork", {"sessionId": rich["sessionId"], "title": "fork"})
    assert await client.close() == 0


async def full_server_answer(sidecars: SidecarFactory, method: str) -> Any:
    """``method``'s answer from pygls' routes: behind a ``run/*`` request, it is held for
    pygls like everything after it."""
    client = await sidecars.start()
    _, held = client.start_request("run/list", {})
    answer = await client.request(method, {})
    await held
    assert await client.close() == 0
    return answer


async def answer_and_modules(
    sidecars: SidecarFactory, tmp_path: Path, method: str, step: str, params: Any = None
) -> tuple[Any, list[str]]:
    record = tmp_path / f"answers-{step}.jsonl"
    client = await SidecarClient.spawn(
        command=PROBE,
        store=sidecars.store,
        env={"FIRST_ANSWER_RECORD": str(record), "FIRST_ANSWER_STEP": step},
        initialize=False,
    )
    try:
        init_id, init = client.start_request("initialize", {"processId": None, "capabilities": {}})
        client.notify("initialized", {})
        if step == "before-loop":  # right behind initialize, as a host sends it
            msg_id, answered = client.start_request(method, params or {})
            await asyncio.wait_for(init, 30)
        else:  # once initialize is answered: the step before the loop is over by then
            await asyncio.wait_for(init, 30)
            msg_id, answered = client.start_request(method, params or {})
        answer = await asyncio.wait_for(answered, 30)
        client.close_stdin()  # EOF: the sidecar exits without loading anything more
        assert await client.wait(30) == 0
    finally:
        client.kill()
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [line["id"] for line in lines] == [init_id, msg_id]
    return answer, lines[1]["modules"]


@pytest.mark.parametrize("method", ["session/list", "server/info", "server/ping"])
@pytest.mark.parametrize("step", ["before-loop", "in-loop"])
async def test_the_first_answer_needs_no_heavy_module(
    sidecars: SidecarFactory, tmp_path: Path, method: str, step: str
) -> None:
    await make_sessions(sidecars)
    answer, modules = await answer_and_modules(sidecars, tmp_path, method, step)
    assert loaded(modules, HEAVY) == []
    event_loop = loaded(modules, EVENT_LOOP)
    assert event_loop == [] if step == "before-loop" else "asyncio" in event_loop
    # the real store's answer, as pygls' route gives it
    full = await full_server_answer(sidecars, method)
    if method == "session/list":
        assert [s["title"] for s in answer["sessions"]] == ["fork", "rich", "plain"]
        assert answer == full
    elif method == "server/info":  # another process: its own pid, start time and requests
        live = {"pid", "startedAt", "latencies"}
        assert answer["latencies"]["boundsMs"] == full["latencies"]["boundsMs"]
        assert {k: v for k, v in answer.items() if k not in live} == {
            k: v for k, v in full.items() if k not in live
        }
        assert set(answer) == set(full)
    else:
        assert set(answer) == set(full) == {"time"}


#: A host's first write: its new chat's session.
CREATE = {"title": "first", "workspaceRoots": ["/w"], "profileId": "prf_1", "meta": {"a": [1]}}


@pytest.mark.parametrize("step", ["before-loop", "in-loop"])
async def test_the_first_session_create_needs_no_heavy_module(
    sidecars: SidecarFactory, tmp_path: Path, step: str
) -> None:
    answer, modules = await answer_and_modules(sidecars, tmp_path, "session/create", step, CREATE)
    assert loaded(modules, HEAVY) == []
    event_loop = loaded(modules, EVENT_LOOP)
    assert event_loop == [] if step == "before-loop" else "asyncio" in event_loop
    # written as the full route writes it, and read back by it
    client = await sidecars.start()
    _, held = client.start_request("run/list", {})  # what follows is pygls' (see above)
    got = await client.request("session/get", {"sessionId": answer["sessionId"]})
    full = await client.request("session/create", CREATE)
    await held
    assert await client.close() == 0
    # held by the process that created it; read once it has ended, by nobody
    assert answer["heldBy"]["face"] == "serve" and answer["heldBy"]["pid"] > 0
    assert got == {k: v for k, v in answer.items() if k != "heldBy"}
    clock = {"sessionId", "createdAt", "updatedAt", "heldBy"}
    assert {k: v for k, v in answer.items() if k not in clock} == {
        k: v for k, v in full.items() if k not in clock
    }
    assert list(answer) == list(full)


async def test_a_bad_first_session_create_is_refused_by_the_model(
    sidecars: SidecarFactory, tmp_path: Path
) -> None:
    client = await sidecars.start()
    with pytest.raises(RpcError) as refused:
        await client.request("session/create", {"title": "x" * 501, "workspaceRoots": "/w"})
    assert refused.value.code == -32602
    assert refused.value.data["code"] == "params.invalid"
    assert {e["loc"] for e in refused.value.data["errors"]} == {"title", "workspaceRoots"}
    assert (await client.request("session/list", {}))["sessions"] == []
    assert await client.close() == 0


#: Keys that are not text (a lone surrogate, sent escaped as ``JSON.stringify`` sends it):
#: a string value keeps its surrogate, a key cannot be stored or sent back as UTF-8.
ODD_KEYS = {"title": "odd", "meta": {"v": "\ud800", "n": {"x\udfff": [1]}}}


@pytest.mark.parametrize("step", ["before-loop", "in-loop"])
async def test_a_first_session_create_with_odd_keys_is_refused_as_the_full_route_refuses_it(
    sidecars: SidecarFactory, tmp_path: Path, step: str
) -> None:
    """The light route hands a ``meta`` whose keys are not text over to the full route: the
    first create over stdio is refused as a later one (pygls' route) is, writing nothing."""
    with pytest.raises(RpcError) as first:
        await answer_and_modules(sidecars, tmp_path, "session/create", step, ODD_KEYS)
    client = await sidecars.start()
    _, held = client.start_request("run/list", {})  # what follows is pygls' (see above)
    with pytest.raises(RpcError) as full:
        await client.request("session/create", ODD_KEYS)
    await held
    assert (await client.request("session/list", {}))["sessions"] == []
    assert await client.close() == 0
    assert first.value.code == full.value.code == -32602
    assert first.value.data == full.value.data
    assert first.value.data["code"] == "params.invalid"
    assert "lone surrogate" in json.dumps(first.value.data)
