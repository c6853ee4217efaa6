"""What the parts of one run loop share: what it runs with, and the turn it writes.

A :class:`LoopState` is one run (or one sub-agent inside it): the store, the context service,
the connection to the host (:class:`ClientBridge`), the run's journal and emitter, the
provider and the :class:`RunSettings`.  Its model round (:mod:`sidecar.runs.model_round`),
its compaction (:mod:`sidecar.runs.compaction`) and its tool round
(:mod:`sidecar.runs.tool_round`) all work on it, and all write the turn through
:meth:`LoopState.store_message`: to the session history (``history.appended``), or for a
sub-agent to its own transcript only (``agent.message``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from protocol._base import parse_wire
from protocol.entries import MessageInput
from protocol.inputs import FrozenInput
from sidecar.errors import SidecarError
from sidecar.inputs.profiles import Effective
from sidecar.runs.builtin import BuiltinRunner

if TYPE_CHECKING:
    from protocol.runs import RunStatus
    from sidecar.context.service import ContextService
    from sidecar.runs.journal import RunJournal
    from sidecar.runs.providers.base import Provider
    from sidecar.store import Store

__all__ = ["QUIET", "ClientBridge", "LoopState", "RunSettings"]

#: Statuses that only say what the sidecar does next by itself — assemble a prompt, call the
#: model, summarise — so that nothing outside it has changed since the last durable point:
#: their ``run.statusChanged`` is journaled and sent like every event (a ``kill -9`` loses
#: nothing a client saw) but not fsynced, and ``run.json`` keeps the last durable status (a
#: reader in another process takes the journal's newer one: ``RunStore.get``).  Made durable
#: at each of them, a run of two rounds paid 15 of its 21 fsyncs for them, and the appends and
#: session creations of every other client waited behind those fsyncs (``make soak``).  A
#: status that comes before something outside changes (``dispatchingTool``: a tool may write
#: files) is made durable — the journal fsynced; ``run.json`` is written at the run's creation
#: and its end only, a reader takes the journal's newer status as for a quiet one.
QUIET: frozenset[str] = frozenset({"assembling", "callingModel", "compacting"})


class ClientBridge(Protocol):
    """What a run needs from the connection to the host."""

    def notify(self, method: str, params: Any) -> None: ...

    def host_assembles(self) -> bool:
        """Whether the host assembles sub-agent prompts itself (``assembly/request``)."""
        ...

    def backlog(self) -> int:
        """Bytes sent to the host but not yet read by it."""
        ...

    async def request(self, method: str, params: Any, timeout_s: float) -> Any:
        """Send a server->client request; on cancellation the host is told
        (``$/cancelRequest``); raises ``TimeoutError`` after ``timeout_s`` seconds."""
        ...


@dataclass(slots=True)
class RunSettings:
    max_rounds: int
    tool_timeout_s: float
    approval_required: frozenset[str]
    input_id: str
    frozen: FrozenInput
    effective: Effective
    turn: list[dict[str, Any]] = field(default_factory=list)
    """The turn so far as prompt messages (user message, settled rounds)."""
    turn_seqs: list[int] = field(default_factory=list)
    interrupted: frozenset[str] = frozenset()
    """Calls of a resumed run whose command had started when the sidecar stopped: answered
    as interrupted, never run again (:func:`sidecar.runs.start_settings.started_commands`)."""
    delegation: bool = False
    """Offer ``agent_delegate`` / ``agent_handoff`` to the model."""
    scope: str = "root"
    """``root``, or for a sub-agent ``delegate`` / ``handoff``."""
    compaction: str = "auto"
    """``auto``: compact first when an assembly advises it; ``off``: never."""
    compacted: dict[str, Any] | None = None
    """The compaction entry this run recorded (history after the input's head)."""
    builtin: BuiltinRunner | None = None
    """The built-in workspace tools the run offers, run in the sidecar (``builtinTools``)."""


class LoopState:
    def __init__(
        self,
        *,
        store: Store,
        context: ContextService,
        bridge: ClientBridge,
        journal: RunJournal,
        emit: Any,
        provider: Provider,
        settings: RunSettings,
        agent: str | None = None,
        host_assembles: bool = False,
    ) -> None:
        self.store = store
        self.context = context
        self.bridge = bridge
        self.journal = journal
        self.provider = provider
        self.s = settings
        self.session_id = str(journal.record["sessionId"])
        self.agent = agent
        """For a sub-agent: the call id that started it (tags its events; no history)."""
        self.host_assembles = host_assembles
        self.handoff: str | None = None
        """A sub-agent's answer that became the turn's answer (``agent_handoff``)."""
        self.emit = emit if agent is None else (lambda t, p: emit(t, {**p, "agent": agent}))

    async def status(self, status: RunStatus) -> None:
        """Change the run's status: journaled like every event (written before it is sent);
        made durable — the journal fsynced — unless it is one of :data:`QUIET`."""
        if self.agent is None:
            self.journal.record["status"] = status
        self.emit("run.statusChanged", {"status": status})
        if status not in QUIET:
            await self.journal.persist(record=False)

    async def ask(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        """The host's answer to a server->client request, or ``{"error": ...}`` when it
        failed or did not answer in time (the run goes on; the caller decides)."""
        try:
            return await self.bridge.request(method, params, timeout_s)
        except TimeoutError:
            return {"error": f"{method} timed out after {timeout_s:g} s"}
        except SidecarError as exc:
            return {"error": exc.message}
        except Exception as exc:
            return {"error": f"{method} failed: {exc}"}

    async def store_message(self, role: str, content: list[dict[str, Any]]) -> int:
        """Append a message to the turn (and to history, for the run itself); its seq."""
        if self.agent is not None:  # a sub-agent's conversation stays out of history
            self.s.turn.append(
                {
                    "role": role,
                    "content": content,
                    "tokens": 0,
                    "provenance": [
                        {"kind": "transcript", "id": f"{self.agent}:{len(self.s.turn)}"}
                    ],
                }
            )
            self.emit("agent.message", {"role": role, "content": content})
            return 0
        entry = parse_wire(MessageInput, {"kind": "message", "role": role, "content": content})
        refs, _ = await self.store.sessions.append(self.session_id, [entry])
        ref = refs[0]
        self.s.turn.append(
            {
                "role": role,
                "content": content,
                "tokens": 0,
                "provenance": [
                    {
                        "kind": "transcript",
                        "id": ref["id"],
                        "fromSeq": ref["seq"],
                        "throughSeq": ref["seq"],
                    }
                ],
            }
        )
        self.s.turn_seqs.append(ref["seq"])
        self.emit("history.appended", {"seqs": [ref["seq"]], "role": role})
        return int(ref["seq"])
