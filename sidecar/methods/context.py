"""``context/*``, ``skills/*``, and the ledger controls ``session/pin|unpin|drop|recover``
and ``session/compact``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from protocol import methods as m
from protocol.context import (
    ContextAssembleParams,
    ContextSourcesParams,
    ContextSourcesResult,
    HostSourceRef,
    RegisterSourceParams,
    SessionCompactParams,
    SessionControlParams,
    SkillsActivateParams,
    SkillsActivateResult,
    SkillsListParams,
    SkillsListResult,
    SourceRegistration,
)
from protocol.entries import (
    CompactionInput,
    DropInput,
    EntryRef,
    PinInput,
    RecoverInput,
    SkillActivatedInput,
    UnpinInput,
)
from protocol.errors import ErrorCode
from sidecar.aio import in_cpu_lane
from sidecar.errors import NotFoundError
from sidecar.jsonbytes import RawJSON, dumps_in_slices
from sidecar.methods.route import route

if TYPE_CHECKING:
    from sidecar.methods.state import SidecarState

__all__ = ["ROUTES"]

_CONTROLS = {"pin": PinInput, "unpin": UnpinInput, "drop": DropInput, "recover": RecoverInput}


def _control(kind: str) -> Any:
    model = _CONTROLS[kind]

    async def handler(state: SidecarState, p: SessionControlParams) -> dict[str, Any]:
        entry = model(kind=kind, target=p.target, reason=p.reason)
        refs, head = await state.store.sessions.append(p.session_id, [entry])
        return {"headSeq": head, "appended": refs}

    return handler


async def compact(state: SidecarState, p: SessionCompactParams) -> dict[str, Any]:
    entry = CompactionInput(
        kind="compaction",
        summary=p.summary,
        through_seq=p.through_seq,
        keep_from_seq=p.keep_from_seq,
    )
    refs, head = await state.store.sessions.append(p.session_id, [entry])
    return {"headSeq": head, "appended": refs}


async def sources(state: SidecarState, p: ContextSourcesParams) -> ContextSourcesResult:
    from sidecar.context.skills import discover_skills  # yaml and the rest, on first use

    service = state.context

    def scan() -> ContextSourcesResult:
        instructions = service.scan_instructions(p.session_id, p.cwd, p.mentioned_paths, [])
        session = state.store.sessions.get(p.session_id)
        skills = discover_skills([Path(r) for r in session.workspace_roots], service.home)
        return ContextSourcesResult(
            project_root=str(instructions.project_root) if instructions else "",
            instructions=[f.info for f in instructions.files] if instructions else [],
            skills=[s.info for s in skills.skills],
            diagnostics=[*(instructions.diagnostics if instructions else []), *skills.diagnostics],
        )

    return await anyio.to_thread.run_sync(scan)


async def skills_list(state: SidecarState, p: SkillsListParams) -> SkillsListResult:
    from sidecar.context.skills import discover_skills

    session = state.store.sessions.get(p.session_id)
    scan = await anyio.to_thread.run_sync(
        discover_skills, [Path(r) for r in session.workspace_roots], state.context.home
    )
    return SkillsListResult(skills=[s.info for s in scan.skills], diagnostics=scan.diagnostics)


async def skills_activate(state: SidecarState, p: SkillsActivateParams) -> SkillsActivateResult:
    from sidecar.context.skills import activate_skill, discover_skills

    state.store.require_writable()
    session = state.store.sessions.get(p.session_id)
    state.store.sessions.hold(p.session_id)  # session.held before anything is written
    roots = [Path(r) for r in session.workspace_roots]
    scan = await anyio.to_thread.run_sync(discover_skills, roots, state.context.home)
    skill = next((s for s in scan.skills if s.info.name == p.name), None)
    if skill is None:
        raise NotFoundError(
            ErrorCode.SKILL_NOT_FOUND,
            f"no skill named {p.name!r} for this session",
            details={"name": p.name, "available": [s.info.name for s in scan.skills]},
        )
    activation = await anyio.to_thread.run_sync(activate_skill, skill)
    blob = await anyio.to_thread.run_sync(state.store.blobs.put, activation.text.encode())
    entry = SkillActivatedInput(
        kind="skillActivated", name=skill.info.name, path=skill.info.path, blob=blob
    )
    refs, _ = await state.store.sessions.append(p.session_id, [entry])
    return SkillsActivateResult(
        skill=skill.info,
        body=activation.body,
        references=activation.references,
        blob=blob,
        entry=EntryRef.model_validate(refs[0], by_alias=True),
        diagnostics=activation.diagnostics,
    )


async def assemble(state: SidecarState, p: ContextAssembleParams) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        result, messages_json = state.context.assemble_live(p)  # with ``body`` for lowerTo
        result["messages"] = RawJSON(messages_json)  # cached groups, not serialised again
        # the ledger (an item per candidate: the answer's largest part after the messages) is
        # encoded here in the lane, in slices, not on the event loop in one uninterruptible call
        result["ledger"] = dumps_in_slices(result["ledger"])
        return result

    return await in_cpu_lane(work)


async def register_source(state: SidecarState, p: RegisterSourceParams) -> SourceRegistration:
    state.store.sessions.get(p.session_id)  # must exist
    ids = state.context.register_source(p.session_id, p.source)
    return SourceRegistration(session_id=p.session_id, ids=ids)


async def unregister_source(state: SidecarState, p: HostSourceRef) -> SourceRegistration:
    state.store.sessions.get(p.session_id)  # must exist (no memory for made-up ids)
    ids = state.context.unregister_source(p.session_id, p.id)
    return SourceRegistration(session_id=p.session_id, ids=ids)


ROUTES = (
    route(m.SESSION_PIN, _control("pin")),
    route(m.SESSION_UNPIN, _control("unpin")),
    route(m.SESSION_DROP, _control("drop")),
    route(m.SESSION_RECOVER, _control("recover")),
    route(m.SESSION_COMPACT, compact),
    route(m.CONTEXT_SOURCES, sources),
    route(m.CONTEXT_ASSEMBLE, assemble),
    route(m.CONTEXT_REGISTER_SOURCE, register_source),
    route(m.CONTEXT_UNREGISTER_SOURCE, unregister_source),
    route(m.SKILLS_LIST, skills_list),
    route(m.SKILLS_ACTIVATE, skills_activate),
)
