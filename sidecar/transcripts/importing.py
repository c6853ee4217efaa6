"""``context-sidecar import FILE``: a real agent's session log into a session of the store.

The log is read (:func:`~sidecar.transcripts.read.read_transcript`), then written through the
method table of a real sidecar started on the store (as ``call`` and ``gc`` reach it), so the
store's own rules hold: the per-session writer lease (a new session is this import's; an
existing one named with ``--session-id`` is refused while another window holds it), the
validation of every entry.

What lands in the session: every message of the main thread as a history entry (its time in
the log in ``meta.transcript.at``); each recorded request's usage in the ``meta`` of its
response message (``meta.transcript.request``), or in a note entry where the response left no
message; the agent's own compactions as compaction entries over what they summarised (pi's
kept tail as ``keepFromSeq``); what the log says of itself (format, path, cwd, the system
size, the recorded bill) in the session's ``meta.transcript``.  Sub-agent threads become
sessions of their own, named in the parent's meta.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, TextIO

from protocol import methods as m
from protocol.entries import (
    CompactionInput,
    EntryInput,
    NoteInput,
    TextPart,
)
from protocol.sessions import SessionAppendParams, SessionCreateParams, SessionRef
from sidecar.transcripts.bill import Bill, all_requests, bill_of
from sidecar.transcripts.model import Request, Transcript, TranscriptError
from sidecar.transcripts.read import read_transcript

if TYPE_CHECKING:
    from pathlib import Path

    from sidecar.client import SidecarClient

__all__ = ["import_command", "import_transcript"]

_CAMEL = {
    "cache_read": "cacheRead",
    "cache_write_5m": "cacheWrite5m",
    "cache_write_1h": "cacheWrite1h",
}

#: Entries per ``session/append`` (the method takes up to 1,000).
_BATCH = 200


def _request_meta(r: Request) -> dict[str, Any]:
    usage = {_CAMEL.get(k, k): v for k, v in asdict(r.usage).items() if v is not None}
    out: dict[str, Any] = {
        "index": r.index,
        "at": r.at,
        "model": r.model,
        "provider": r.provider,
        "usage": usage,
        "contextEnd": r.context_end,
        "outputTextTokens": r.output_text_tokens,
    }
    if r.view_start:
        out["viewStart"] = r.view_start
    if r.thinking_logged:
        out["thinkingLogged"] = True
    return out


def _title(t: Transcript) -> str:
    for message in t.messages:
        if message.role == "user":
            for part in message.content:
                if isinstance(part, TextPart) and part.text.strip():
                    first = " ".join(part.text.split())
                    return f"{t.format}: {first[:80]}"
    return f"{t.format}: {t.session_id or 'imported session'}"


def _bill_json(b: Bill) -> dict[str, Any]:
    return {
        "requests": b.requests,
        "usd": round(b.usd, 6),
        "pricedAtListPrices": b.priced,
        "input": b.input,
        "cacheRead": b.cache_read,
        "cacheWrite": b.cache_write,
        "output": b.output,
        "readShare": round(b.read_share, 4),
    }


class _Writer:
    """Appends a transcript's entries in batches, remembering each message's seq."""

    def __init__(self, client: SidecarClient, session_id: str) -> None:
        self.client = client
        self.session_id = session_id
        self.pending: list[tuple[int | None, EntryInput]] = []
        self.seq_of: dict[int, int] = {}

    def add(self, entry: EntryInput, message: int | None = None) -> None:
        self.pending.append((message, entry))

    async def flush(self) -> None:
        while self.pending:
            batch, self.pending = self.pending[:_BATCH], self.pending[_BATCH:]
            params = SessionAppendParams(session_id=self.session_id, entries=[e for _, e in batch])
            result = await self.client.call(m.SESSION_APPEND, params)
            for (message, _), ref in zip(batch, result.appended, strict=True):
                if message is not None:
                    self.seq_of[message] = ref.seq


async def _write(client: SidecarClient, session_id: str, t: Transcript) -> int:
    """Append ``t``'s entries to the session; the number of compaction entries written."""
    writer = _Writer(client, session_id)
    by_response = {r.response: r for r in t.requests if r.response is not None}
    silent: dict[int, list[Request]] = {}
    for r in t.requests:
        if r.response is None:
            silent.setdefault(r.context_end, []).append(r)
    cuts: dict[int, list[Any]] = {}
    for c in t.compactions:
        cuts.setdefault(c.message_index, []).append(c)
    written = 0
    for i in range(len(t.messages) + 1):
        for c in cuts.get(i, []):
            if i == 0:
                t.warnings.append("a compaction before any message skipped")
                continue
            await writer.flush()
            keep = None
            if c.first_kept is not None and c.first_kept < i:
                keep = writer.seq_of[c.first_kept]
            writer.add(
                CompactionInput(
                    kind="compaction",
                    summary=c.summary,
                    through_seq=writer.seq_of[i - 1],
                    keep_from_seq=keep,
                    meta={"transcript": {"at": c.at, "tokensBefore": c.tokens_before}},
                )
            )
            written += 1
        for r in silent.get(i, []):
            writer.add(
                NoteInput(
                    kind="note",
                    text=f"recorded request {r.index} left no message",
                    meta={"transcript": {"request": _request_meta(r)}},
                )
            )
        if i == len(t.messages):
            break
        message = t.messages[i]
        meta: dict[str, Any] = {"at": t.times[i]}
        if i in by_response:
            meta["request"] = _request_meta(by_response[i])
        writer.add(message.model_copy(update={"meta": {"transcript": meta}}), i)
    await writer.flush()
    return written


