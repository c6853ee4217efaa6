"""``context-sidecar import`` run as a user runs it, on real session logs, into a store that a
real ``serve`` then reads back: the messages, each recorded request's usage, the agent's
compactions, the sub-agents; a log that cannot be read is one line on stderr and exit 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

if TYPE_CHECKING:
    from sidecar.client import SidecarClient
    from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio

REAL = Path(__file__).resolve().parents[1] / "data" / "transcripts" / "real"


async def run_import(store: Path, *args: str) -> tuple[int, str, str]:
    done = await anyio.run_process(
        [sys.executable, "-m", "sidecar", "import", "--store", str(store), *args], check=False
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def history(client: SidecarClient, session_id: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    after = 0
    while True:
        page = await client.request(
            "session/read", {"sessionId": session_id, "afterSeq": after, "limit": 1000}
        )
        entries += page["entries"]
        if not page["hasMore"]:
            return entries
        after = entries[-1]["seq"]


async def test_a_pi_session_imported_and_read_back_through_serve(
    sidecars: SidecarFactory, store_dir: Path
) -> None:
    path = REAL / "pi-mono" / "before-compaction.jsonl"
    raw = [json.loads(line) for line in path.read_text().splitlines()]
    assistants = [
        o["message"] for o in raw if o["type"] == "message" and o["message"]["role"] == "assistant"
    ]
    code, out, err = await run_import(store_dir, "--json", str(path))
    assert code == 0, err
    report = json.loads(out)
    client = await sidecars.start()
    session = await client.request("session/get", {"sessionId": report["sessionId"]})
    meta = session["meta"]["transcript"]
    assert meta["format"] == "pi" and meta["sessionId"] == raw[0]["id"]
    assert meta["bill"]["requests"] == len(assistants)
    assert meta["bill"]["usd"] == pytest.approx(
        sum(a["usage"]["cost"]["total"] for a in assistants)
    )

    entries = await history(client, report["sessionId"])
    messages = [e for e in entries if e["kind"] == "message"]
    # every message line but the responses aborted before any output
    empty = sum(1 for a in assistants if not a["content"])
    lines = sum(1 for o in raw if o["type"] == "message")
    assert len(messages) == lines - empty == report["messages"]
    # every recorded request is kept: on its response, or in a note when it left none
    recorded = [
        e["meta"]["transcript"]["request"]
        for e in entries
        if "request" in (e.get("meta") or {}).get("transcript", {})
    ]
    assert [r["index"] for r in recorded] == list(range(len(assistants)))
    assert sum(r["usage"]["cacheRead"] for r in recorded) == sum(
        a["usage"]["cacheRead"] for a in assistants
    )
    assert sum(e["kind"] == "note" for e in entries) == empty
    # the agent's two compactions, each over what came before it, keeping its verbatim tail
    cuts = [e for e in entries if e["kind"] == "compaction"]
    lines_cut = [o for o in raw if o["type"] == "compaction"]
    assert [c["summary"] for c in cuts] == [o["summary"] for o in lines_cut]
    by_seq = {e["seq"]: e for e in entries}
    for cut in cuts:
        # through the last message before it (notes of silent requests may sit between)
        assert by_seq[cut["throughSeq"]]["kind"] == "message"
        between = range(cut["throughSeq"] + 1, cut["seq"])
        assert all(by_seq[s]["kind"] == "note" for s in between)
        kept = by_seq[cut["keepFromSeq"]]
        assert kept["kind"] == "message" and kept["role"] == "user"


async def test_claude_code_sub_agents_become_sessions_of_their_own(
    sidecars: SidecarFactory, store_dir: Path
) -> None:
    path = REAL / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    raw = [json.loads(line) for line in path.read_text().splitlines()]
    main_ids = {o["requestId"] for o in raw if o["type"] == "assistant" and not o["isSidechain"]}
    side_ids = {o["requestId"] for o in raw if o["type"] == "assistant" and o["isSidechain"]}
    roots = sum(1 for o in raw if o.get("isSidechain") and o.get("parentUuid") is None)
    code, out, err = await run_import(store_dir, str(path))
    assert code == 0, err
    assert f"requests     {len(main_ids)}" in out
    assert f"with sub-agents: {len(main_ids) + len(side_ids)} requests" in out
    client = await sidecars.start()
    listed = (await client.request("session/list", {}))["sessions"]
    assert len(listed) == 1 + roots
    (main,) = [s for s in listed if "parentSession" not in s["meta"]["transcript"]]
    subs = [s for s in listed if s["meta"]["transcript"].get("parentSession") == main["sessionId"]]
    assert len(subs) == roots
    assert sum(s["meta"]["transcript"]["bill"]["requests"] for s in subs) == len(side_ids)
    for sub in subs:
        first = (await history(client, sub["sessionId"]))[0]
        assert first["kind"] == "message" and first["role"] == "user"


@pytest.mark.parametrize(
    ("source", "fmt"),
    [
        (
            Path(__file__).resolve().parents[1] / "data" / "transcripts" / "codex-rollout.jsonl",
            "codex",
        ),
        (
            Path(__file__).resolve().parents[1] / "data" / "transcripts" / "opencode-export.json",
            "opencode",
        ),
    ],
)
async def test_codex_and_opencode_logs_import(
    sidecars: SidecarFactory, store_dir: Path, source: Path, fmt: str
) -> None:
    code, out, err = await run_import(store_dir, "--json", str(source))
    assert code == 0, err
    report = json.loads(out)
    assert report["format"] == fmt and report["compactions"] == 1
    client = await sidecars.start()
    entries = await history(client, report["sessionId"])
    assert sum(e["kind"] == "message" for e in entries) == report["messages"]
    assert sum(e["kind"] == "compaction" for e in entries) == 1


async def test_a_truncated_log_is_one_line_and_exit_2_and_no_session(
    sidecars: SidecarFactory, store_dir: Path, tmp_path: Path
) -> None:
    text = (REAL / "pi-mono" / "large-session.jsonl").read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(text[:30]) + "\n" + text[30][:100])
    code, out, err = await run_import(store_dir, str(cut))
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"context-sidecar import: {cut}:31: truncated: the last line is cut off mid-object"
    ]
    client = await sidecars.start()
    assert (await client.request("session/list", {}))["sessions"] == []


async def test_import_into_a_session_named_by_id(sidecars: SidecarFactory, store_dir: Path) -> None:
    client = await sidecars.start()
    sid = (await client.request("session/create", {"title": "mine"}))["sessionId"]
    await client.close()
    path = REAL / "claude-code-viewer" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
    code, out, err = await run_import(store_dir, "--session-id", sid, "--json", str(path))
    assert code == 0, err
    assert json.loads(out)["sessionId"] == sid
    code, _, err = await run_import(store_dir, "--session-id", "ses_nothere", str(path))
    assert code == 1 and len(err.splitlines()) == 1 and "refused" in err
