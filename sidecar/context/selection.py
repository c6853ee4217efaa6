"""Selection within the budget: each stage offers its items to the budget and writes their
ledger items.

Selection fills ``available input = window - reserved output - margin`` in priority order:
harness (fragments, environment), tools, the current user turn (never evicted: if it alone
does not fit, the answer is ``context.budget_exceeded``), pins, project instructions (closest
first), activated skills, the skills catalog, host sources (by priority), the compaction
summary, then the transcript: old tool results masked (``sidecar.context.masking``), then
the history window (``sidecar.context.window``: whole groups, starting on a user turn, moving
by a quantum and holding still in between).  An item larger than the whole budget is
``blocked``; one that no longer fits is a ``candidate``; nothing is ever truncated.  A pin on
any entry of a call/result group pins the whole group.  A summary that is not shown gives way
to the history it stands for: that history joins the transcript walk, and the summary's
ledger reason and a ``context.summary_omitted`` diagnostic say so.

:class:`Selection` holds the budget, the ledger and the stages; the order the stages run in
and the answer made of what they kept are :mod:`sidecar.context.assemble`'s.
"""

from __future__ import annotations

import json
from collections import defaultdict
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import xxhash

from protocol.errors import ErrorCode
from sidecar.context.assembly_inputs import SectionInput
from sidecar.context.batch_scale import working_scale
from sidecar.context.ledger import item_id, ledger_item
from sidecar.context.limits import available_input
from sidecar.context.masking import (
    RECALL_TOOL,
    masking_state,
    plan_masking,
    shown_tokens_between,
)
from sidecar.context.tokens import Tokenizer, count_entries
from sidecar.context.transcript import Group, TranscriptRange, group_bounds, iter_groups
from sidecar.context.user_messages import hidden_user_messages, room_for_users
from sidecar.context.window import Caps, select_window
from sidecar.errors import InvalidRequestError

if TYPE_CHECKING:
    from sidecar.context.assembly_inputs import AssemblyInputs
    from sidecar.context.window_hold import Grids

__all__ = ["AUTO_COMPACT_SHARE", "Selection"]

#: Share of the available input at which compaction is advised (thndrs: 92).
AUTO_COMPACT_SHARE = 0.92


#: Token counts of section texts (fragments, instructions, ...) by (tokenizer, text hash):
#: the same text is counted once per process.
_SECTION_COUNTS: dict[tuple[str, str], int] = {}
_SECTION_COUNTS_MAX = 4096


def _count_cached(tokenizer: Tokenizer, digest: str, text: str) -> int:
    key = (tokenizer.info.id, digest)
    hit = _SECTION_COUNTS.get(key)
    if hit is None:
        if len(_SECTION_COUNTS) >= _SECTION_COUNTS_MAX:
            _SECTION_COUNTS.clear()
        hit = _SECTION_COUNTS[key] = tokenizer.count(text)
    return hit


class _Budget:
    def __init__(self, available: int) -> None:
        self.available = available
        self.remaining = available
        self.categories: dict[str, int] = defaultdict(int)

    def take(self, tokens: int, category: str, *, force: bool = False) -> tuple[str, str]:
        """Try to spend ``tokens``; return (visibility, reason)."""
        if tokens > self.available:
            return "blocked", f"larger than the whole input budget ({tokens} > {self.available})"
        if tokens > self.remaining and not force:
            return "candidate", f"does not fit in the remaining budget ({self.remaining} left)"
        self.remaining -= tokens
        self.categories[category] += tokens
        return "visible", ""


