"""``/rewind``: the session's checkpoints of its workspace, and a restore of one, as chat text.

A composition of ``serve``'s own methods, as every slash command is
(:mod:`sidecar.acp.commands`):

- ``/rewind``: ``checkpoint/list``, numbered, newest first: the turn each stands in (the first
  line of its user message, read with ``session/read``), when, why (the turn, or the tool
  call it stands before) and how many files differ from it now.
- ``/rewind N``: ``checkpoint/diff`` of checkpoint ``N``: what restoring its files would
  change, per file, with the unified diffs (bounded), and the commands that restore it.
- ``/rewind N code|conversation|both [force]``: ``checkpoint/restore`` (``code``: the files;
  ``conversation``: a new session forked before the checkpoint's turn; ``both``).  Conflicts
  (files changed outside the agent since) are listed and nothing is written; ``force``
  overwrites them.  The answer says what was restored, the checkpoint that undoes it, and,
  for a conversation, the new session's id and how to open it.

Decision: numbers count from the session's oldest checkpoint (``total`` is the newest), so
the numbers of a list stay right while the session goes on (a later turn adds checkpoints
above them); only retention (``checkpoints.keep``) dropping the oldest moves them.  A
checkpoint id (``ckpt_…``) is accepted wherever a number is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from acp import RequestError

from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from sidecar.acp.extensions import ServeMethods

__all__ = ["HINT", "Rewind", "RewindRequest", "parse_rewind"]

logger = logging.getLogger(__name__)

HINT = "N code|conversation|both [force]"
#: The most checkpoints one list shows (``checkpoint/list``'s bound).
_LIST_LIMIT = 1000
#: The unified diffs ``/rewind N`` shows, together.
_DIFF_BYTES = 24 * 1024
_TURN_CHARS = 72
_MODES: dict[str, tuple[bool, bool]] = {
    "code": (True, False),
    "files": (True, False),
    "conversation": (False, True),
    "both": (True, True),
}
_ACTIONS = {"written": "written back", "deleted": "deleted", "created": "recreated"}
_UNDO = {"added": "deleted", "modified": "put back", "deleted": "recreated"}


@dataclass(frozen=True, slots=True)
class RewindRequest:
    """What ``/rewind``'s argument asks for; ``which`` None: the list."""

    which: str | None = None
    """A number as the list shows it, or a checkpoint id."""
    mode: Literal["code", "conversation", "both"] | None = None
    force: bool = False


def parse_rewind(argument: str) -> RewindRequest | str:
    """The request, or the usage text when ``argument`` is not one."""
    words = argument.split()
    if not words:
        return RewindRequest()
    which, *rest = words
    force = bool(rest) and rest[-1].lower() == "force"
    if force:
        rest = rest[:-1]
    if len(rest) > 1 or not (which.isdigit() or which.startswith("ckpt_")):
        return _USAGE
    if not rest:
        return _USAGE if force else RewindRequest(which)
    files, conversation = _MODES.get(rest[0].lower(), (False, False))
    if not (files or conversation):
        return _USAGE
    mode: Literal["code", "conversation", "both"] = (
        "both" if files and conversation else "code" if files else "conversation"
    )
    return RewindRequest(which, mode, force)


_USAGE = (
    "Usage: `/rewind` lists the checkpoints; `/rewind N` shows what restoring checkpoint N "
    "would change; `/rewind N code` puts the files back, `/rewind N conversation` forks the "
    "conversation before that turn, `/rewind N both` does both; add `force` to overwrite "
    "files changed outside the agent.\n"
)


