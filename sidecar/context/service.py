"""The context pipeline's I/O side, in two steps with one path for every assembly:

1. :meth:`ContextService.capture` reads the world once — the session head, the workspace's
   instructions, skills, pinned files and fragment overrides, attachments — into a
   :class:`protocol.inputs.FrozenInput` whose texts are blobs.  ``input/freeze`` persists it;
   a live ``context/assemble`` keeps the blobs in memory only.
2. :meth:`ContextService.build` turns a frozen input plus a profile into
   :class:`AssemblyInputs` for the pure :func:`assemble`: history only up to the input's
   ``throughSeq``, texts from blobs (a missing one is
   ``agent.macro_context_rebuild_unavailable``, naming what is missing), macros evaluated on
   a working copy of the frozen macro context and variables.

Per-session memory that is not history also lives here: host sources registered for the
session (kept until unregistered or the session is deleted), and what its previous requests
left (:mod:`sidecar.context.session_memory`: the instruction hashes of the previous live
assembly, for the per-turn diff; the shape of the previous request, where its cache entries
are, against which the next request's breakpoints and cache accounting are planned), for the
most recently used sessions only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocol._base import dump_wire
from protocol.errors import ErrorCode
from protocol.inputs import (
    Clock,
    FrozenInput,
    InputFreezeParams,
    InstructionSnapshot,
    SkillSnapshot,
)
from sidecar.context.assemble import assemble_with_json
from sidecar.context.assembly_inputs import AssemblyInputs, SectionInput
from sidecar.context.cache_accounting import RequestShape, predict_for, request_shape
from sidecar.context.controls import fold_controls
from sidecar.context.fragments import load_fragments
from sidecar.context.instructions import (
    InstructionScan,
    diff_instructions,
    discover_instructions,
)
from sidecar.context.limits import resolve_limits
from sidecar.context.sent import PROVIDER_TARGET, count_marked_prefixes, sent_shape
from sidecar.context.session_memory import SessionMemories, SessionMemory
from sidecar.context.skills import Skill, discover_skills, render_catalog
from sidecar.context.tokens import Tokenizer, Tokenizers, count_entries
from sidecar.context.workspace_files import fragment_overrides, pinned_files
from sidecar.errors import InvalidRequestError, NotFoundError, SidecarError
from sidecar.inputs.items import capture_item
from sidecar.inputs.macros import MacroContext, MacroEngine
from sidecar.jsonbytes import canonical
from sidecar.paths import is_within, real_path
from sidecar.store.blobs import git_blob_id

if TYPE_CHECKING:
    from collections.abc import Callable

    from protocol.context import ContextAssembleParams, HostSource, PromptProfile
    from sidecar.store import Store

__all__ = ["Captured", "ContextService", "Material"]

logger = logging.getLogger(__name__)


class Material:
    """Blob bytes for one capture: always held in memory, written to the store when
    ``persist`` (``input/freeze``), read back from the store when not held."""

    def __init__(self, store: Store, persist: bool) -> None:
        self._store = store
        self.persist = persist
        self.held: dict[str, bytes] = {}

    def put(self, data: bytes) -> str:
        blob_id = git_blob_id(data, self._store.blobs.object_format)
        self.held[blob_id] = data
        if self.persist:
            self._store.blobs.put(data)
        return blob_id

    def get(self, blob_id: str) -> bytes | None:
        held = self.held.get(blob_id)
        if held is not None:
            return held
        try:
            return self._store.blobs.get(blob_id)
        except NotFoundError:
            return None


@dataclass(slots=True)
class Captured:
    frozen: FrozenInput
    material: Material
    diagnostics: list[dict[str, Any]]
    instruction_scan: InstructionScan | None


@dataclass(slots=True)
class Built:
    inputs: AssemblyInputs
    parameters: dict[str, Any]
    unknown_macros: list[str]


def _now_clock() -> Clock:
    now = datetime.now(UTC)
    return Clock(date=now.date().isoformat(), time=now.strftime("%H:%M"))


def _rebuild_unavailable(missing: list[str]) -> SidecarError:
    return SidecarError(
        ErrorCode.REBUILD_UNAVAILABLE,
        "the frozen input refers to material that is no longer in the store: "
        + ", ".join(missing[:5])
        + (" …" if len(missing) > 5 else ""),
        details={"missing": missing},
    )


class ContextService:
    def __init__(
        self,
        store: Store,
        tokenizers: Tokenizers,
        home: Path | None = None,
        *,
        remembered_sessions: int | None = None,
    ) -> None:
        """``remembered_sessions``: how many sessions' memories are kept (default: as many
        as the store keeps loaded)."""
        self.store = store
        self.tokenizers = tokenizers
        self.home = home if home is not None else Path.home()
        self.memories = SessionMemories(
            store.sessions.max_loaded if remembered_sessions is None else remembered_sessions
        )
        self._host_sources: dict[str, dict[str, HostSource]] = {}
        self._sources_lock = threading.Lock()

    def memory(self, session_id: str) -> SessionMemory:
        """What the session's previous requests left (empty if it was dropped: see
        :mod:`sidecar.context.session_memory`)."""
        return self.memories.get(session_id)

    def forget(self, session_id: str) -> None:
        """Drop everything remembered of a session (it was deleted), host sources included."""
        self.memories.forget(session_id)
        with self._sources_lock:
            self._host_sources.pop(session_id, None)

    # --- host sources ----------------------------------------------------------------------

    def register_source(self, session_id: str, source: HostSource) -> list[str]:
        """Add or replace a host source of the session; the ids registered, sorted."""
        with self._sources_lock:
            sources = self._host_sources.setdefault(session_id, {})
            sources[source.id] = source
            return sorted(sources)

    def unregister_source(self, session_id: str, source_id: str) -> list[str]:
        """Remove a host source of the session (if registered); the ids left, sorted."""
        with self._sources_lock:
            sources = self._host_sources.get(session_id, {})
            sources.pop(source_id, None)
            if not sources:
                self._host_sources.pop(session_id, None)
            return sorted(sources)

    def host_sources(self, session_id: str) -> dict[str, HostSource]:
        """The session's registered host sources (a copy), by id."""
        with self._sources_lock:
            return dict(self._host_sources.get(session_id, {}))

    # --- the previous request (prompt cache) ----------------------------------------------

    def previous_request(self, session_id: str) -> RequestShape | None:
        """The session's previous request: the last one assembled for it in this process
        (``context/assemble``, ``snapshot/assemble``, a run's round), else its newest indexed
        snapshot (after a restart), else ``None``.  Blocking: may read a snapshot."""
        memory = self.memory(session_id)
        if memory.previous_request is None:
            index = self.store.snapshot_index.read(session_id)
            if index:
                try:
                    snapshot = json.loads(self.store.blobs.get(index[-1]["snapshotId"]))
                    memory.previous_request = request_shape(snapshot)
                except (NotFoundError, ValueError, KeyError, TypeError) as exc:
                    logger.warning("no previous request from snapshot %s: %r", index[-1], exc)
        return memory.previous_request

    def remember_request(self, session_id: str, prompt: dict[str, Any]) -> None:
        """Record ``prompt`` (an assembled prompt or snapshot) as the session's latest request."""
        self.memory(session_id).previous_request = request_shape(prompt)

    def previous_sent(
        self, session_id: str, target: str, current: str | None = None
    ) -> RequestShape | None:
        """The session's previous request body as sent: remembered in this process, else
        the newest indexed snapshot but ``current`` (the snapshot of the request being made)
        lowered again (after a restart: snapshots keep their bytes' order, so it lowers to what
        was sent).  Blocking: may read a snapshot."""
        memory = self.memory(session_id)
        if memory.previous_sent is None:
            index = [
                i for i in self.store.snapshot_index.read(session_id) if i["snapshotId"] != current
            ]
            if index:
                try:
                    snapshot = json.loads(self.store.blobs.get(index[-1]["snapshotId"]))
                    body = lower_result(snapshot, target, self.store.blobs.get, session_id)
                    memory.previous_sent = sent_shape(
                        target, body, snapshot["modelLimits"]["model"], self._tokenizer(snapshot)
                    )
                except (NotFoundError, ValueError, KeyError, TypeError) as exc:
                    logger.warning(
                        "no previous body from snapshot %s: %s", index[-1]["snapshotId"], exc
                    )
        return memory.previous_sent

    def account_sent(
        self,
        session_id: str | None,
        provider: str,
        target: str,
        body: dict[str, Any],
        prompt: dict[str, Any],
        previous: RequestShape | None,
    ) -> tuple[dict[str, Any], RequestShape]:
        """The cache prediction of ``body`` (``prompt`` lowered for ``target``, about to be
        sent) after ``previous``, and its shape (the next request's reference; remembered as
        the session's when ``session_id`` is given)."""
        shape = sent_shape(target, body, prompt["modelLimits"]["model"], self._tokenizer(prompt))
        count_marked_prefixes(prompt.get("cacheBreakpoints", []), shape)
        memory = None
        if session_id is not None:
            session = self.memory(session_id)
            session.previous_sent, memory = shape, session.cache_memory
        return predict_for(provider, previous, shape, memory), shape

    def _tokenizer(self, prompt: dict[str, Any]) -> Tokenizer:
        try:
            return self.tokenizers.get(prompt.get("tokenizer"))
        except NotFoundError:
            return self.tokenizers.get(None)

    # --- workspace -------------------------------------------------------------------------

    def workspace(self, session_id: str, cwd: str | None = None) -> tuple[Path | None, Path | None]:
        """(primary workspace root, working directory); ``cwd`` must lie inside a root."""
        session = self.store.sessions.get(session_id)
        if not session.workspace_roots:
            return None, None
        root = Path(session.workspace_roots[0])
        if cwd is None:
            return root, root
        wanted = real_path(Path(cwd))
        for candidate in session.workspace_roots:
            if is_within(wanted, real_path(Path(candidate))):
                return Path(candidate), wanted
        raise InvalidRequestError(
            ErrorCode.PATH_OUTSIDE_WORKSPACE,
            f"cwd {cwd!r} is outside the session's workspace roots",
            details={"cwd": cwd, "workspaceRoots": session.workspace_roots},
        )

    def scan_instructions(
        self, session_id: str, cwd: str | None, mentioned: list[str], pinned: list[str]
    ) -> InstructionScan | None:
        """The live instruction scan of a session's primary workspace root (``context/sources``)."""
        root, here = self.workspace(session_id, cwd)
        if root is None:
            return None
        return discover_instructions(root, here, mentioned=mentioned, pinned=pinned)

    # --- 1. capture ------------------------------------------------------------------------

    def capture(self, params: InputFreezeParams, *, persist: bool) -> Captured:
        """Read everything the turn depends on, once (blocking: call from a worker thread)."""
        material = Material(self.store, persist)
        session = self.store.sessions.get(params.session_id)
        roots = [Path(r) for r in session.workspace_roots]
        root, here = self.workspace(params.session_id, params.cwd)
        diagnostics: list[dict[str, Any]] = []
        tokenizer = self.tokenizers.get(None)
        with self.store.sessions.history(
            params.session_id, tokenizer.info.id, lambda r: count_entries(tokenizer, r)
        ) as view:
            controls = fold_controls(view)
            through_seq = view.head
        pinned_paths = [
            t["locator"] for t in controls.pinned.values() if t["kind"] in ("file", "instruction")
        ]

        instructions: list[InstructionSnapshot] = []
        scan: InstructionScan | None = None
        if root is not None:
            scan = discover_instructions(
                root, here, mentioned=params.mentioned_paths, pinned=pinned_paths
            )
            diagnostics += [dump_wire(d) for d in scan.diagnostics]
            for item in scan.files:
                if item.info.applies:
                    instructions.append(
                        InstructionSnapshot(
                            path=item.info.path,
                            scope=item.info.scope,
                            hash=item.info.hash,
                            blob=material.put(item.text.encode()),
                            truncated=item.info.truncated,
                            depth=item.depth,
                        )
                    )

        skills = discover_skills(roots, self.home)
        diagnostics += [dump_wire(d) for d in skills.diagnostics]
        activated = []
        blob_chars = 40 if self.store.blobs.object_format == "sha1" else 64
        for name, record in sorted(controls.activated.items()):
            # ``blob`` is the activated text's blob id (stores written before the rename kept it
            # under ``hash``, where a client-appended entry without one carries the store's
            # content hash, 32 hex digits: that names no text, so the skill is left out).
            blob = record.get("blob") or record.get("hash")
            if isinstance(blob, str) and len(blob) == blob_chars and self.store.blobs.has(blob):
                activated.append(SkillSnapshot(name=name, blob=blob))
            elif record.get("blob") is not None:  # a client appended a blob id that is not one
                diagnostics.append(
                    {
                        "severity": "warning",
                        "code": "skills.activation_missing",
                        "path": str(record.get("path") or name),
                        "message": f"activated skill {name!r} names no stored text "
                        f"({str(record['blob'])[:80]!r}); left out",
                    }
                )

        pinned = pinned_files(controls.pinned, root, material.put, diagnostics)
        attachments = [capture_item(a, roots, material) for a in params.attachments]
        overrides = fragment_overrides(root, diagnostics)
        frozen = FrozenInput(
            session_id=params.session_id,
            through_seq=through_seq,
            clock=params.clock or _now_clock(),
            user_turn=params.user_turn,
            attachments=attachments,
            components=params.components,
            activated_entries=params.activated_entries,
            macro_context=params.macro_context,
            variables=params.variables,
            model_connection=params.model_connection,
            tools=params.tools,
            skills=[s.info for s in skills.skills],
            activated_skills=activated,
            instructions=instructions,
            pinned_files=pinned,
            fragment_overrides=overrides,
            cwd=str(here) if here is not None else None,
            mentioned_paths=params.mentioned_paths,
        )
        return Captured(frozen, material, diagnostics, scan)

    def instructions_diff(self, session_id: str, scan: InstructionScan | None) -> dict[str, Any]:
        """The per-turn diff against this session's previous live assembly (then remembered)."""
        memory = self.memory(session_id)
        current = scan or InstructionScan(project_root=Path("."), files=[], diagnostics=[])
        diff = diff_instructions(memory.instruction_hashes, current)
        memory.instruction_hashes = {f.info.path: f.info.hash for f in current.files}
        return dump_wire(diff)

    # --- 2. build --------------------------------------------------------------------------

    def build(
        self,
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

        tokenizer = self.tokenizers.get(None)
        view = self.store.sessions.history(
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
        harness.append(self._environment(frozen, profile))

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
                user_turn.append(
                    {"type": "image", "blob": item.blob or "", "mediaType": "image/png"}
                )
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
        )
        return Built(inputs, rendered_params, engine.unknown)

    def _environment(self, frozen: FrozenInput, profile: PromptProfile) -> SectionInput:
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

    def assemble_live(
        self, params: ContextAssembleParams, turn: list[dict[str, Any]] | None = None
    ) -> tuple[dict[str, Any], bytes]:
        """``context/assemble``: capture (nothing persisted) + build + assemble, answering
        with the messages already serialised.  ``turn``: the turn's messages after the user's
        (a run's settled rounds), as a run's later round assembles them."""
        now = _now_clock()
        clock = Clock(date=params.date, time=now.time) if params.date else now
        captured = self.capture(
            InputFreezeParams(
                session_id=params.session_id,
                user_turn=params.user_turn,
                tools=params.tools,
                cwd=params.cwd,
                mentioned_paths=params.mentioned_paths,
                clock=clock,
            ),
            persist=False,
        )
        sources = {**self.host_sources(params.session_id), **{s.id: s for s in params.sources}}
        diff = self.instructions_diff(params.session_id, captured.instruction_scan)
        built = self.build(
            captured.frozen,
            captured.material,
            params.profile,
            seed=seed_of(captured.frozen),
            reuse_instructions=params.reuse_instructions,
            extra_sources=list(sources.values()),
            diagnostics=captured.diagnostics,
            instructions_diff=diff,
            turn=turn,
        )
        built.inputs.previous = self.previous_request(params.session_id)
        result, messages_json = assemble_with_json(built.inputs)
        self.remember_request(params.session_id, result)
        provider = built.inputs.profile.provider
        target = PROVIDER_TARGET.get(provider)
        lower_to = params.lower_to
        if target is not None:  # the prediction on the body a run would send
            body = lower_result(result, target, self.store.blobs.get, params.session_id)
            previous = self.previous_sent(params.session_id, target)
            result["cache"], _ = self.account_sent(
                params.session_id, provider, target, body, result, previous
            )
            if lower_to == target:
                result["body"] = body
        if lower_to is not None and "body" not in result:
            result["body"] = lower_result(result, lower_to, self.store.blobs.get, params.session_id)
        return result, messages_json

    def assemble(
        self, params: ContextAssembleParams, turn: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """:meth:`assemble_live` without the serialised messages."""
        return self.assemble_live(params, turn)[0]


def lower_result(
    prompt: dict[str, Any], target: str, read_blob: Callable[[str], bytes], cache_key: str | None
) -> dict[str, Any]:
    """An assembled prompt (or a snapshot) as ``target``'s request body."""
    from protocol.context import AssembledPrompt
    from sidecar.context.lower import lower

    fields = AssembledPrompt.model_fields
    known = {f.alias or name for name, f in fields.items()}  # a snapshot has more: its own
    validated = AssembledPrompt.model_validate(
        {k: v for k, v in prompt.items() if k in known}, by_alias=True, by_name=False
    )
    return lower(validated, target, read_blob=read_blob, cache_key=cache_key)  # type: ignore[arg-type]


def seed_of(frozen: FrozenInput) -> str:
    """A stable seed for a live (unstored) input: the hash of its canonical JSON."""
    return hashlib.sha256(canonical(dump_wire(frozen))).hexdigest()[:32]
