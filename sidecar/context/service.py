"""The context pipeline's I/O side: gather everything one assembly reads, then call the pure
:func:`sidecar.context.assemble.assemble`.

Reads the session (through the store's history view), the workspace (instructions, skills,
pinned files — all confined to the session's workspace roots), activated skills (from blobs),
and keeps per-session memory that is not history: the instruction hashes of the previous
assembly (for the per-turn diff) and host sources registered for the session.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocol._base import dump_wire
from protocol.context import ContextAssembleParams, HostSource
from protocol.errors import ErrorCode
from sidecar.context.assemble import (
    AssemblyInputs,
    SectionInput,
    assemble,
    assemble_with_json,
)
from sidecar.context.controls import ControlState, fold_controls
from sidecar.context.fragments import load_fragments
from sidecar.context.instructions import InstructionScan, diff_instructions, discover_instructions
from sidecar.context.limits import resolve_limits
from sidecar.context.paths import UnreadableFileError, is_within, read_capped_text, real_path
from sidecar.context.tokens import Tokenizers, count_entries
from sidecar.errors import InvalidRequestError, NotFoundError

if TYPE_CHECKING:
    from sidecar.store import Store

__all__ = ["PINNED_FILE_MAX_BYTES", "ContextService"]

#: Largest pinned file read into the prompt (bigger ones are cut and say so).
PINNED_FILE_MAX_BYTES = 256 * 1024


@dataclass(slots=True)
class _SessionMemory:
    instruction_hashes: dict[str, str] = field(default_factory=dict)
    host_sources: dict[str, HostSource] = field(default_factory=dict)


class ContextService:
    def __init__(self, store: Store, tokenizers: Tokenizers, home: Path | None = None) -> None:
        self.store = store
        self.tokenizers = tokenizers
        self.home = home if home is not None else Path.home()
        self._memory: dict[str, _SessionMemory] = {}

    def memory(self, session_id: str) -> _SessionMemory:
        return self._memory.setdefault(session_id, _SessionMemory())

    # --- workspace -------------------------------------------------------------------------

    def workspace(self, session_id: str, cwd: str | None = None) -> tuple[Path | None, Path | None]:
        """(primary workspace root, working directory) of a session; ``cwd`` must lie inside
        one of the session's roots."""
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
        root, here = self.workspace(session_id, cwd)
        if root is None:
            return None
        return discover_instructions(root, here, mentioned=mentioned, pinned=pinned)

    # --- assembly --------------------------------------------------------------------------

    def assemble(self, params: ContextAssembleParams) -> dict[str, Any]:
        """Blocking (reads files, may count tokens): call from a worker thread."""
        return assemble(self.inputs(params))

    def assemble_with_json(self, params: ContextAssembleParams) -> tuple[dict[str, Any], bytes]:
        """:meth:`assemble` plus the messages already serialised (for the RPC answer)."""
        return assemble_with_json(self.inputs(params))

    def inputs(self, params: ContextAssembleParams) -> AssemblyInputs:
        """Everything one assembly reads, gathered (blocking)."""
        profile = params.profile
        tokenizer = self.tokenizers.get(None)
        view = self.store.sessions.history(
            params.session_id, tokenizer.info.id, lambda recs: count_entries(tokenizer, recs)
        )
        controls = fold_controls(view)
        root, here = self.workspace(params.session_id, params.cwd)
        limits = resolve_limits(profile)
        diagnostics: list[dict[str, Any]] = []
        memory = self.memory(params.session_id)

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
            for f in load_fragments(profile.fragments, root)
        ]
        harness.append(self._environment(params, here))

        pinned_paths = [
            t["locator"] for t in controls.pinned.values() if t["kind"] in ("file", "instruction")
        ]
        instructions: list[tuple[SectionInput, int]] = []
        diff: dict[str, Any] = {}
        if root is not None:
            scan = discover_instructions(
                root, here, mentioned=params.mentioned_paths, pinned=pinned_paths
            )
            diagnostics += [dump_wire(d) for d in scan.diagnostics]
            diff = dump_wire(diff_instructions(memory.instruction_hashes, scan))
            memory.instruction_hashes = {f.info.path: f.info.hash for f in scan.files}
            for item in scan.files:
                if not item.info.applies:
                    continue
                info = item.info
                if params.reuse_instructions.get(info.path) == info.hash:
                    body = (
                        f"{info.path} (scope {info.scope}, hash {info.hash[:16]}) is unchanged "
                        "since it was last sent; its text is omitted here."
                    )
                else:
                    body = item.text
                instructions.append(
                    (
                        SectionInput(
                            id=f"instruction:{info.path}",
                            category="instructions",
                            title=info.path,
                            text=f'<project_instructions path="{info.path}" scope="{info.scope}">\n'
                            f"{body}\n</project_instructions>",
                            provenance={"kind": "instruction", "id": info.hash, "path": info.path},
                            ledger_kind="instruction",
                            locator=info.path,
                            pinned=f"instruction:{info.path}" in controls.pinned,
                        ),
                        item.depth,
                    )
                )

        catalog, omitted, activated = self._skills(
            params, controls, root, limits.window, tokenizer.count, diagnostics
        )
        pinned = self._pinned_files(controls, root, diagnostics)
        host = [
            SectionInput(
                id=f"host:{s.id}",
                category="host",
                title=s.title or s.id,
                text=f'<host_source id="{s.id}">\n{s.text}\n</host_source>',
                provenance={"kind": "host", "id": s.id},
                ledger_kind="host",
                locator=s.id,
                priority=s.priority,
            )
            for s in {**memory.host_sources, **{s.id: s for s in params.sources}}.values()
        ]
        tools = [dump_wire(t) for t in params.tools]
        for tool in tools:
            schema = tool.get("parameters")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                raise InvalidRequestError(
                    ErrorCode.PARAMS_INVALID,
                    f"tool {tool['name']!r}: parameters must be a JSON Schema of type object",
                    details={"tool": tool["name"]},
                )
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
            tools=tools,
            user_turn=[dump_wire(p) for p in params.user_turn],
            diagnostics=diagnostics,
            instructions_diff=diff,
            catalog_omitted=omitted,
        )
        return inputs

    def _environment(self, params: ContextAssembleParams, here: Path | None) -> SectionInput:
        day = params.date or datetime.now(UTC).date().isoformat()
        profile = params.profile
        text = (
            "<environment>\n"
            f"cwd: {here if here is not None else '(no workspace)'}\n"
            f"model: {profile.model}\n"
            f"search: {profile.search_mode}\n"
            f"date: {day}\n"
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

    def _skills(
        self,
        params: ContextAssembleParams,
        controls: ControlState,
        root: Path | None,
        window: int,
        count: Any,
        diagnostics: list[dict[str, Any]],
    ) -> tuple[SectionInput | None, list[str], list[SectionInput]]:
        from sidecar.context.skills import discover_skills, render_catalog

        session = self.store.sessions.get(params.session_id)
        scan = discover_skills([Path(r) for r in session.workspace_roots], self.home)
        diagnostics += [dump_wire(d) for d in scan.diagnostics]
        catalog: SectionInput | None = None
        omitted: list[str] = []
        if scan.skills:
            budget = int(window * params.profile.skills_catalog_share)
            text, _included, omitted = render_catalog(scan.skills, budget, count)
            if text:
                catalog = SectionInput(
                    id="skills:catalog",
                    category="skills",
                    title="available skills",
                    text=text,
                    provenance={"kind": "skillCatalog", "id": "skills:catalog"},
                    ledger_kind="skill",
                    locator="catalog",
                )
        activated: list[SectionInput] = []
        for name, record in sorted(controls.activated.items()):
            blob = record.get("hash")
            try:
                text = self.store.blobs.get(blob).decode("utf-8") if blob else ""
            except (NotFoundError, UnicodeDecodeError):
                diagnostics.append(
                    {
                        "severity": "warning",
                        "code": "skills.activation_missing",
                        "path": record.get("path") or name,
                        "message": f"the activated text of skill {name} is gone",
                    }
                )
                continue
            activated.append(
                SectionInput(
                    id=f"skill:{name}",
                    category="skills",
                    title=name,
                    text=text,
                    provenance={
                        "kind": "skill",
                        "id": name,
                        "path": record.get("path"),
                        "fromSeq": record["seq"],
                        "throughSeq": record["seq"],
                    },
                    ledger_kind="skill",
                    locator=name,
                    pinned=f"skill:{name}" in controls.pinned,
                )
            )
        return catalog, omitted, activated

    def _pinned_files(
        self, controls: ControlState, root: Path | None, diagnostics: list[dict[str, Any]]
    ) -> list[SectionInput]:
        out: list[SectionInput] = []
        for key, target in sorted(controls.pinned.items()):
            if target["kind"] != "file" or root is None:
                continue
            rel = target["locator"]
            real_root = real_path(root)
            path = real_path(root / rel)
            if os.path.isabs(rel) or not is_within(path, real_root):
                diagnostics.append(
                    {
                        "severity": "error",
                        "code": "context.path_outside_workspace",
                        "path": rel,
                        "message": "pinned file is outside the workspace",
                    }
                )
                continue
            try:
                capped = read_capped_text(path, PINNED_FILE_MAX_BYTES)
            except (UnreadableFileError, OSError) as exc:
                diagnostics.append(
                    {
                        "severity": "warning",
                        "code": "context.pinned_unreadable",
                        "path": rel,
                        "message": str(exc),
                    }
                )
                continue
            note = "\n[cut at 256 KiB]" if capped.truncated else ""
            out.append(
                SectionInput(
                    id=f"pin:{rel}",
                    category="pinned",
                    title=rel,
                    text=f'<pinned_file path="{rel}" hash="{capped.hash}">\n{capped.text}{note}\n'
                    "</pinned_file>",
                    provenance={"kind": "pin", "id": key, "path": rel},
                    ledger_kind="pin",
                    locator=rel,
                    pinned=True,
                )
            )
        return out