class Selection:
    """The budget, the ledger and the selection stages of one assembly."""

    def __init__(self, inp: AssemblyInputs) -> None:
        self.inp = inp
        self.tok = inp.tokenizer
        self.budget = _Budget(available_input(inp.limits, inp.calibration.factor))
        self.ledger: list[dict[str, Any]] = []
        self.sections: dict[str, dict[str, Any]] = {}
        self.diagnostics: list[dict[str, Any]] = list(inp.diagnostics)
        self.window_state: dict[str, Any] = {}
        self.window_grids: Grids = {}
        self.masking_state: dict[str, Any] | None = None
        self.summary_shown = True
        self.turn_output: list[int] = []
        """Tokens of each tool-result message of the turn in progress (:meth:`_turn`)."""
        """False once a compaction summary was offered and not shown: the history it stands
        for is then offered to the transcript walk instead."""

    # --- counting --------------------------------------------------------------------------

    def count_text(self, text: str) -> int:
        digest = xxhash.xxh3_64_hexdigest(text.encode("utf-8", "surrogatepass"))
        return _count_cached(self.tok, digest, text)

    def count_message(self, message: dict[str, Any]) -> int:
        return count_entries(self.tok, [{"kind": "message", "content": message["content"]}])[0]

    # --- ledger ----------------------------------------------------------------------------

    def record(
        self,
        kind: str,
        key: str,
        visibility: str,
        reason: str,
        tokens: int,
        locator: str | None = None,
        first: int | None = None,
        last: int | None = None,
    ) -> dict[str, Any]:
        item = ledger_item(kind, key, visibility, reason, tokens, locator, first, last)
        self.ledger.append(item)
        return item

    def offer(self, section: SectionInput, reason: str, *, force: bool = False) -> dict[str, Any]:
        """Offer a system section to the budget; returns its ledger item."""
        tokens = self.count_text(section.text)
        if self.inp.controls.is_dropped(
            section.ledger_kind, section.locator, item_id(section.ledger_kind, section.id)
        ):
            return self.record(
                section.ledger_kind,
                section.id,
                "dropped",
                "dropped by a drop entry",
                tokens,
                section.locator,
            )
        visibility, why = self.budget.take(tokens, section.category, force=force)
        if visibility == "visible":
            if section.pinned:
                visibility = "pinned"
            self.sections[section.id] = {
                "id": section.id,
                "category": section.category,
                "title": section.title,
                "text": section.text,
                "tokens": tokens,
                "hash": xxhash.xxh3_128_hexdigest(section.text.encode("utf-8", "surrogatepass")),
                "provenance": section.provenance,
            }
            why = reason
        return self.record(
            section.ledger_kind, section.id, visibility, why, tokens, section.locator
        )

    # --- stages ----------------------------------------------------------------------------

    def _tools(self) -> list[dict[str, Any]]:
        kept: list[dict[str, Any]] = []
        for tool in self.inp.tools:
            text = json.dumps(tool, ensure_ascii=False, separators=(",", ":"))
            tokens = self.count_text(text)
            visibility, why = self.budget.take(tokens, "tools")
            if visibility == "visible":
                kept.append(tool)
                why = "tool offered to the model"
            self.record("tool", tool["name"], visibility, why, tokens, tool["name"])
        return kept

    def _user_turn(self) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "role": "user",
            "content": self.inp.user_turn,
            "tokens": 0,
            "provenance": [{"kind": "userTurn", "id": "userTurn"}],
        }
        msg["tokens"] = self.count_message(msg)
        if msg["tokens"] > self.budget.remaining:
            raise InvalidRequestError(
                ErrorCode.BUDGET_EXCEEDED,
                f"the user turn alone ({msg['tokens']} tokens) does not fit in the "
                f"{self.budget.remaining} tokens left of the input budget",
                details={
                    "userTurnTokens": msg["tokens"],
                    "remaining": self.budget.remaining,
                    "availableInput": self.budget.available,
                },
            )
        self.budget.take(msg["tokens"], "userTurn")
        self.record(
            "userTurn", "userTurn", "visible", "the current user turn: never evicted", msg["tokens"]
        )
        return msg

    def _turn(self) -> list[dict[str, Any]]:
        """The rounds of the turn in progress: never evicted, like the user message."""
        out = []
        for message in self.inp.turn:
            message = {**message, "tokens": self.count_message(message)}
            if message["tokens"] > self.budget.remaining:
                raise InvalidRequestError(
                    ErrorCode.BUDGET_EXCEEDED,
                    "the turn in progress no longer fits in the input budget "
                    f"({self.budget.remaining} tokens left); compact the session",
                    details={"remaining": self.budget.remaining},
                )
            self.budget.take(message["tokens"], "userTurn")
            if any(part.get("type") == "toolResult" for part in message["content"]):
                self.turn_output.append(message["tokens"])
            out.append(message)
        return out

    def _in_chat(self) -> list[tuple[int, dict[str, Any]]]:
        """Reserve room for preset components injected into the chat (like the harness)."""
        kept: list[tuple[int, dict[str, Any]]] = []
        for depth, message in self.inp.in_chat:
            message = {**message, "tokens": self.count_message(message)}
            ident = message["provenance"][0]["id"]
            visibility, why = self.budget.take(message["tokens"], "system")
            if visibility == "visible":
                kept.append((depth, message))
                why = f"preset component injected at depth {depth}"
            self.record("harness", f"component:{ident}", visibility, why, message["tokens"], ident)
        return kept

    def _candidate_range(self) -> TranscriptRange:
        head = self.inp.view.head
        compaction = self.inp.controls.compaction
        if compaction is None or not self.summary_shown:
            return TranscriptRange(((1, head),)) if head else TranscriptRange(())
        through = compaction["throughSeq"]
        keep = compaction.get("keepFromSeq")
        spans = []
        if keep is not None and keep <= through:
            spans.append((max(keep, 1), through))
        if through < head:
            spans.append((through + 1, head))
        return TranscriptRange(tuple(spans))

    def _pinned_groups(self) -> list[Group]:
        """Groups holding a pinned entry, whole: pinning a tool result pins its call too.
        A pin by a group's ledger id is one on the group's seqs (``controls``): the same path.
        A pinned group is one ledger item: its results are not listed again under their own
        ids (their tokens would be counted twice)."""
        pinned = self.inp.controls.pinned_seqs
        if not pinned:
            return []
        candidate = self._candidate_range()
        dropped = self.inp.controls.dropped_seqs
        bounds: list[tuple[int, int]] = []
        for seq in sorted(pinned):
            span = candidate.span_of(seq)
            if span is None or seq in dropped or (bounds and seq <= bounds[-1][1]):
                continue
            bounds.append(group_bounds(self.inp.view, span, seq, dropped.__contains__))
        out: list[Group] = []
        for group in iter_groups(
            self.inp.view, TranscriptRange(tuple(bounds)), dropped.__contains__, self.count_message
        ):
            visibility, why = self.budget.take(group.tokens, "pinned")
            key = group.ledger_id
            if visibility == "visible":
                out.append(group)
                visibility, why = "pinned", "pinned transcript range"
            self.record(
                "transcript",
                key,
                visibility,
                why,
                group.tokens,
                first=group.first_seq,
                last=group.last_seq,
            )
        return out

    def _summary(self) -> None:
        compaction = self.inp.controls.compaction
        if compaction is None:
            return
        text = (
            "<conversation-checkpoint><summary>"
            f"{compaction['summary']}"
            "</summary></conversation-checkpoint>"
        )
        section = SectionInput(
            id=f"summary:{compaction['seq']}",
            category="summary",
            title="Conversation checkpoint",
            text=text,
            provenance={
                "kind": "summary",
                "id": compaction["id"],
                "fromSeq": 1,
                "throughSeq": compaction["throughSeq"],
            },
            ledger_kind="summary",
        )
        offered = self.offer(section, "latest compaction summary")
        keep = compaction.get("keepFromSeq")
        archived_to = (
            (keep - 1)
            if keep is not None and keep <= compaction["throughSeq"]
            else compaction["throughSeq"]
        )
        if archived_to < 1:
            return
        if offered["visibility"] == "visible":
            self.record(
                "transcript",
                f"archived:1-{archived_to}",
                "summaryOnly",
                f"represented by the compaction summary (entry {compaction['seq']})",
                self.inp.view.tokens_between(1, archived_to),
                first=1,
                last=archived_to,
            )
            return
        # The summary stands for the archived history: when the model cannot see it, the
        # history itself is offered to the transcript walk (newest first, what fits is shown,
        # the rest is accounted as left out) rather than lost with no trace.
        self.summary_shown = False
        offered["reason"] += f"; the archived history 1-{archived_to} is offered instead"
        self.diagnostics.append(
            {
                "severity": "warning",
                "code": "context.summary_omitted",
                "path": f"compaction:{compaction['seq']}",
                "message": f"the compaction summary (entry {compaction['seq']}) is not shown: "
                f"{offered['reason']}",
            }
        )

    def _transcript(self, pinned: list[Group]) -> tuple[list[Group], dict[str, Any]]:
        """Masking, then the history window (``masking``, ``window``), within the budget."""
        inp = self.inp
        candidate = self._candidate_range()
        available = self.budget.available
        window_profile = inp.profile.history_window
        masking = inp.profile.masking_policy()
        grown = working_scale(inp.view, inp.profile, available)
        if grown is not None:  # a session of large tool rounds: a larger working budget
            window_profile = window_profile.model_copy(
                update={"working_tokens": grown.working_tokens}
            )
            masking = masking.model_copy(
                update={"protect_tokens": grown.protect_tokens, "batch_tokens": grown.batch_tokens}
            )
        plan = plan_masking(
            inp.view,
            masking,
            available,
            inp.controls,
            window_profile.token_cap(),
            recall=any(tool.get("name") == RECALL_TOOL for tool in inp.tools),
            turn_output=tuple(self.turn_output),
        )
        users_room = room_for_users(window_profile, available, self.budget.remaining)
        reserved = users_room.reserved
        caps = Caps(
            room=self.budget.remaining - reserved,
            steady_room=self.budget.remaining + self.budget.categories["userTurn"] - reserved,
            available=available,
            max_messages=users_room.max_messages,
            max_tokens=users_room.max_tokens,
            quantum=window_profile.quantum,
            floor=inp.window_floor,
            floor_grids=inp.window_grids,
            users_tokens=users_room.in_tokens,
            users_messages=users_room.in_messages,
        )
        pinned_seqs = {s for g in pinned for s in range(g.first_seq, g.last_seq + 1)}
        window = select_window(
            inp.view, candidate, inp.controls, pinned_seqs, plan, caps, self.count_message
        )
        self.ledger += window.ledger
        self.budget.take(window.tokens, "transcript", force=True)
        users: list[Group] = []
        if window_profile.keeps_user_messages():
            shown_from = (
                window.groups[0].first_seq
                if window.groups
                else (candidate.spans[0][0] if candidate.spans else inp.view.head + 1)
            )
            if window.start_seq is not None:
                shown_from = window.start_seq
            dropped = inp.controls.dropped_seqs
            group, items = hidden_user_messages(
                inp.view,
                shown_from,
                dropped | pinned_seqs,
                users_room.tokens,
                self.count_message,
                users_room.most,
            )
            self.ledger += items
            if group is not None:
                self.budget.take(group.tokens, "summary", force=True)
                users.append(group)
        self.window_state = window.state
        self.window_grids = window.grids
        self.masking_state = masking_state(plan, window.ledger)
        # measured as shown (old tool output masked): advice to compact when masking alone
        # keeps the transcript well inside the budget would pay a model call for nothing
        transcript_tokens = sum(
            shown_tokens_between(inp.view, plan, a, b) for a, b in candidate.spans
        )
        compaction = inp.controls.compaction
        if compaction is not None and candidate.contains(compaction["seq"]):
            transcript_tokens -= inp.view.tokens(compaction["seq"])
        threshold = int(available * AUTO_COMPACT_SHARE)
        cold_share = inp.profile.cache.compact_when_cold
        cold = (  # the next request writes the prefix again anyway: compacting costs no more
            inp.cache_cold
            and cold_share is not None
            and transcript_tokens > int(available * cold_share)
        )
        reason = "threshold" if transcript_tokens > threshold else "coldCache" if cold else None
        advice: dict[str, Any] = {
            "advised": reason is not None,
            "transcriptTokens": transcript_tokens,
            "thresholdTokens": threshold,
            "reason": reason,
        }
        if window.keep_from is not None:
            advice["keepFromSeq"] = window.keep_from
        return users + sorted(window.groups + pinned, key=attrgetter("first_seq")), advice