async def import_transcript(
    client: SidecarClient,
    t: Transcript,
    session_id: str | None = None,
    parent: str | None = None,
) -> dict[str, Any]:
    """Write ``t`` (and its sub-agents, each a session of its own) through ``client``; the
    report as JSON."""
    main_bill = bill_of(t.requests)
    total = bill_of(all_requests(t))
    meta: dict[str, Any] = {
        "format": t.format,
        "path": t.path,
        "sessionId": t.session_id,
        "cwd": t.cwd,
        "systemTokens": t.system_tokens,
        "bill": _bill_json(main_bill),
    }
    if parent is not None:
        meta["parentSession"] = parent
    if session_id is None:
        created = await client.call(
            m.SESSION_CREATE,
            SessionCreateParams(title=_title(t)[:500], meta={"transcript": meta}),
        )
        session_id = created.session_id
    else:
        await client.call(m.SESSION_GET, SessionRef(session_id=session_id))
    compactions = await _write(client, session_id, t)
    subagents = [await import_transcript(client, sub, parent=session_id) for sub in t.subagents]
    return {
        "sessionId": session_id,
        "format": t.format,
        "path": t.path,
        "sourceSessionId": t.session_id,
        "messages": len(t.messages),
        "requests": len(t.requests),
        "compactions": compactions,
        "systemTokens": t.system_tokens,
        "bill": _bill_json(main_bill),
        "totalBill": _bill_json(total),
        "subagents": subagents,
        "warnings": list(t.warnings),
    }


def _render(report: dict[str, Any], out: TextIO, indent: str = "") -> None:
    bill = report["bill"]
    system = report["systemTokens"]
    priced = (
        f", {bill['pricedAtListPrices']} priced at their model's list prices"
        if bill["pricedAtListPrices"]
        else ""
    )
    out.write(
        f"{indent}session {report['sessionId']}  ({report['format']}, {report['path']})\n"
        f"{indent}  messages     {report['messages']}\n"
        f"{indent}  requests     {report['requests']}\n"
        f"{indent}  compactions  {report['compactions']}\n"
        f"{indent}  system size  {system if system is not None else '-'} tokens (estimated)\n"
        f"{indent}  recorded bill ${bill['usd']:.4f}{priced}; read share {bill['readShare']:.1%}\n"
    )
    for warning in report["warnings"]:
        out.write(f"{indent}  warning: {warning}\n")
    for sub in report["subagents"]:
        out.write(f"{indent}  sub-agent:\n")
        _render(sub, out, indent + "    ")
    if not indent and report["subagents"]:
        total = report["totalBill"]
        out.write(f"  with sub-agents: {total['requests']} requests, ${total['usd']:.4f}\n")


async def import_command(
    path: Path,
    fmt: str | None,
    store: Path | None,
    as_json: bool,
    session_id: str | None,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """The command: 0 imported, 2 the log cannot be read, 1 the store refused."""
    from sidecar.client import RpcError, SidecarClient

    try:
        transcript = read_transcript(path, fmt)
    except TranscriptError as exc:
        err.write(f"context-sidecar import: {exc}\n")
        return 2
    client = await SidecarClient.spawn(store=store)
    try:
        report = await import_transcript(client, transcript, session_id)
    except RpcError as exc:
        code = exc.data_code or exc.code
        err.write(f"context-sidecar import: the store refused ({code}): {exc.message}\n")
        return 1
    finally:
        await client.close()
    if as_json:
        out.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    else:
        _render(report, out)
    return 0
