"""Assembly (DESIGN.md §4 stages 5-7): the selection stages in order, then the answer —
system sections in rendering order, messages, dashboard, ledger, cache breakpoints.

``assemble`` is pure and deterministic: everything it reads is in
:class:`~sidecar.context.assembly_inputs.AssemblyInputs` (made by ``sidecar.context.build``),
so the same inputs give a byte-identical prompt.  What each stage selects within the budget,
and why, is :mod:`sidecar.context.selection`.  In-chat preset components are inserted at
group boundaries, never between a call and its results.

Rendering order is stable-first for prompt caching: tools, then the system sections
(fragments, environment, instructions root-first, skills, pins, host sources, summary), then
the transcript in chronological order and the user turn last.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from protocol.context import SECTION_CATEGORIES
from sidecar.context.assembly_inputs import AssemblyInputs, SectionInput
from sidecar.context.cache import plan_cache
from sidecar.context.cache_accounting import RequestShape, Unit, message_unit
from sidecar.context.cache_ttl import ttl_diagnostics
from sidecar.context.ledger import item_id
from sidecar.context.selection import Selection
from sidecar.jsonbytes import dumps_bytes

if TYPE_CHECKING:
    from collections.abc import Callable

    from sidecar.context.transcript import Group
    from sidecar.context.window_hold import Grids

__all__ = ["Assembled", "assemble", "assemble_with_json", "item_id"]


class Assembled(NamedTuple):
    """:func:`assemble_with_json`'s answer."""

    result: dict[str, Any]
    """The assembled prompt (wire-shaped JSON)."""
    messages_json: bytes
    """Its ``messages``, serialised (spliced from the transcript groups' own JSON)."""
    shape: RequestShape
    """Its shape with its markers, as :func:`~sidecar.context.cache_accounting.request_shape`
    makes it, from the units the transcript groups built once: the session's next request is
    planned against it (``request_shape`` of a 2,000-message prompt rebuilt every unit: a
    fourteenth of a ``context/assemble``; the next plan compares the same unit objects)."""
    window_grids: Grids
    """The history window caps' grid lines for its start, kept with the start when it moves
    (:mod:`sidecar.context.window_floor`)."""


