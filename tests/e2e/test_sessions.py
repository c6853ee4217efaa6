"""Every session method against a real ``context-sidecar serve`` over stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import xxhash

from protocol import methods as m
from protocol.entries import (
    CompactionInput,
    ItemRef,
    MessageInput,
    NoteInput,
    PinInput,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    VariablesInput,
)
from protocol.export import PACKAGE_DIR, SCHEMA_FILE
from protocol.sessions import (
    SessionAppendParams,
    SessionCreateParams,
    SessionForkParams,
    SessionListParams,
    SessionReadParams,
    SessionRef,
    SessionRenameParams,
)
from sidecar.client import RpcError, SidecarClient
from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio


def user(text: str) -> MessageInput:
    return MessageInput(kind="message", role="user", content=[TextPart(type="text", text=text)])


def assistant(text: str) -> MessageInput:
    return MessageInput(
        kind="message", role="assistant", content=[TextPart(type="text", text=text)]
    )


async def new_session(client: SidecarClient, title: str = "t") -> str:
    session = await client.call(m.SESSION_CREATE, SessionCreateParams(title=title))
    return session.session_id


async def test_initialize_advertises_the_contract(sidecar: SidecarClient) -> None:
    caps = sidecar.capabilities
    schema = (PACKAGE_DIR / SCHEMA_FILE).read_bytes()
    assert caps["protocolVersion"] == 1
    assert caps["schemaHash"] == xxhash.xxh3_128_hexdigest(schema)
    assert caps["methods"] == [spec.name for spec in m.CLIENT_METHODS]
    # only what a client can call: not what the server sends (issue 20, item 4)
    server_sends = {"run/event", "run/lagged", "tool/execute", "approval/request"}
    assert not server_sends & set(caps["methods"])
    assert (await sidecar.request("server/info", {}))["methods"] == caps["methods"]
    assert caps["limits"]["maxMessageBytes"] > 0
    assert {t["id"] for t in caps["tokenizers"]} >= {"cl100k_base", "estimate"}
    assert caps["defaultTokenizer"] == "cl100k_base"


async def test_create_get_rename_delete(sidecar: SidecarClient, tmp_path: Path) -> None:
    created = await sidecar.call(
        m.SESSION_CREATE,
        SessionCreateParams(title="first", workspace_roots=[str(tmp_path)], meta={"ui": 1}),
    )
    assert created.session_id.startswith("ses_") and created.head_seq == 0
    assert created.workspace_roots == [str(tmp_path)]
    got = await sidecar.call(m.SESSION_GET, SessionRef(session_id=created.session_id))
    assert got == created

    renamed = await sidecar.call(
        m.SESSION_RENAME, SessionRenameParams(session_id=created.session_id, title="second")
    )
    assert renamed.title == "second" and renamed.updated_at >= created.updated_at

    deleted = await sidecar.call(m.SESSION_DELETE, SessionRef(session_id=created.session_id))
    assert deleted.deleted
    with pytest.raises(RpcError) as err:
        await sidecar.call(m.SESSION_GET, SessionRef(session_id=created.session_id))
    assert err.value.code == -32000 and err.value.data_code == "session.not_found"
    assert err.value.data["details"]["sessionId"] == created.session_id


async def test_relative_workspace_root_is_refused(sidecar: SidecarClient) -> None:
    with pytest.raises(RpcError) as err:
        await sidecar.request("session/create", {"workspaceRoots": ["relative/path"]})
    assert err.value.code == -32602 and err.value.data_code == "params.invalid"


async def test_list_pages_by_cursor_newest_first(sidecar: SidecarClient) -> None:
    ids = [await new_session(sidecar, f"s{i}") for i in range(5)]
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await sidecar.call(m.SESSION_LIST, SessionListParams(cursor=cursor, limit=2))
        seen += [s.session_id for s in page.sessions]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert pages == 3
    assert seen == list(reversed(ids))


async def test_append_assigns_seqs_and_read_returns_entries(sidecar: SidecarClient) -> None:
    sid = await new_session(sidecar)
    entries: list[Any] = [
        user("hello"),
        MessageInput(
            kind="message",
            role="assistant",
            content=[
                ToolCallPart(type="toolCall", call_id="c1", name="ls", arguments={"dir": "."})
            ],
        ),
        MessageInput(
            kind="message",
            role="user",
            content=[
                ToolResultPart(
                    type="toolResult",
                    call_id="c1",
                    content=[TextPart(type="text", text="a\nb")],
                )
            ],
        ),
        PinInput(kind="pin", target=ItemRef(kind="file", locator="src/app.py")),
        VariablesInput(kind="variables", values={"mood": "calm"}),
        NoteInput(kind="note", text="host note"),
        CompactionInput(kind="compaction", summary="said hello", through_seq=2, keep_from_seq=2),
    ]
    result = await sidecar.call(
        m.SESSION_APPEND, SessionAppendParams(session_id=sid, entries=entries)
    )
    assert result.head_seq == 7
    assert [r.seq for r in result.appended] == [1, 2, 3, 4, 5, 6, 7]
    assert len({r.id for r in result.appended}) == 7

    page = await sidecar.call(m.SESSION_READ, SessionReadParams(session_id=sid))
    assert [e.seq for e in page.entries] == [1, 2, 3, 4, 5, 6, 7]
    assert [e.kind for e in page.entries] == [
        "message",
        "message",
        "message",
        "pin",
        "variables",
        "note",
        "compaction",
    ]
    assert page.entries[1].model_dump()["content"][0]["arguments"] == {"dir": "."}
    assert page.has_more is False and page.head_seq == 7
    # the same content gets the same hash; meta does not change it
    again = await sidecar.request(
        "session/append",
        {"sessionId": sid, "entries": [{**_wire(user("hello")), "meta": {"x": 1}}]},
    )
    assert again["appended"][0]["hash"] == result.appended[0].hash


def _wire(model: Any) -> dict[str, Any]:
    from protocol._base import dump_wire

    return dump_wire(model)


async def test_read_windows(sidecar: SidecarClient) -> None:
    sid = await new_session(sidecar)
    await sidecar.call(
        m.SESSION_APPEND,
        SessionAppendParams(session_id=sid, entries=[user(f"m{i}") for i in range(1, 11)]),
    )

    async def seqs(**kw: Any) -> tuple[list[int], bool]:
        page = await sidecar.call(m.SESSION_READ, SessionReadParams(session_id=sid, **kw))
        return [e.seq for e in page.entries], page.has_more

    assert await seqs(limit=3) == ([1, 2, 3], True)
    assert await seqs(after_seq=3, limit=3) == ([4, 5, 6], True)
    assert await seqs(after_seq=8) == ([9, 10], False)
    assert await seqs(before_seq=11, limit=3) == ([8, 9, 10], True)
    assert await seqs(before_seq=3, limit=5) == ([1, 2], False)
    assert await seqs(after_seq=2, before_seq=6) == ([3, 4, 5], False)
    assert await seqs(after_seq=2, before_seq=6, limit=2) == ([3, 4], True)
    assert await seqs(after_seq=10) == ([], False)


async def test_expected_head_seq_conflict_writes_nothing(sidecar: SidecarClient) -> None:
    sid = await new_session(sidecar)
    await sidecar.call(m.SESSION_APPEND, SessionAppendParams(session_id=sid, entries=[user("a")]))
    ok = await sidecar.call(
        m.SESSION_APPEND,
        SessionAppendParams(session_id=sid, entries=[user("b")], expected_head_seq=1),
    )
    assert ok.head_seq == 2
    with pytest.raises(RpcError) as err:
        await sidecar.call(
            m.SESSION_APPEND,
            SessionAppendParams(session_id=sid, entries=[user("c")], expected_head_seq=1),
        )
    assert err.value.data_code == "store.conflict"
    assert err.value.data["details"]["headSeq"] == 2
    session = await sidecar.call(m.SESSION_GET, SessionRef(session_id=sid))
    assert session.head_seq == 2


async def test_entries_may_only_refer_backwards(sidecar: SidecarClient) -> None:
    sid = await new_session(sidecar)
    await sidecar.call(m.SESSION_APPEND, SessionAppendParams(session_id=sid, entries=[user("a")]))
    with pytest.raises(RpcError) as err:
        await sidecar.call(
            m.SESSION_APPEND,
            SessionAppendParams(
                session_id=sid,
                entries=[CompactionInput(kind="compaction", summary="s", through_seq=2)],
            ),
        )
    assert err.value.data_code == "session.seq_out_of_range"
    assert (await sidecar.call(m.SESSION_GET, SessionRef(session_id=sid))).head_seq == 1


async def test_fork_copies_history_up_to_a_seq(sidecar: SidecarClient) -> None:
    sid = await new_session(sidecar, "origin")
    await sidecar.call(
        m.SESSION_APPEND,
        SessionAppendParams(session_id=sid, entries=[user("a"), assistant("b"), user("c")]),
    )
    fork = await sidecar.call(
        m.SESSION_FORK, SessionForkParams(session_id=sid, at_seq=2, title="branch")
    )
    assert fork.head_seq == 2 and fork.title == "branch"
    assert fork.forked_from is not None and fork.forked_from.session_id == sid
    original = await sidecar.call(m.SESSION_READ, SessionReadParams(session_id=sid))
    copied = await sidecar.call(m.SESSION_READ, SessionReadParams(session_id=fork.session_id))
    assert copied.entries == original.entries[:2]

    await sidecar.call(
        m.SESSION_APPEND, SessionAppendParams(session_id=fork.session_id, entries=[user("d")])
    )
    assert (await sidecar.call(m.SESSION_GET, SessionRef(session_id=sid))).head_seq == 3
    with pytest.raises(RpcError) as err:
        await sidecar.call(m.SESSION_FORK, SessionForkParams(session_id=sid, at_seq=9))
    assert err.value.data_code == "session.seq_out_of_range"


async def test_history_survives_restart(sidecars: SidecarFactory) -> None:
    first = await sidecars.start()
    sid = await new_session(first)
    await first.call(m.SESSION_APPEND, SessionAppendParams(session_id=sid, entries=[user("kept")]))
    assert await first.close() == 0
    second = await sidecars.start()
    page = await second.call(m.SESSION_READ, SessionReadParams(session_id=sid))
    assert [e.model_dump()["content"][0]["text"] for e in page.entries] == ["kept"]