class Rewind:
    """``/rewind`` over ``serve``'s methods."""

    def __init__(self, methods: ServeMethods) -> None:
        self.methods = methods

    async def answer(self, session_id: str, argument: str) -> str:
        request = parse_rewind(argument)
        if isinstance(request, str):
            return request
        try:
            listed = await self.methods.call(
                "checkpoint/list", {"sessionId": session_id, "limit": _LIST_LIMIT}
            )
            checkpoints: list[dict[str, Any]] = listed["checkpoints"]
            total = int(listed["total"])
            if request.which is None:
                return await self._list(session_id, checkpoints, total)
            found = _find(checkpoints, total, request.which)
            if found is None:
                return f"No checkpoint {request.which} in this session (`/rewind` lists them).\n"
            number, checkpoint = found
            if request.mode is None:
                return await self._preview(session_id, number, checkpoint)
            return await self._restore(session_id, number, checkpoint, request)
        except RequestError as exc:
            said = _said(exc)
            if said is None:
                raise
            return said

    # --- the list ------------------------------------------------------------------------

    async def _list(self, session_id: str, checkpoints: list[dict[str, Any]], total: int) -> str:
        if not checkpoints:
            return (
                "No checkpoints yet: one is taken before the agent first changes the workspace "
                "in a turn, and before every edit and command.\n"
            )
        turns = await self._turn_texts(session_id, checkpoints)
        lines = [f"**Checkpoints** of this session, newest first ({total}):", ""]
        for index, checkpoint in enumerate(checkpoints):
            lines.append(f"{total - index}. {_describe(checkpoint, turns)}")
        lines += [
            "",
            "`/rewind N` shows what restoring checkpoint N would change; `/rewind N code` puts "
            "the files back, `/rewind N conversation` forks the conversation before that turn "
            "(to edit the prompt and send it again), `/rewind N both` does both.",
        ]
        return "\n".join(lines) + "\n"

    async def _turn_texts(
        self, session_id: str, checkpoints: list[dict[str, Any]]
    ) -> dict[int, str]:
        """The first line of each turn's user message, by its seq."""
        texts: dict[int, str] = {}
        for seq in {int(c["turnSeq"]) for c in checkpoints if c.get("turnSeq") is not None}:
            texts[seq] = await self._turn_text(session_id, seq)
        return texts

    async def _turn_text(self, session_id: str, seq: int) -> str:
        page = await self.methods.call(
            "session/read", {"sessionId": session_id, "afterSeq": seq - 1, "limit": 1}
        )
        entries = page.get("entries") or []
        if not entries:
            return ""
        parts = entries[0].get("content") or []
        text = " ".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")
        return text.strip()

    # --- one checkpoint ------------------------------------------------------------------

    async def _preview(self, session_id: str, number: int, checkpoint: dict[str, Any]) -> str:
        diff = await self.methods.call(
            "checkpoint/diff",
            {
                "sessionId": session_id,
                "checkpointId": checkpoint["checkpointId"],
                "maxBytes": _DIFF_BYTES,
            },
        )
        turns = await self._turn_texts(session_id, [checkpoint])
        lines = [f"**Checkpoint {number}**: {_describe(checkpoint, turns)}", ""]
        files: list[dict[str, Any]] = diff["files"]
        if not files:
            lines.append("The files are as this checkpoint holds them: `code` changes nothing.")
        else:
            lines.append(f"Restoring its files would change {len(files)}:")
            lines += [f"- `{f['path']}`: {_undo_of(f)}" for f in files]
            shown = [f for f in files if f.get("diff")]
            if shown:
                lines += ["", "Changes since the checkpoint (restoring undoes them):", ""]
                for f in shown:
                    lines += [_fence(str(f["diff"]), "diff"), ""]
            if diff.get("truncated"):
                lines.append("(some diffs left out: too long to show here)")
        lines += [
            "",
            f"`/rewind {number} code` puts the files back, `/rewind {number} conversation` "
            f"forks the conversation before its turn, `/rewind {number} both` does both.",
        ]
        return "\n".join(lines) + "\n"

    async def _restore(
        self, session_id: str, number: int, checkpoint: dict[str, Any], request: RewindRequest
    ) -> str:
        files, conversation = _MODES[request.mode or "both"]
        result = await self.methods.call(
            "checkpoint/restore",
            {
                "sessionId": session_id,
                "checkpointId": checkpoint["checkpointId"],
                "files": files,
                "conversation": conversation,
                "force": request.force,
            },
        )
        logger.info(
            "/rewind %s %s in %s: %s", number, request.mode, session_id, result.get("status")
        )
        if result["status"] == "conflicts":
            conflicts = result.get("conflicts") or []
            lines = [
                f"**Not restored**: {len(conflicts)} file(s) changed outside the "
                "agent since; nothing was written and no session was forked.",
                "",
                *(f"- `{c['path']}`: {c['reason']}" for c in conflicts),
                "",
                f"`/rewind {number} {request.mode} force` overwrites them.",
            ]
            return "\n".join(lines) + "\n"
        lines = [f"**Rewound** to checkpoint {number} ({_why(checkpoint)})."]
        if files:
            lines.append("")
            restored = result.get("restored") or []
            if restored:
                lines.append(f"Files restored ({len(restored)}):")
                lines += [
                    f"- `{r['path']}` {_ACTIONS.get(r['action'], r['action'])}" for r in restored
                ]
            else:
                lines.append("The files were already as the checkpoint holds them.")
            lines += [
                f"- `{n['path']}` not restored: {n['reason']}"
                for n in result.get("notRestored") or []
            ]
            undo = result.get("undoCheckpointId")
            if undo and restored:
                lines += ["", await self._undo_line(session_id, str(undo))]
        forked = result.get("forkedSessionId")
        if conversation and forked:
            raw_turn = checkpoint.get("turnSeq")
            turn_seq = int(raw_turn) if raw_turn is not None else None
            head = int((await self.methods.call("session/get", {"sessionId": forked}))["headSeq"])
            before_turn = turn_seq is not None and head == turn_seq - 1
            turn = await self._turn_text(session_id, turn_seq) if turn_seq and before_turn else ""
            what = "before that turn" if before_turn else f"through seq {head}"
            lines += [
                "",
                f"The conversation {what} is a new session, `{forked}` (this one is "
                "unchanged): open it from your editor's list of sessions (ACP `session/load` "
                "of that id).",
            ]
            if turn:
                lines += [
                    "",
                    "The prompt of that turn, to edit and send again there:",
                    "",
                    _fence(turn, "text"),
                ]
        return "\n".join(lines) + "\n"

    async def _undo_line(self, session_id: str, undo_id: str) -> str:
        listed = await self.methods.call(
            "checkpoint/list", {"sessionId": session_id, "limit": _LIST_LIMIT}
        )
        total = int(listed["total"])
        for index, c in enumerate(listed["checkpoints"]):
            if c["checkpointId"] == undo_id:
                return f"Undo with `/rewind {total - index} code` (taken before restoring)."
        return f"Undo with `/rewind {undo_id} code` (taken before restoring)."


