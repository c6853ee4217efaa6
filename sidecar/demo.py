"""``context-sidecar demo``: one real scenario through one real sidecar process.

It starts ``context-sidecar serve`` as a child process (exactly as an editor would), creates
a session rooted at the current directory, appends a short conversation in which the
assistant calls a tool and gets its result, reads the history back with cached token counts,
counts the tokens of a text, and shows what the sidecar advertised at ``initialize``.  The
store is a temporary directory unless ``--store`` is given.
"""

from __future__ import annotations

import asyncio
import io
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from protocol import methods as m
from protocol._base import dump_wire
from protocol.entries import MessageInput, TextPart, ToolCallPart, ToolResultPart
from protocol.sessions import SessionAppendParams, SessionCreateParams, SessionReadParams
from protocol.tokens import TokensCountParams
from sidecar.client import SidecarClient
from sidecar.inspect import render_snapshot
from sidecar.store import Store

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["contract_line", "run_demo"]


def _conversation() -> list[Any]:
    return [
        MessageInput(
            kind="message",
            role="user",
            content=[TextPart(type="text", text="What does this repository's Makefile offer?")],
        ),
        MessageInput(
            kind="message",
            role="assistant",
            content=[
                TextPart(type="text", text="Let me read it."),
                ToolCallPart(
                    type="toolCall",
                    call_id="call_1",
                    name="read_file",
                    arguments={"path": "Makefile"},
                ),
            ],
        ),
        MessageInput(
            kind="message",
            role="user",
            content=[
                ToolResultPart(
                    type="toolResult",
                    call_id="call_1",
                    content=[TextPart(type="text", text=_makefile_excerpt())],
                )
            ],
        ),
        MessageInput(
            kind="message",
            role="assistant",
            content=[
                TextPart(
                    type="text",
                    text="Two commands: `make demo` runs this scenario, `make test` runs the "
                    "linters, the type checker, the contract drift check and the test suite.",
                )
            ],
        ),
    ]


def _makefile_excerpt() -> str:
    path = Path("Makefile")
    if path.is_file():
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(lines[:12])
    return "(no Makefile in the current directory)"


def _preview(entry: dict[str, Any]) -> str:
    parts = []
    for part in entry.get("content", []):
        kind = part["type"]
        if kind == "text":
            parts.append(part["text"].replace("\n", " ")[:60])
        elif kind == "toolCall":
            parts.append(f"[toolCall {part['name']}({part['arguments']}) id={part['callId']}]")
        elif kind == "toolResult":
            text = " ".join(p.get("text", "") for p in part["content"]).replace("\n", " ")
            parts.append(f"[toolResult id={part['callId']}] {text[:40]}…")
    return " ".join(parts)