class _Assembler(Selection):
    """One assembly: :class:`~sidecar.context.selection.Selection`'s stages in order, then
    the answer made of what they kept."""

    def __init__(self, inp: AssemblyInputs) -> None:
        super().__init__(inp)
        self.messages_json: Callable[[], bytes] = lambda: b"[]"
        """``messages`` of the result as canonical JSON, made on demand (:func:`assemble`
        does not need it)."""
        self.shape: RequestShape | None = None
        """The result's shape with its markers (:class:`Assembled`), once :meth:`run` is done."""

    def run(self) -> dict[str, Any]:
        inp = self.inp
        for section in inp.harness:
            self.offer(section, "harness: always first")
        tools = self._tools()
        user_msg = self._user_turn()
        turn = self._turn()
        in_chat = self._in_chat()
        for section in inp.pinned:
            self.offer(section, "pinned")
        pinned_groups = self._pinned_groups()
        for section, _depth in sorted(inp.instructions, key=lambda sd: -sd[1]):
            self.offer(section, "project instruction that applies here")
        for section in inp.activated_skills:
            self.offer(section, "skill activated in this session")
        if inp.skills_catalog is not None:
            self.offer(inp.skills_catalog, "skills catalog (metadata only)")
        for name in inp.catalog_omitted:
            self.record(
                "skill",
                f"catalog:{name}",
                "candidate",
                "left out of the skills catalog: over its share of the window",
                0,
                name,
            )
        for section in sorted(inp.host, key=lambda s: (-s.priority, s.id)):
            self.offer(section, f"host source (priority {section.priority})")
        self._summary()
        groups, advice = self._transcript(pinned_groups)
        units: list[Unit] | None = None
        if in_chat:
            messages = [*_inject(groups, in_chat), user_msg, *turn]
            self.messages_json = lambda: dumps_bytes(messages)
        else:
            # from what each group built once: its messages and cache units (and its JSON)
            messages = [*chain.from_iterable([g.messages for g in groups]), user_msg, *turn]
            units = [
                *chain.from_iterable([g.units for g in groups]),
                *map(message_unit, (user_msg, *turn)),
            ]
            tail = (user_msg, *turn)
            self.messages_json = lambda: (  # spliced from the groups' own JSON
                b"["
                + b",".join([g.json for g in groups if g.json] + [dumps_bytes(m) for m in tail])
                + b"]"
            )
        system = self._system_order()
        return self._result(system, messages, tools, advice, units)

    def _system_order(self) -> list[dict[str, Any]]:
        inp = self.inp
        order: list[SectionInput] = list(inp.harness)
        order += [s for s, _ in inp.instructions]
        if inp.skills_catalog is not None:
            order.append(inp.skills_catalog)
        order += inp.activated_skills + inp.pinned
        order += sorted(inp.host, key=lambda s: (-s.priority, s.id))
        if inp.controls.compaction is not None:
            order.append(
                SectionInput(
                    id=f"summary:{inp.controls.compaction['seq']}",
                    category="summary",
                    title="",
                    text="",
                    provenance={},
                    ledger_kind="summary",
                )
            )
        return [self.sections[s.id] for s in order if s.id in self.sections]

    def _result(
        self,
        system: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        advice: dict[str, Any],
        units: list[Unit] | None = None,
    ) -> dict[str, Any]:
        """``units``: the cache units of ``messages``, when the transcript groups had them."""
        inp = self.inp
        categories = {c: self.budget.categories.get(c, 0) for c in SECTION_CATEGORIES}
        used = sum(categories.values())
        counts = Counter(map(itemgetter("visibility"), self.ledger))
        summary = (
            f"context {counts['visible']} visible · {counts['pinned']} pinned · "
            + (f"{counts['masked']} masked · " if counts["masked"] else "")
            + f"{counts['summaryOnly'] + counts['archived']} archived · "
            f"{counts['candidate']} left out · {used / 1000:.1f}k/"
            f"{self.budget.available / 1000:.1f}k tokens"
        )
        breakpoints, cache, self.shape = plan_cache(
            inp.profile, tools, self.ledger, system, messages, inp.previous, units, inp.settled_ttl
        )
        return {
            "system": system,
            "messages": messages,
            "tools": tools,
            "ledger": self.ledger,
            "dashboard": {
                "window": inp.limits.window,
                "reservedOutput": inp.limits.max_output,
                "availableInput": self.budget.available,
                "used": used,
                "free": self.budget.available - used,
                "categories": categories,
                "summary": summary,
                "historyWindow": self.window_state,
                "masking": self.masking_state,
                "calibration": dict(inp.calibration),
            },
            "cacheBreakpoints": breakpoints,
            "cache": cache,
            "tokenizer": self.tok.info.id,
            "modelLimits": inp.limits.model_dump(mode="json", by_alias=True),
            "compaction": advice,
            "instructionsDiff": inp.instructions_diff,
            "diagnostics": self.diagnostics + ttl_diagnostics(inp.profile),
            "throughSeq": inp.view.head,
        }


def _inject(groups: list[Group], in_chat: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The transcript with each in-chat component ``depth`` messages from its end, moved back
    to the start of the group it would split: a component between a tool call and its result
    would break the pair (providers reject it, and lowerings would have to move it)."""
    total = sum(len(g.messages) for g in groups)
    boundaries = [0]  # message index of each group start, and the end
    for group in groups:
        boundaries.append(boundaries[-1] + len(group.messages))
    at: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for depth, message in sorted(in_chat, key=lambda dm: -dm[0]):
        wanted = max(total - depth, 0)
        at[max(b for b in boundaries if b <= wanted)].append(message)
    out: list[dict[str, Any]] = []
    for index, group in enumerate(groups):
        out += at.pop(boundaries[index], [])
        out += group.messages
    for messages in at.values():  # depth 0: after the last group
        out += messages
    return out


def assemble(inputs: AssemblyInputs) -> dict[str, Any]:
    """Select, order and account for everything the model will see (wire-shaped JSON)."""
    return _Assembler(inputs).run()


def assemble_with_json(inputs: AssemblyInputs) -> Assembled:
    """:func:`assemble`, plus ``messages`` already serialised (spliced from cached groups) and
    the prompt's shape."""
    assembler = _Assembler(inputs)
    result = assembler.run()
    assert assembler.shape is not None  # made by run()
    return Assembled(result, assembler.messages_json(), assembler.shape, assembler.window_grids)