def _find(
    checkpoints: list[dict[str, Any]], total: int, which: str
) -> tuple[int, dict[str, Any]] | None:
    """``(number, checkpoint)`` for a number as the list shows it or a checkpoint id."""
    for index, checkpoint in enumerate(checkpoints):
        number = total - index
        if which == str(number) or which == checkpoint["checkpointId"]:
            return number, checkpoint
    return None


def _why(checkpoint: dict[str, Any]) -> str:
    reason = checkpoint["reason"]
    tool = checkpoint.get("tool")
    if reason == "turn":
        return "before the turn's first change"
    if reason == "restore":
        return "before a rewind"
    return f"before `{tool}`" if tool else f"before a{'n' if reason == 'edit' else ''} {reason}"


def _describe(checkpoint: dict[str, Any], turns: dict[int, str]) -> str:
    turn_seq = checkpoint.get("turnSeq")
    turn = turns.get(int(turn_seq)) if turn_seq is not None else None
    first = (turn or "").splitlines()[0] if turn else ""
    if len(first) > _TURN_CHARS:
        first = first[: _TURN_CHARS - 1] + "…"
    where = f'turn "{first}"' if first else "outside a turn"
    changed = int(checkpoint.get("changedFiles", 0))
    since = (
        "files as now"
        if changed == 0
        else f"{changed} file{'s' if changed != 1 else ''} changed since"
    )
    not_captured = int(checkpoint.get("notCaptured", 0))
    skipped = f", {not_captured} too large to keep" if not_captured else ""
    when = str(checkpoint["createdAt"]).replace("T", " ")[:19]
    return f"{where} · {_why(checkpoint)} · {when} · {since}{skipped}"


def _undo_of(change: dict[str, Any]) -> str:
    if change.get("notCaptured"):
        return "too large when the checkpoint was taken: left as it is"
    what = f"{change['change']} since, would be {_UNDO[change['change']]}"
    return what + (" (binary)" if change.get("binary") else "")


def _fence(text: str, language: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{language}\n{text.rstrip()}\n{ticks}"


def _said(exc: RequestError) -> str | None:
    """The chat's sentence for an error a user can meet; ``None``: raise it."""
    data = exc.data if isinstance(exc.data, dict) else {}
    code = data.get("code")
    if code == ErrorCode.CHECKPOINT_NO_ROOTS:
        return "This session has no workspace root: there is nothing to rewind.\n"
    if code == ErrorCode.CHECKPOINT_TOO_LARGE:
        return f"No checkpoints here: {exc}.\n"
    if code == ErrorCode.CHECKPOINT_NOT_FOUND:
        return "That checkpoint is gone (retention, or `store/gc`): `/rewind` lists them.\n"
    return None
