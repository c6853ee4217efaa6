"""The context service: the object the faces and runs hold for the context pipeline, and what
it remembers of each session between requests.

Every assembly takes one path, in two steps: :meth:`ContextService.capture` reads the world
once into a :class:`protocol.inputs.FrozenInput` (:mod:`sidecar.context.capture`);
:func:`~sidecar.context.build.build_inputs` turns a frozen input plus a profile into the inputs
of the pure :func:`~sidecar.context.assemble.assemble`.  A live
``context/assemble`` (:meth:`ContextService.assemble_live`) is capture (nothing persisted),
build, assemble, then the cache prediction on the body as a run would send it.

Per-session memory that is not history also lives here: host sources registered for the
session (kept until unregistered or the session is deleted), and what its previous requests
left (:mod:`sidecar.context.session_memory`: the instruction hashes of the previous live
assembly, for the per-turn diff; the shape of the previous request, as assembled and as sent,
where its cache entries are, against which the next request's breakpoints and cache
accounting are planned: :meth:`~ContextService.previous_request`,
:meth:`~ContextService.previous_sent`, :meth:`~ContextService.account_sent`), for the most
recently used sessions only.  :func:`lower_result` lowers an assembled prompt or a snapshot to
a provider's request body.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocol._base import dump_wire
from protocol.inputs import Clock, InputFreezeParams
from sidecar.context.build import build_inputs, seed_of
from sidecar.context.cache_accounting import predict_for, request_shape
from sidecar.context.cache_pauses import parse_time
from sidecar.context.calibration import Calibration
from sidecar.context.capture import capture_input, now_clock, workspace_paths
from sidecar.context.instructions import (
    InstructionScan,
    diff_instructions,
    discover_instructions,
)
from sidecar.context.sent import PROVIDER_TARGET, count_marked_prefixes, sent_shape
from sidecar.context.session_memory import SessionMemories, SessionMemory
from sidecar.context.window_floor import assemble_held
from sidecar.errors import NotFoundError

if TYPE_CHECKING:
    from collections.abc import Callable

    from protocol.context import ContextAssembleParams, HostSource
    from sidecar.context.cache_accounting import RequestShape
    from sidecar.context.capture import Captured
    from sidecar.context.lower.prompt import LoweringMemo
    from sidecar.context.tokens import Tokenizer, Tokenizers
    from sidecar.store import Store

__all__ = ["ContextService", "lower_result"]

logger = logging.getLogger(__name__)


class ContextService:
    """The context pipeline of one store, and its memory of each session (see the module
    docstring)."""

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
        self.calibration = Calibration(store.root)
        """What each model family's provider counts per token we count (the budget's scale)."""
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

    def remember_request(self, session_id: str, shape: RequestShape) -> None:
        """Record ``shape`` (an assembled prompt's: :class:`~sidecar.context.assemble.Assembled`)
        as the session's latest request."""
        self.memory(session_id).previous_request = shape

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
        session = None if session_id is None else self.memory(session_id)
        shape = sent_shape(
            target,
            body,
            prompt["modelLimits"]["model"],
            self._tokenizer(prompt),
            None if session is None else session.sent_blocks,
        )
        count_marked_prefixes(prompt.get("cacheBreakpoints", []), shape)
        memory = None
        if session is not None:
            session.previous_sent, memory = shape, session.cache_memory
        return predict_for(provider, previous, shape, memory), shape

    def _tokenizer(self, prompt: dict[str, Any]) -> Tokenizer:
        try:
            return self.tokenizers.get(prompt.get("tokenizer"))
        except NotFoundError:
            return self.tokenizers.get(None)

    # --- workspace -------------------------------------------------------------------------

    def scan_instructions(
        self, session_id: str, cwd: str | None, mentioned: list[str], pinned: list[str]
    ) -> InstructionScan | None:
        """The live instruction scan of a session's primary workspace root (``context/sources``)."""
        root, here = workspace_paths(self.store.sessions, session_id, cwd)
        if root is None:
            return None
        return discover_instructions(root, here, mentioned=mentioned, pinned=pinned)

    # --- 1. capture ------------------------------------------------------------------------

    def capture(self, params: InputFreezeParams, *, persist: bool) -> Captured:
        """Read everything the turn depends on, once (blocking: call from a worker thread):
        :func:`~sidecar.context.capture.capture_input`."""
        return capture_input(self.store, self.tokenizers, self.home, params, persist=persist)

    def instructions_diff(self, session_id: str, scan: InstructionScan | None) -> dict[str, Any]:
        """The per-turn diff against this session's previous live assembly (then remembered)."""
        memory = self.memory(session_id)
        current = scan or InstructionScan(project_root=Path("."), files=[], diagnostics=[])
        diff = diff_instructions(memory.instruction_hashes, current)
        memory.instruction_hashes = {f.info.path: f.info.hash for f in current.files}
        return dump_wire(diff)

    def assemble_live(
        self, params: ContextAssembleParams, turn: list[dict[str, Any]] | None = None
    ) -> tuple[dict[str, Any], bytes]:
        """``context/assemble``: capture (nothing persisted) + build + assemble, answering
        with the messages already serialised.  ``turn``: the turn's messages after the user's
        (a run's settled rounds), as a run's later round assembles them."""
        now = now_clock()
        clock = Clock(date=params.date, time=now.time) if params.date else now
        if turn is None and params.turn:
            turn = [
                {
                    "role": message.role,
                    "content": [dump_wire(part) for part in message.content],
                    "tokens": 0,
                    "provenance": [{"kind": "userTurn", "id": f"turn:{index}"}],
                }
                for index, message in enumerate(params.turn)
            ]
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
        built = build_inputs(
            self.store.sessions,
            self.tokenizers,
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
        inputs = built.inputs
        inputs.previous = self.previous_request(params.session_id)
        sessions, model = self.store.sessions, inputs.profile.model
        memory = self.memory(params.session_id)
        if params.previous_usage is not None and memory.counted is not None:
            counted_model, counted = memory.counted
            self.calibration.record(counted_model, params.previous_usage.prompt_tokens, counted)
        inputs.calibration = self.calibration.factor(model)
        at = parse_time(params.at) if params.at is not None else time.time()
        result, messages_json, shape, _ = assemble_held(inputs, sessions, params.session_id, at)
        self.remember_request(params.session_id, shape)
        memory.counted = (model, int(result["dashboard"]["used"]))
        provider = built.inputs.profile.provider
        target = PROVIDER_TARGET.get(provider)
        lower_to = params.lower_to
        if target is not None:  # the prediction on the body a run would send
            memo = self.memory(params.session_id).lowering
            body = lower_result(result, target, self.store.blobs.get, params.session_id, memo)
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
    prompt: dict[str, Any],
    target: str,
    read_blob: Callable[[str], bytes],
    cache_key: str | None,
    memo: LoweringMemo | None = None,
) -> dict[str, Any]:
    """An assembled prompt (or a snapshot) as ``target``'s request body (only what lowering
    reads of it is validated, and with ``memo`` — the session's — only the messages its last
    lowering did not have: :mod:`sidecar.context.lower.prompt`)."""
    from sidecar.context.lower import lower
    from sidecar.context.lower.prompt import lowering_prompt

    return lower(lowering_prompt(prompt, memo), target, read_blob=read_blob, cache_key=cache_key)  # type: ignore[arg-type]
