"""Where a session's history window last started: the floor its start never moves back past.

The window start (:mod:`sidecar.context.window`) moves forward by a quantum and holds still.
Computed from the history alone it can move *back*: a move of the masked boundary frees room,
the natural cut goes back (to the session's first turn when the whole transcript fits again),
and the next turns move it forward again — every move re-writes the whole cached transcript.
So the start the session last showed is kept, and an assembly never starts before it.

The fact is kept in the store beside the session's history — ``sessions/<id>/window.json``,
``{"byModel": {model: {"startSeq", "startId", "grids"}}}`` (``afterId``, the entry before, for
a window that started at the new turn; ``grids``, each cap's grid line and quantum the start
was snapped to: the start holds there until the history crosses a next line, see
:class:`~sidecar.context.window.Caps`) — so it survives a restart, and every path
that assembles for the session reads and writes the same one: ``context/assemble``
(:meth:`~sidecar.context.service.ContextService.assemble_live`) and a run's rounds
(:mod:`sidecar.runs.model_round`), in any process sharing the store.  It is written only when
the start moves forward (once per quantum), atomically.  It is kept per model: a model's
prompt cache is its own, so another model's window owes nothing to this one's.

A floor whose entry is no longer the one recorded (the history was rewound or replaced under
it) is ignored, as is one past the head; a window can then start anywhere again.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from sidecar.context.assemble import assemble_with_json
from sidecar.context.cache_pauses import apply_pauses
from sidecar.errors import NotFoundError
from sidecar.jsonbytes import dumps_bytes
from sidecar.store.jsonl import write_file_atomic

if TYPE_CHECKING:
    from pathlib import Path

    from sidecar.context.assemble import Assembled
    from sidecar.context.assembly_inputs import AssemblyInputs
    from sidecar.context.window_hold import Grids
    from sidecar.store.history import HistoryView
    from sidecar.store.sessions import SessionStore

__all__ = ["FILE", "assemble_held", "read_floor", "read_mark", "record_start"]

logger = logging.getLogger(__name__)

FILE = "window.json"


def _path(sessions: SessionStore, session_id: str) -> Path | None:
    try:
        return sessions.session_dir(session_id) / FILE
    except NotFoundError:
        return None


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except ValueError:
        logger.warning("unreadable window floor %s: ignored", path)
        return {}
    by_model = data.get("byModel") if isinstance(data, dict) else None
    return by_model if isinstance(by_model, dict) else {}


def _valid(view: HistoryView, mark: Any) -> int | None:
    if not isinstance(mark, dict):
        return None
    seq = mark.get("startSeq")
    if not isinstance(seq, int):
        return None
    if "afterId" in mark:  # a window that started at the new turn: named by the entry before
        before = seq - 1
        if not 1 <= before <= view.head:
            return None
        return seq if view.record(before).get("id") == mark["afterId"] else None
    if not 1 <= seq <= view.head:
        return None
    return seq if view.record(seq).get("id") == mark.get("startId") else None


def read_floor(
    sessions: SessionStore, session_id: str, model: str, view: HistoryView
) -> int | None:
    """The seq the session's window last started at for ``model``, if it still names the
    same entry of ``view``'s history (blocking: reads a small file)."""
    return read_mark(sessions, session_id, model, view)[0]


def read_mark(
    sessions: SessionStore, session_id: str, model: str, view: HistoryView
) -> tuple[int | None, Grids | None]:
    """(:func:`read_floor`, the caps' grid lines that start was snapped to — ``None`` when
    none were kept with it), from one read of the file."""
    path = _path(sessions, session_id)
    if path is None:
        return None, None
    mark = _read(path).get(model)
    floor = _valid(view, mark)
    if floor is None or not isinstance(mark, dict):
        return floor, None
    return floor, _grids(mark.get("grids"))


def _grids(raw: Any) -> Grids | None:
    """``grids`` as kept (``{cap: [line, quantum]}``), or ``None`` when malformed."""
    if not isinstance(raw, dict):
        return None
    out: Grids = {}
    for name, pair in raw.items():
        if not (isinstance(pair, list) and len(pair) == 2):
            return None
        line, quantum = pair
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in pair):
            return None
        out[str(name)] = (line, quantum)
    return out


def record_start(
    sessions: SessionStore,
    session_id: str,
    model: str,
    view: HistoryView,
    start_seq: int | None,
    known: int | None = None,
    grids: Grids | None = None,
) -> None:
    """Keep ``start_seq`` (an assembly's ``dashboard.historyWindow.startSeq``) as the
    session's floor for ``model`` when it is later than the one kept (blocking: an atomic
    write, once per move of the window).  A window that starts at the new turn (``head +
    1``: not in the history yet) is kept too, named by the entry before it — else the next
    request, the turn appended, would start where the window last started before.
    ``known``: the floor the assembly was held at (:func:`read_floor`), so a window that did
    not move costs no second read of the file.  ``grids``: the caps' grid lines the start was
    snapped to, kept with it."""
    if start_seq is None or not 1 <= start_seq <= view.head + 1 or start_seq == 1:
        return
    if known is not None and known >= start_seq:  # held where it was: nothing to read again
        return
    path = _path(sessions, session_id)
    if path is None:
        return
    by_model = _read(path)
    kept = _valid(view, by_model.get(model))
    if kept is not None and kept >= start_seq:
        return
    mark: dict[str, Any] = (
        {"startSeq": start_seq, "afterId": view.record(start_seq - 1)["id"]}
        if start_seq > view.head
        else {"startSeq": start_seq, "startId": view.record(start_seq)["id"]}
    )
    if grids and start_seq <= view.head:  # a start at the new turn was snapped to no line
        mark["grids"] = {name: list(pair) for name, pair in grids.items()}
    by_model[model] = mark
    try:
        write_file_atomic(path, dumps_bytes({"byModel": by_model}))
    except OSError as exc:  # the session went away under us: nothing to hold
        logger.warning("window floor of %s not kept: %s", session_id, exc)


def assemble_held(
    inputs: AssemblyInputs,
    sessions: SessionStore,
    session_id: str | None,
    at: float | None,
) -> Assembled:
    """Assemble ``inputs`` for a request sent at ``at`` (epoch seconds: the pauses before it
    decide the cache's lifetime and coldness, :func:`.cache_pauses.apply_pauses`), its
    window held at ``session_id``'s floor and the floor moved with it: the one sequence
    ``context/assemble`` and a run's rounds share.  ``session_id`` ``None``: a window of
    its own (a sub-agent's), not the session's."""
    model, view = inputs.profile.model, inputs.view
    if session_id is not None:
        inputs.window_floor, inputs.window_grids = read_mark(sessions, session_id, model, view)
    apply_pauses(inputs, at)
    assembled = assemble_with_json(inputs)
    if session_id is not None:
        start = assembled.result["dashboard"]["historyWindow"].get("startSeq")
        record_start(
            sessions, session_id, model, view, start, inputs.window_floor, assembled.window_grids
        )
    return assembled
