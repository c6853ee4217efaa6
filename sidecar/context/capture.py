"""Step 1 of the context pipeline: capture — read the world once into a frozen input.

:func:`capture_input` reads the session head, the workspace's instructions, skills, pinned
files and fragment overrides, and the attachments into a :class:`protocol.inputs.FrozenInput`
whose texts are blobs.  The blobs are held by a :class:`Material`: written to the store when
the capture persists (``input/freeze``), kept in memory only for a live
``context/assemble``.  :func:`workspace_paths` says which workspace root and working
directory a request is about.
"""

from __future__ import annotations

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
from sidecar.context.controls import fold_controls
from sidecar.context.instructions import InstructionScan, discover_instructions
from sidecar.context.skills import discover_skills
from sidecar.context.tokens import count_entries
from sidecar.context.workspace_files import fragment_overrides, pinned_files
from sidecar.errors import InvalidRequestError, NotFoundError
from sidecar.inputs.items import capture_item
from sidecar.paths import is_within, real_path
from sidecar.store.blobs import git_blob_id

if TYPE_CHECKING:
    from sidecar.context.tokens import Tokenizers
    from sidecar.store import Store
    from sidecar.store.sessions import SessionStore

__all__ = ["Captured", "Material", "capture_input", "now_clock", "workspace_paths"]


class Material:
    """Blob bytes for one capture: always held in memory, read back from the store when not
    held; when ``persist`` (``input/freeze``, a run's input), written to the store with the
    input that refers to them (:meth:`store_input`) — after the capture, which computes in the
    CPU lane, from a worker thread: the lane waits for no fsync."""

    def __init__(self, store: Store, persist: bool) -> None:
        self._store = store
        self.persist = persist
        self.held: dict[str, bytes] = {}

    def put(self, data: bytes) -> str:
        blob_id = git_blob_id(data, self._store.blobs.object_format)
        self.held[blob_id] = data
        return blob_id

    def store_input(self, data: bytes) -> str:
        """Store the captured input's blob ``data`` durably, after the blobs it refers to
        (those held, when ``persist``), and return its id (waits for the disk)."""
        blobs = self._store.blobs
        if self.persist:
            for blob_id, held in self.held.items():
                blobs.put(held, blob_id=blob_id)
        return blobs.put(data)

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


def now_clock() -> Clock:
    now = datetime.now(UTC)
    return Clock(date=now.date().isoformat(), time=now.strftime("%H:%M"))


def workspace_paths(
    sessions: SessionStore, session_id: str, cwd: str | None = None
) -> tuple[Path | None, Path | None]:
    """(primary workspace root, working directory); ``cwd`` must lie inside a root."""
    session = sessions.get(session_id)
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


def capture_input(
    store: Store, tokenizers: Tokenizers, home: Path, params: InputFreezeParams, *, persist: bool
) -> Captured:
    """Read everything the turn depends on, once (blocking: call from a worker thread)."""
    material = Material(store, persist)
    session = store.sessions.get(params.session_id)
    roots = [Path(r) for r in session.workspace_roots]
    root, here = workspace_paths(store.sessions, params.session_id, params.cwd)
    diagnostics: list[dict[str, Any]] = []
    tokenizer = tokenizers.get(None)
    with store.sessions.history(
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

    skills = discover_skills(roots, home)
    diagnostics += [dump_wire(d) for d in skills.diagnostics]
    activated = []
    blob_chars = 40 if store.blobs.object_format == "sha1" else 64
    for name, record in sorted(controls.activated.items()):
        # ``blob`` is the activated text's blob id (stores written before the rename kept it
        # under ``hash``, where a client-appended entry without one carries the store's
        # content hash, 32 hex digits: that names no text, so the skill is left out).
        blob = record.get("blob") or record.get("hash")
        if isinstance(blob, str) and len(blob) == blob_chars and store.blobs.has(blob):
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
        clock=params.clock or now_clock(),
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