async def _two_turns(
    client: SidecarClient, session_id: str, root: Path, say: Callable[..., None]
) -> None:
    """Freeze turn 1, snapshot it, let the turn happen, freeze turn 2, snapshot, diff."""
    freeze = {
        "sessionId": session_id,
        "userTurn": [{"type": "text", "text": "Add a `make bench` target too."}],
        "attachments": [{"kind": "file", "path": "Makefile"}],
        "components": [
            {
                "identifier": "persona",
                "content": "You are pairing with {{user}}. {{setvar::turn::1}}",
            }
        ],
        "macroContext": {"user": "the reader"},
        "tools": [
            {
                "name": "read_file",
                "description": "Read a workspace file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            }
        ],
    }
    frozen = await client.request("input/freeze", freeze)
    say(f"▶ input/freeze → {frozen['inputId']} (git blob id of its canonical JSON)")
    item = frozen["input"]["attachments"][0]
    say(f"  attachment {item['path']} → blob {item['blob'][:12]}… (same id as git hash-object)")
    first = await client.request(
        "snapshot/assemble", {"sessionId": session_id, "inputId": frozen["inputId"]}
    )
    say(f"▶ snapshot/assemble → {first['snapshotId']}")
    say()
    store = Store(root, read_only=True)
    try:
        buffer = io.StringIO()
        render_snapshot(store, first["snapshotId"], buffer)
        for line in buffer.getvalue().splitlines():
            say("  " + line)
    finally:
        store.close()
    say()
    await client.request(
        "session/append",
        {
            "sessionId": session_id,
            "entries": [
                {"kind": "message", "role": "user", "content": freeze["userTurn"]},
                {
                    "kind": "message",
                    "role": "assistant",
                    "content": [
                        {
                            "type": "text",
                            "text": "Added `bench:` running `python -m bench.assembly`.",
                        }
                    ],
                },
            ],
        },
    )
    second_input = await client.request(
        "input/freeze",
        {**freeze, "userTurn": [{"type": "text", "text": "Now mention it in the README."}]},
    )
    second = await client.request(
        "snapshot/assemble", {"sessionId": session_id, "inputId": second_input["inputId"]}
    )
    diff = second["diff"]
    say(f"▶ turn 2: snapshot/assemble → {second['snapshotId']}")
    say(
        f"  diff vs turn 1: {diff['prefixUnits']} leading units identical = "
        f"{diff['prefixTokens']} tokens a prompt cache can serve; messages "
        f"{diff['messagesBefore']} → {diff['messagesAfter']}; sections changed: "
        f"{', '.join(diff['sectionsChanged']) or 'none'}"
    )


def _event_detail(kind: str, payload: dict[str, Any]) -> str:
    if kind in ("run.statusChanged", "run.completed"):
        return str(payload["status"])
    if kind == "context.assembled":
        return f"snapshot {payload['snapshotId'][:12]}…, {payload['dashboard']['used']} tokens"
    if kind == "model.delta":
        return repr(payload.get("text", ""))
    if kind == "model.completed":
        return f"stop={payload['stopReason']}"
    if kind == "tool.callRequested":
        return f"{payload['name']}({payload['arguments']})"
    if kind == "tool.resultStored":
        return f"seq {payload['seq']}, error={payload['isError']}"
    if kind == "history.appended":
        return f"{payload['role']} → seq {payload['seqs'][0]}"
    return ""


async def _agent_turn(client: SidecarClient, session_id: str, say: Callable[..., None]) -> None:
    """A scripted agent turn: the model asks for a tool, this client runs it, the model
    answers; every event is printed as it streams."""
    done = asyncio.Event()

    async def execute(params: Any) -> Any:
        path = anyio.Path(params["arguments"]["path"])
        if path.is_absolute() or ".." in path.parts or not await path.is_file():
            return {"content": [{"type": "text", "text": f"no such file: {path}"}], "isError": True}
        text = await path.read_text(encoding="utf-8", errors="replace")
        return {"content": [{"type": "text", "text": "\n".join(text.splitlines()[:8])}]}

    def show(method: str, params: Any) -> None:
        if method != "run/event":
            return
        kind = params["type"]
        say(f"  #{params['seq']:<3} {kind:<20} {_event_detail(kind, params['payload'])}")
        if kind == "run.completed":
            done.set()

    client.on_request("tool/execute", execute)
    client.on_notification(show)
    script = {
        "rounds": [
            {
                "deltas": ["Let me look at ", "the Makefile."],
                "toolCalls": [{"name": "read_file", "arguments": {"path": "Makefile"}}],
                "usage": {"inputTokens": 1200, "outputTokens": 20, "cacheReadTokens": 1024},
            },
            {
                "deltas": ["It has `make demo` ", "and `make test`."],
                "usage": {"inputTokens": 1400, "outputTokens": 12, "cacheReadTokens": 1200},
            },
        ]
    }
    started = await client.request(
        "run/start",
        {
            "sessionId": session_id,
            "userTurn": [{"type": "text", "text": "What targets does the Makefile have?"}],
            "tools": [
                {
                    "name": "read_file",
                    "description": "Read a workspace file.",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                }
            ],
            "script": script,
        },
    )
    say(f"▶ run/start → {started['runId']} (scripted model; this demo runs the tool)")
    await asyncio.wait_for(done.wait(), 30)
    run = await client.request("run/get", {"runId": started["runId"]})
    say(f"  run {run['status']} after {run['rounds']} model calls; usage {run['usage']}")
    say()


def contract_line(caps: dict[str, Any]) -> str:
    """The demo's line on the contract the server speaks (quoted in the README, and held to
    it by ``tests/protocol/test_export.py``)."""
    return (
        f"  protocol v{caps['protocolVersion']}, server {caps['serverVersion']}, "
        f"schema {caps['schemaHash'][:12]}…, {len(caps['methods'])} methods"
    )


async def run_demo(store: Path | None, out: TextIO) -> int:
    def say(line: str = "") -> None:
        out.write(line + "\n")
        out.flush()

    with tempfile.TemporaryDirectory(prefix="context-sidecar-demo-") as tmp:
        root = store or Path(tmp) / "store"
        started = time.perf_counter()
        client = await SidecarClient.spawn(store=root)
        async with client:
            caps = client.capabilities
            say(
                f"▶ started context-sidecar (pid {client.process.pid}) over stdio in "
                f"{(time.perf_counter() - started) * 1000:.0f} ms"
            )
            say(contract_line(caps))
            say(f"  store: {caps['storePath']}")
            say()

            session = await client.call(
                m.SESSION_CREATE,
                SessionCreateParams(
                    title="demo: what's in the Makefile", workspace_roots=[os.getcwd()]
                ),
            )
            say(f"▶ session/create → {session.session_id}")
            say(f"  title: {session.title!r}, root: {session.workspace_roots[0]}")
            say()

            appended = await client.call(
                m.SESSION_APPEND,
                SessionAppendParams(session_id=session.session_id, entries=_conversation()),
            )
            say(
                f"▶ session/append → {len(appended.appended)} entries, durable; "
                f"headSeq {appended.head_seq}"
            )
            say()

            page = await client.call(
                m.SESSION_READ, SessionReadParams(session_id=session.session_id, with_tokens=True)
            )
            say("▶ session/read (withTokens) →")
            for entry in map(dump_wire, page.entries):
                tokens = next(iter(entry["tokens"].values()))
                say(f"  #{entry['seq']} {entry['role']:<9} {tokens:>4} tok  {_preview(entry)}")
            say()

            counted = await client.call(
                m.TOKENS_COUNT,
                TokensCountParams(texts=["The sidecar decides what the model sees."]),
            )
            say(
                f"▶ tokens/count → {counted.total} tokens "
                f"({counted.tokenizer.id}, exact={counted.tokenizer.exact})"
            )
            say()
            await _two_turns(client, session.session_id, root, say)
            say()
            await _agent_turn(client, session.session_id, say)
            say("✔ demo complete: a real sidecar process, a real store on disk, real tokenizer.")
    return 0
