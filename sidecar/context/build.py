"""Step 2 of the context pipeline: build — a frozen input plus a profile, turned into the
:class:`~sidecar.context.assembly_inputs.AssemblyInputs` of the pure
:func:`~sidecar.context.assemble.assemble`.

:func:`build_inputs` reads history only up to the input's ``throughSeq``, texts from blobs (a
missing one is ``agent.macro_context_rebuild_unavailable``, naming what is missing), and
evaluates macros on a working copy of the frozen macro context and variables; it makes every
candidate section (fragments, agent prompt, preset components, environment, instructions,
skills, pins, host sources) and the user turn with its attachments.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocol._base import dump_wire
from protocol.errors import ErrorCode
from sidecar.context.assembly_inputs import AssemblyInputs, SectionInput
from sidecar.context.calibration import CountFactor, default_factor, family_of
from sidecar.context.controls import fold_controls
from sidecar.context.fragments import load_fragments
from sidecar.context.limits import resolve_limits
from sidecar.context.skills import Skill, render_catalog
from sidecar.context.tokens import count_entries
from sidecar.errors import SidecarError
from sidecar.inputs.macros import MacroContext, MacroEngine
from sidecar.jsonbytes import canonical

if TYPE_CHECKING:
    from protocol.context import HostSource, PromptProfile
    from protocol.inputs import FrozenInput
    from sidecar.context.capture import Material
    from sidecar.context.tokens import Tokenizers
    from sidecar.store.sessions import SessionStore

__all__ = ["Built", "build_inputs", "seed_of"]


@dataclass(slots=True)
class Built:
    inputs: AssemblyInputs
    parameters: dict[str, Any]
    unknown_macros: list[str]


def _rebuild_unavailable(missing: list[str]) -> SidecarError:
    return SidecarError(
        ErrorCode.REBUILD_UNAVAILABLE,
        "the frozen input refers to material that is no longer in the store: "
        + ", ".join(missing[:5])
        + (" …" if len(missing) > 5 else ""),
        details={"missing": missing},
    )


def build_inputs(
    sessions: SessionStore,
    tokenizers: Tokenizers,
    frozen: FrozenInput,
    material: Material,
    profile: PromptProfile,
    *,
    seed: str,
    agent_prompt: str = "",
    components: list[Any] | None = None,
    parameters: dict[str, Any] | None = None,
    reuse_instructions: dict[str, str] | None = None,
    extra_sources: list[HostSource] | None = None,
    diagnostics: list[dict[str, Any]] | None = None,
    instructions_diff: dict[str, Any] | None = None,
    turn: list[dict[str, Any]] | None = None,
    compaction: dict[str, Any] | None = None,
) -> Built:
    """Assembly inputs from a frozen input (blocking: reads blobs, may count tokens)."""
    missing: list[str] = []

    def text(blob: str | None, what: str) -> str:
        data = material.get(blob) if blob else None
        if data is None:
            missing.append(f"{what} ({blob})")
            return ""
        return data.decode("utf-8", errors="replace")

    tokenizer = tokenizers.get(None)
    view = sessions.history(
        frozen.session_id,
        tokenizer.info.id,
        lambda r: count_entries(tokenizer, r),
        head=frozen.through_seq,
    )
    controls = fold_controls(view)
    if compaction is not None:  # recorded by a run after the input's head
        controls.compaction = compaction
    facts = frozen.macro_context.facts
    engine = MacroEngine(
        MacroContext(
            user=frozen.macro_context.user,
            char=frozen.macro_context.char,
            last_message=facts.get("lastMessage", ""),
            date=frozen.clock.date,
            time=frozen.clock.time,
            seed=seed,
        ),
        frozen.variables.local,
        frozen.variables.global_,
    )
    limits = resolve_limits(profile)
    harness = [
        SectionInput(
            id=f"fragment:{f.id}",
            category="system",
            title=f.id.replace("_", " "),
            text=f.text,
            provenance={
                "kind": "fragment",
                "id": f.id,
                **({"path": f.origin} if f.origin != "default" else {}),
            },
            ledger_kind="harness",
            locator=f.id,
        )
        for f in load_fragments({**frozen.fragment_overrides, **profile.fragments}, None)
    ]
    if agent_prompt.strip():
        harness.append(
            SectionInput(
                id="agent",
                category="system",
                title="agent instructions",
                text=engine.render(agent_prompt).strip(),
                provenance={"kind": "fragment", "id": "agent"},
                ledger_kind="harness",
                locator="agent",
            )
        )
    in_chat: list[tuple[int, dict[str, Any]]] = []
    for comp in components if components is not None else frozen.components:
        if not comp.enabled:
            continue
        rendered = engine.render(comp.content).strip()
        if not rendered:
            continue
        if comp.position == "relative":
            harness.append(
                SectionInput(
                    id=f"component:{comp.identifier}",
                    category="system",
                    title=comp.identifier,
                    text=rendered,
                    provenance={"kind": "fragment", "id": comp.identifier},
                    ledger_kind="harness",
                    locator=comp.identifier,
                )
            )
        else:
            role = "assistant" if comp.role == "assistant" else "user"
            body = rendered if comp.role != "system" else f"[system note] {rendered}"
            in_chat.append(
                (
                    comp.depth,
                    {
                        "role": role,
                        "content": [{"type": "text", "text": body}],
                        "tokens": 0,
                        "provenance": [{"kind": "fragment", "id": comp.identifier}],
                    },
                )
            )
    harness.append(environment_section(frozen, profile))

    reuse = reuse_instructions or {}
    instructions = []
    for ins in frozen.instructions:
        body = text(ins.blob, f"instruction {ins.path}")
        if reuse.get(ins.path) == ins.hash:
            body = (
                f"{ins.path} (scope {ins.scope}, hash {ins.hash[:16]}) is unchanged "
                "since it was last sent; its text is omitted here."
            )
        instructions.append(
            (
                SectionInput(
                    id=f"instruction:{ins.path}",
                    category="instructions",
                    title=ins.path,
                    text=f'<project_instructions path="{ins.path}" scope="{ins.scope}">\n'
                    f"{body}\n</project_instructions>",
                    provenance={"kind": "instruction", "id": ins.hash, "path": ins.path},
                    ledger_kind="instruction",
                    locator=ins.path,
                    pinned=f"instruction:{ins.path}" in controls.pinned,
                ),
                ins.depth,
            )
        )

    catalog: SectionInput | None = None
    omitted: list[str] = []
    if frozen.skills:
        skills = [
            Skill(info=s, directory=Path(s.path), skill_md=Path(s.path) / "SKILL.md")
            for s in frozen.skills
        ]
        budget = int(limits.window * profile.skills_catalog_share)
        rendered_catalog, _, omitted = render_catalog(skills, budget, tokenizer.count)
        if rendered_catalog:
            catalog = SectionInput(
                id="skills:catalog",
                category="skills",
                title="available skills",
                text=rendered_catalog,
                provenance={"kind": "skillCatalog", "id": "skills:catalog"},
                ledger_kind="skill",
                locator="catalog",
            )
    activated = [
        SectionInput(
            id=f"skill:{s.name}",
            category="skills",
            title=s.name,
            text=text(s.blob, f"skill {s.name}"),
            provenance={"kind": "skill", "id": s.name},
            ledger_kind="skill",
            locator=s.name,
            pinned=f"skill:{s.name}" in controls.pinned,
        )
        for s in frozen.activated_skills
    ]
    pinned = []
    for item in frozen.pinned_files:
        content = text(item.blob, f"pinned file {item.path}")
        pinned.append(
            SectionInput(
                id=f"pin:{item.path}",
                category="pinned",
                title=item.path,
                text=f'<pinned_file path="{item.path}" blob="{item.blob}">\n{content}\n'
                "</pinned_file>",
                provenance={"kind": "pin", "id": f"file:{item.path}", "path": item.path},
                ledger_kind="pin",
                locator=item.path,
                pinned=True,
            )
        )
    # Activated entries are frozen prompt text (world-info style): macros apply.  Host
    # sources of a live assembly (RAG results, editor state) are data: they do not.
    sources = {s.id: (s, engine.render(s.text)) for s in frozen.activated_entries}
    sources.update({s.id: (s, s.text) for s in extra_sources or []})
    host = [
        SectionInput(
            id=f"host:{s.id}",
            category="host",
            title=s.title or s.id,
            text=f'<host_source id="{s.id}">\n{body}\n</host_source>',
            provenance={"kind": "host", "id": s.id},
            ledger_kind="host",
            locator=s.id,
            priority=s.priority,
        )
        for s, body in sources.values()
    ]
    user_turn = [dump_wire(p) for p in frozen.user_turn]
    for item in frozen.attachments:
        if item.kind == "image":
            user_turn.append({"type": "image", "blob": item.blob or "", "mediaType": "image/png"})
        else:
            body = text(item.blob, f"attachment {item.path}")
            user_turn.append(
                {
                    "type": "text",
                    "text": f'<attachment kind="{item.kind}" '
                    f'path="{item.path}">\n{body}\n</attachment>',
                }
            )
    if missing:
        raise _rebuild_unavailable(missing)
    rendered_params = engine.render_value(parameters or {})
    inputs = AssemblyInputs(
        profile=profile,
        limits=limits,
        tokenizer=tokenizer,
        view=view,
        controls=controls,
        harness=harness,
        instructions=instructions,
        activated_skills=activated,
        skills_catalog=catalog,
        pinned=pinned,
        host=host,
        tools=[dump_wire(t) for t in frozen.tools],
        user_turn=user_turn,
        diagnostics=diagnostics or [],
        instructions_diff=instructions_diff or {},
        catalog_omitted=omitted,
        in_chat=in_chat,
        turn=turn or [],
        calibration=CountFactor(
            family=family_of(profile.model), factor=default_factor(profile.model), samples=0
        ),
    )
    return Built(inputs, rendered_params, engine.unknown)


def environment_section(frozen: FrozenInput, profile: PromptProfile) -> SectionInput:
    text = (
        "<environment>\n"
        f"cwd: {frozen.cwd or '(no workspace)'}\n"
        f"model: {profile.model}\n"
        f"search: {profile.search_mode}\n"
        f"date: {frozen.clock.date}\n"
        "</environment>"
    )
    return SectionInput(
        id="environment",
        category="system",
        title="environment",
        text=text,
        provenance={"kind": "environment", "id": "environment"},
        ledger_kind="harness",
        locator="environment",
    )


def seed_of(frozen: FrozenInput) -> str:
    """A stable seed for a live (unstored) input: the hash of its canonical JSON."""
    return hashlib.sha256(canonical(dump_wire(frozen))).hexdigest()[:32]
