"""Observation masking (DESIGN.md §4 stage 5): old tool results shown as short placeholders.

Tool output is most of an agent's tokens, and an old observation is rarely needed whole
(REFERENCES.md §F: masking halves an agent's cost at an equal solve rate).  The rule:

- Measure tool output on one axis: the running sum of the tokens of every tool-result entry
  from the start of the history (kept by the store, so any position costs O(1)).  ``T`` is
  the total at the head.
- The newest ``protect`` tokens of tool output are never masked, nor the results of the newest
  ``keepTurns`` user turns (``masking.keepTurns``).  The batch line is
  ``G = floor((T - protect) / batch) * batch``; the masked boundary ``M`` is the protect line
  where the output crossed ``G`` — the end of the entry that reached ``G + protect``, less
  ``protect`` (``masking.toProtect``; ``G`` itself when it is off) — and a result entry
  whose tool output ends at or before ``M`` is shown as a placeholder.  ``M`` moves only when
  ``T`` crosses the next multiple of ``batch``, so between moves the prompt prefix stays
  byte-identical and each move frees about ``batch`` tokens (one cache re-write buys that
  much room).  A move re-writes the cache from the first newly masked result on: with
  ``toProtect`` it leaves whole only the newest ``protect`` tokens (with ``G`` alone the
  result straddling it stayed whole, was re-written, and was masked by the next move: with
  10k-token command logs and a 27k batch, most of what a move wrote).  With ``keepTurns``
  the boundary is also held before the newest turns, and follows them when they move.
- ``T`` counts the tool output of the turn in progress (``turn``: a run's later rounds) as
  if it were in history (``masking.countTurn``; it is never masked itself): the boundary
  moves on the request that brings the new output, which writes it to the cache anyway, not
  on the next turn's first request, which would write that output again.
- The boundary is a pure function of the history and the profile: no memory of earlier turns.
- Old reasoning follows the same age rule: an assistant message at or before the boundary is
  shown without its reasoning parts (a thinking model's reasoning is most of its transcript
  after tool output).  Providers need the signed reasoning of the turn in progress only
  (Anthropic: the thinking blocks of the current tool loop; "previous turns' thinking blocks
  may be omitted"), and the turn in progress is never in the masked history: it is the
  assembly's ``turn``, or the newest tool output, which ``protect`` keeps.
- A placeholder replaces the result *inside* its call/result group (providers still get a
  well-formed call/result pair): the tool's name and arguments, the original size, a preview,
  and the ledger id (``ctx_transcript_…`` of ``observation:<entry id>``) that
  ``session/recover`` takes to show it in full again.  A result that is pinned or recovered is
  never masked, nor one whose placeholder would not be smaller.

Masked groups are cached in the history index's group cache like any group: the rendering is
a function of the entries, the masked seqs and the preview length.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from sidecar.context.transcript import Group, cached, observation_id
from sidecar.store.history import SHAPE_ASSISTANT, SHAPE_CALLS, SHAPE_RESULTS, SHAPE_USER

if TYPE_CHECKING:
    from protocol.context import MaskingPolicy
    from sidecar.context.controls import ControlState
    from sidecar.context.transcript import MessageCounter
    from sidecar.store.history import HistoryView

__all__ = [
    "BATCH_SHARE",
    "BATCH_TOKENS",
    "PLACEHOLDER_TOKENS",
    "PROTECT_SHARE",
    "PROTECT_TOKENS",
    "REASONING_NOTE",
    "RECALL_TOOL",
    "MaskPlan",
    "Masked",
    "kept_whole",
    "mask_group",
    "observation_id",
    "masking_state",
    "plan_masking",
    "shown_tokens_between",
]

#: The room tool output has — the available input, or an explicit ``historyWindow.maxTokens``
#: when smaller — is split: a twelfth of it, the newest tool output, is never masked
#: (``protect``), and the boundary moves by five twelfths of it (``batch``).  So between a
#: twelfth and a half of the room is tool output shown whole, about a quarter on average, the
#: rest is for the masked history and the turns' own text.  A move re-writes the protected
#: output after the newly masked results, so a small protect keeps what a move re-writes
#: small, and a large batch keeps moves rare: each re-write buys much room.  On the bench's
#: shapes (``bench/cache.py``, a 200k window: protect ~15k, batch ~76k) this reads 94.6% of a
#: coding session from the cache at 1/6.9 of LangChain's cost, where the earlier fixed 30k /
#: 40k (OpenCode's ``PRUNE_PROTECT`` is 40k, Gemini CLI's 50k) read 92.4% at 1/6.2; on a
#: session of few turns with huge results 80.9% at 1/6.2 where 30k / 40k read 73.4% at 1/4.9.
#: Under a 60k ``maxTokens`` cap (5k / 25k) the budget's sizes would have kept the small window
#: all unmasked (the newest output reaches ``protect + batch`` before a move): coding 1/3.3 of
#: LangChain's cost with 2.3x its turns, where the budget's sizes gave 1/3.2 and 0.9x.
PROTECT_SHARE = 1 / 12
BATCH_SHARE = 5 / 12
#: Ceilings for very large windows (a 1M-token window would otherwise keep 500k tokens of
#: output whole and pay to read them every turn).
PROTECT_TOKENS = 40_000
BATCH_TOKENS = 160_000
#: The size a masked result is reckoned at on the history window's axis (a placeholder with
#: a 300-character preview is about this many tokens).
PLACEHOLDER_TOKENS = 120
#: The built-in tool that brings a masked result back (``sidecar.tools.recall``; named here,
#: as ``context`` imports no tool).
RECALL_TOOL = "recall"
#: What an assistant message that was only reasoning shows once its reasoning is left out.
REASONING_NOTE = "[earlier reasoning left out to save context]"
#: Shapes of assistant messages (with or without tool calls).
_ASSISTANT = frozenset((SHAPE_ASSISTANT, SHAPE_CALLS))
#: Characters of a call's arguments quoted in its placeholder.
_ARGUMENT_CHARS = 200


@dataclass(frozen=True, slots=True)
class MaskPlan:
    """Where the masked boundary is for one history head (see the module docstring)."""

    protect: int
    batch: int
    preview_chars: int
    tool_tokens: int
    """``T``: tool output from the start of the history to the head (and in the turn in
    progress, with ``countTurn``)."""
    grid: int
    """``floor((T - protect) / batch) * batch``: the last batch line the output crossed."""
    boundary: int
    """``M``: results whose tool output ends at or before it are masked — the grid line, or
    with ``toProtect`` the protect line where the output crossed it (``>= grid``)."""
    through_seq: int
    """The last seq whose tool output ends at or before ``boundary``."""
    exempt_seqs: frozenset[int]
    exempt_ids: frozenset[str]
    """Ledger ids of result entries (:func:`observation_id`) pinned or recovered.  A group
    pinned or recovered by its own id is exempt by its seqs (``controls`` resolves the id)."""
    recall: bool = False
    """The request offers the ``recall`` tool: placeholders name it; else they say the host
    brings a result back with ``session/recover``."""

    @property
    def lag(self) -> int:
        """Most tool output that is past ``T - protect`` but not yet masked (the batch)."""
        return min(self.batch, max(self.tool_tokens - self.protect, 0))


def plan_masking(
    view: HistoryView,
    policy: MaskingPolicy,
    available: int,
    controls: ControlState,
    max_tokens: int | None = None,
    *,
    recall: bool = False,
    turn_output: tuple[int, ...] = (),
) -> MaskPlan | None:
    """The masked boundary at the view's head, or ``None`` when masking is off
    (``max_tokens``: ``historyWindow.maxTokens``, when set; ``recall``: the request offers
    the ``recall`` tool; ``turn_output``: the tokens of each tool-result message of the turn
    in progress, in order)."""
    if policy.mode == "off":
        return None
    room = min(available, max_tokens) if max_tokens is not None else available
    protect_default = min(PROTECT_TOKENS, int(room * PROTECT_SHARE))
    batch_default = min(BATCH_TOKENS, int(room * BATCH_SHARE))
    protect = policy.protect_tokens if policy.protect_tokens is not None else protect_default
    batch = policy.batch_tokens if policy.batch_tokens is not None else max(batch_default, 1)
    in_history = view.tool_tokens_through(view.head)
    turn_ends = list(accumulate(turn_output, initial=in_history))[1:] if policy.count_turn else []
    total = turn_ends[-1] if turn_ends else in_history
    line = total - protect
    if policy.keep_turns:
        line = min(line, view.tool_tokens_through(_turn_start(view, policy.keep_turns) - 1))
    grid = max(line, 0) // batch * batch
    boundary = grid
    if policy.to_protect and grid > 0:
        boundary = min(_crossing(view, turn_ends, grid + protect) - protect, line)
    ids = {
        key.removeprefix("item:")
        for key in (*controls.pinned, *controls.recovered)
        if key.startswith("item:")
    }
    return MaskPlan(
        protect=protect,
        batch=batch,
        preview_chars=policy.preview_chars,
        tool_tokens=total,
        grid=grid,
        boundary=boundary,
        through_seq=view.last_seq_with_tool_tokens_at_most(boundary) if boundary > 0 else 0,
        exempt_seqs=frozenset(controls.pinned_seqs | controls.recovered_seqs),
        exempt_ids=frozenset(ids),
        recall=recall,
    )


def _crossing(view: HistoryView, turn_ends: list[int], point: int) -> int:
    """Where the entry (or the turn's result message) whose tool output reaches ``point`` on
    the axis ends: the output as it was when it crossed ``point``.  A function of the
    history up to that entry, so it holds still until the output crosses the next line."""
    if point <= view.tool_tokens_through(view.head):
        return view.tool_tokens_through(view.last_seq_with_tool_tokens_at_most(point - 1) + 1)
    return next(end for end in turn_ends if end >= point)


def _turn_start(view: HistoryView, turns: int) -> int:
    """The seq of the ``turns``-th newest user turn in the view (1: none so old)."""
    shapes = view.shapes
    found = 0
    for seq in range(view.head, 0, -1):
        if shapes[seq - 1] == SHAPE_USER:
            found += 1
            if found == turns:
                return seq
    return 1


def shown_tokens_between(view: HistoryView, plan: MaskPlan | None, first: int, last: int) -> int:
    """Tokens of entries ``first..last`` as shown, masked results reckoned at
    :data:`PLACEHOLDER_TOKENS` (from the store's running sums: O(1))."""
    raw = view.tokens_between(first, last)
    masked_end = min(last, plan.through_seq) if plan is not None else 0
    if masked_end < first:
        return raw
    tool = view.tool_tokens_through(masked_end) - view.tool_tokens_through(first - 1)
    return raw - tool + PLACEHOLDER_TOKENS * view.results_between(first, masked_end)


def masking_state(plan: MaskPlan | None, ledger: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``dashboard.masking`` (wire-shaped): what is masked now and when the boundary moves."""
    if plan is None:
        return None
    masked = [i for i in ledger if i["visibility"] == "masked"]
    return {
        "maskedResults": len(masked),
        "maskedTokens": sum(i["tokens"] for i in masked),
        "protectTokens": plan.protect,
        "batchTokens": plan.batch,
        "toolTokens": plan.tool_tokens,
        "nextMoveIn": plan.grid + plan.batch + plan.protect - plan.tool_tokens,
    }


@dataclass(frozen=True, slots=True)
class Masked:
    """One history entry whose tool results are shown as placeholders."""

    seq: int
    item_id: str
    tokens: int
    """The entry as it would be shown whole."""
    shown_tokens: int
    """Its placeholder message."""


def mask_group(
    view: HistoryView, group: Group, plan: MaskPlan, through_seq: int, count: MessageCounter
) -> tuple[Group, tuple[Masked, ...]]:
    """``group`` with the results of entries at or before ``through_seq`` masked and the
    reasoning of its assistant messages at or before it left out (the group itself when
    neither changes it), and what was masked."""
    if group.first_seq > through_seq:
        return group, ()
    members = [_seq_of(m) for m in group.messages]
    wanted = tuple(
        seq
        for seq in members[1:]
        if seq <= through_seq
        and seq not in plan.exempt_seqs
        and view.shape(seq) == SHAPE_RESULTS
        and observation_id(view.record(seq)["id"]) not in plan.exempt_ids
    )
    # the assistant message of a group is its first; its reasoning is as old as its results
    old_reasoning = members[0] <= through_seq and view.shape(members[0]) in _ASSISTANT
    if not wanted and not old_reasoning:
        return group, ()

    def build() -> tuple[Group, tuple[Masked, ...]]:
        return _masked_group(
            group, set(wanted), plan.preview_chars, plan.recall, old_reasoning, count
        )

    key = ("mask", tuple(members), wanted, plan.preview_chars, plan.recall, old_reasoning)
    hit: tuple[Group, tuple[Masked, ...]] = cached(view, key, build)
    return hit


def kept_whole(view: HistoryView, group: Group, plan: MaskPlan) -> list[tuple[int, str, int]]:
    """The results of ``group`` that the boundary would mask but a pin or a recover keeps
    whole: ``(seq, ledger id, tokens)`` each.  The ledger lists them as visible under their
    own id, so a host (or the model's ``recall``) that brought one back sees it there."""
    if group.first_seq > plan.through_seq or len(group.messages) < 2:
        return []
    kept = []
    for message in group.messages[1:]:
        seq = _seq_of(message)
        if seq > plan.through_seq or view.shape(seq) != SHAPE_RESULTS:
            continue
        ident = observation_id(message["provenance"][0]["id"])
        if seq in plan.exempt_seqs or ident in plan.exempt_ids:
            kept.append((seq, ident, int(message["tokens"])))
    return kept


def _seq_of(message: dict[str, Any]) -> int:
    return int(message["provenance"][0]["fromSeq"])


def _without_reasoning(message: dict[str, Any], count: MessageCounter) -> dict[str, Any] | None:
    """An assistant message with its reasoning parts left out (``None``: it has none).  A
    message that was nothing but reasoning keeps a one-line note (a message needs content)."""
    content = [p for p in message["content"] if p["type"] != "reasoning"]
    if len(content) == len(message["content"]):
        return None
    shown = {**message, "content": content or [{"type": "text", "text": REASONING_NOTE}]}
    shown["tokens"] = count(shown)
    return shown


def _masked_group(
    group: Group,
    wanted: set[int],
    preview_chars: int,
    recall: bool,
    old_reasoning: bool,
    count: MessageCounter,
) -> tuple[Group, tuple[Masked, ...]]:
    first = group.messages[0]
    calls = {p["callId"]: p for p in first["content"] if p["type"] == "toolCall"}
    thinned = _without_reasoning(first, count) if old_reasoning else None
    messages = [first if thinned is None else thinned]
    masked: list[Masked] = []
    for message in group.messages[1:]:
        seq = _seq_of(message)
        parts = [p for p in message["content"] if p["type"] == "toolResult"]
        if seq not in wanted or not parts:
            messages.append(message)
            continue
        ident = observation_id(message["provenance"][0]["id"])
        content = [
            _placeholder(
                p,
                calls.get(p["callId"]),
                message["tokens"] if len(parts) == 1 else count({"content": [p]}),
                ident,
                preview_chars,
                recall,
            )
            if p["type"] == "toolResult"
            else p
            for p in message["content"]
        ]
        shown = {**message, "content": content}
        shown["tokens"] = count(shown)
        if shown["tokens"] >= message["tokens"]:  # not worth it: show it whole
            messages.append(message)
            continue
        messages.append(shown)
        masked.append(Masked(seq, ident, message["tokens"], shown["tokens"]))
    if not masked and thinned is None:
        return group, ()
    rebuilt = Group.build(
        group.first_seq,
        group.last_seq,
        group.first_id,
        tuple(messages),
        group.starts_on_user_turn,
        group.interrupted,
    )
    if thinned is not None:
        rebuilt.shown_item["reason"] += "; its older reasoning left out"
    return rebuilt, tuple(masked)


def _placeholder(
    part: dict[str, Any],
    call: dict[str, Any] | None,
    tokens: int,
    ident: str,
    preview_chars: int,
    recall: bool,
) -> dict[str, Any]:
    """A tool result's placeholder: still a ``toolResult`` answering the same call.  It names
    the ``recall`` tool only when the request offers it (a model told to call a tool it
    does not have either fails the call or gives up on the result); otherwise it says how
    the host brings the result back."""
    body = "\n".join(
        p.get("text", "") if p.get("type") == "text" else f"[{p.get('type')}]"
        for p in part.get("content", ())
    )
    preview = body[:preview_chars] + ("…" if len(body) > preview_chars else "")
    if call is not None:
        arguments = json.dumps(call.get("arguments", {}), ensure_ascii=False)
        if len(arguments) > _ARGUMENT_CHARS:
            arguments = arguments[:_ARGUMENT_CHARS] + "…"
        what = f"{call['name']} {arguments}"
    else:
        what = "the call"
    how = (
        f"call the {RECALL_TOOL} tool with ledger id {ident} to see it in full"
        if recall
        else f"ledger id {ident}: the host can show it in full again (session/recover)"
    )
    text = f"[older tool output masked to save context: {what} returned {tokens:,} tokens; {how}]"
    if preview:
        text += f"\npreview:\n{preview}"
    out: dict[str, Any] = {
        "type": "toolResult",
        "callId": part["callId"],
        "content": [{"type": "text", "text": text}],
    }
    if part.get("isError"):
        out["isError"] = True
    return out
