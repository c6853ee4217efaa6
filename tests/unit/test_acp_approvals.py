"""The ACP face's approval modes (sidecar/acp/approvals.py) and plan tool
(sidecar/acp/plan.py), without a process: the decision table, "always allow", malformed
plans."""

from __future__ import annotations

from typing import Any

import pytest
from acp.schema import (
    AgentPlanUpdate,
    AllowedOutcome,
    DeniedOutcome,
    RequestPermissionResponse,
    ToolCallStart,
    ToolCallUpdate,
)

from sidecar.acp.approvals import Approvals
from sidecar.acp.mapping import RunUpdates
from sidecar.acp.plan import PlanTool, plan_update
from sidecar.acp.replay import history_updates
from sidecar.tools.approvals import APPROVAL_MODES, Effect

pytestmark = pytest.mark.anyio


class FakeClient:
    """Answers permission requests from a list (the SDK connection's method, by name)."""

    def __init__(self, answers: list[str | None]) -> None:
        self.answers = answers
        self.asked: list[str] = []
        self.titles: list[str] = []
        self.kinds: list[list[str]] = []

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call.tool_call_id)
        self.titles.append(tool_call.title or "")
        self.kinds.append([o.option_id for o in options])
        answer = self.answers.pop(0)
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=answer)
        )


def _approvals(mode: str, answers: list[str | None]) -> tuple[Approvals, FakeClient]:
    async def before_asking(session_id: str) -> None:
        return None

    approvals = Approvals(lambda session_id: mode, before_asking)
    client = FakeClient(answers)
    approvals.client = client  # type: ignore[assignment]
    return approvals, client


def _call(call_id: str) -> ToolCallUpdate:
    return ToolCallUpdate(tool_call_id=call_id)


# (mode, effect) -> "allowed" | "asked" | "refused"
TABLE: dict[tuple[str, Effect], str] = {
    ("ask", "read"): "allowed",
    ("ask", "edit"): "asked",
    ("ask", "execute"): "asked",
    ("ask", "mcp"): "asked",
    ("accept_edits", "read"): "allowed",
    ("accept_edits", "edit"): "allowed",
    ("accept_edits", "execute"): "asked",
    ("accept_edits", "mcp"): "asked",
    ("auto", "read"): "allowed",
    ("auto", "edit"): "allowed",
    ("auto", "execute"): "sandboxed",
    ("auto", "mcp"): "asked",
    ("plan", "read"): "allowed",
    ("plan", "edit"): "refused",
    ("plan", "execute"): "refused",
    ("plan", "mcp"): "refused",
    ("read_only", "read"): "allowed",
    ("read_only", "edit"): "refused",
    ("read_only", "execute"): "refused",
    ("read_only", "mcp"): "asked",
    ("allow_all", "read"): "allowed",
    ("allow_all", "edit"): "allowed",
    ("allow_all", "execute"): "allowed",
    ("allow_all", "mcp"): "allowed",
}


def test_the_table_covers_every_mode_and_effect() -> None:
    assert {mode for mode, _ in TABLE} == {m.id for m in APPROVAL_MODES}


@pytest.mark.parametrize(("mode", "effect"), sorted(TABLE))
async def test_decision_table(mode: str, effect: Effect) -> None:
    approvals, client = _approvals(mode, ["allow_once"])
    decision = await approvals.decide("ses", "tool", effect, _call("c1"))
    expected = TABLE[(mode, effect)]
    assert bool(client.asked) == (expected == "asked")
    assert decision["approved"] == (expected != "refused")
    assert decision.get("sandboxed", False) == (expected == "sandboxed")
    if expected == "refused":
        assert f"{approvals.mode('ses').name} mode" in decision["reason"]


async def test_auto_asks_once_only_to_leave_the_sandbox() -> None:
    """A command marked ``sandbox: "escalate"`` is asked about, with its justification and
    without "always"; a blocked one too; approved, it runs outside (no ``sandboxed``)."""
    approvals, client = _approvals("auto", ["allow_once", "reject_once"])
    arguments = {"command": "curl x", "sandbox": "escalate", "justification": "needs pypi"}
    call = ToolCallUpdate(tool_call_id="c1", title="Run `curl x`")
    approved = await approvals.decide("ses", "run_command", "execute", call, arguments)
    assert approved == {"approved": True}
    blocked = await approvals.leave_sandbox("ses", "run_command", _call("c2"), "the network")
    assert blocked == {"approved": False, "reason": "the user rejected it"}
    assert client.asked == ["c1", "c2"]
    assert client.titles[0] == "Run `curl x` (run outside the sandbox: needs pypi)"
    assert all("allow_always" not in kinds for kinds in client.kinds)


async def test_always_is_per_session_and_tool_and_reject_or_cancel_refuse() -> None:
    approvals, client = _approvals(
        "ask", ["allow_always", "reject_once", "allow_once", None, "allow_once"]
    )
    assert (await approvals.decide("s1", "write_file", "edit", _call("a")))["approved"]
    assert (await approvals.decide("s1", "write_file", "edit", _call("b")))["approved"]
    rejected = await approvals.decide("s1", "run_command", "execute", _call("c"))
    assert rejected == {"approved": False, "reason": "the user rejected it"}
    # another session asks again for the same tool
    assert (await approvals.decide("s2", "write_file", "edit", _call("d")))["approved"]
    cancelled = await approvals.decide("s2", "run_command", "execute", _call("e"))
    assert cancelled["approved"] is False and "cancelled" in cancelled["reason"]
    assert client.asked == ["a", "c", "d", "e"]


class _Kept:
    """Kept answers whose writes fail as a read-only session's do (another window holds it)."""

    def __init__(self, kept: set[str]) -> None:
        self.kept = kept

    def always_allowed(self, session_id: str) -> frozenset[str]:
        return frozenset(self.kept)

    async def allow_always(self, session_id: str, tool: str) -> None:
        from protocol.error_codes import ErrorCode
        from sidecar.errors import BusyError

        raise BusyError(ErrorCode.SESSION_HELD, "held by another window")


async def test_kept_answers_count_and_one_not_kept_holds_for_the_process() -> None:
    async def before_asking(session_id: str) -> None:
        return None

    approvals = Approvals(lambda session_id: "ask", before_asking, kept=_Kept({"run_command"}))
    client = FakeClient(["allow_always"])
    approvals.client = client  # type: ignore[assignment]
    assert (await approvals.decide("s1", "run_command", "execute", _call("a")))["approved"]
    # not kept (the session is read-only here): approved, and not asked again in this process
    assert (await approvals.decide("s1", "write_file", "edit", _call("b")))["approved"]
    assert (await approvals.decide("s1", "write_file", "edit", _call("c")))["approved"]
    assert client.asked == ["b"]


def _plan_call(call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool.callRequested",
        "runId": "run_1",
        "payload": {"callId": call_id, "name": "update_plan", "arguments": arguments},
    }


async def test_plan_calls_are_plans_and_their_results_nothing() -> None:
    entries = [
        {"content": "read", "status": "completed"},
        {"content": "write", "status": "pending"},
    ]
    updates = RunUpdates(lambda seq: None, lambda blob: b"", "/ws")
    [plan] = updates.updates(_plan_call("p1", {"entries": entries}))
    assert isinstance(plan, AgentPlanUpdate)
    assert [(e.content, e.status, e.priority) for e in plan.entries] == [
        ("read", "completed", "medium"),
        ("write", "pending", "medium"),
    ]
    result = {"type": "tool.resultStored", "runId": "run_1", "payload": {"callId": "p1", "seq": 3}}
    assert updates.updates(result) == []
    # a malformed plan shows nothing; the model reads what is wrong
    assert updates.updates(_plan_call("p2", {"entries": [{"content": "x"}]})) == []
    answer = await PlanTool().execute({"arguments": {"entries": [{"content": "x"}]}})
    assert answer["isError"] and "status" in answer["content"][0]["text"]
    ok = await PlanTool().execute({"arguments": {"entries": entries}})
    assert ok == {
        "content": [{"type": "text", "text": "plan updated (2 entries)"}],
        "isError": False,
    }
    # other tools are tool calls as before
    other = {**_plan_call("r1", {"path": "a"}), "payload": {"callId": "r1", "name": "read_file"}}
    assert isinstance(updates.updates(other)[0], ToolCallStart)


def test_plan_replays_on_load_without_its_result() -> None:
    entries = [{"content": "read", "status": "in_progress", "priority": "high"}]
    history = [
        {
            "kind": "message",
            "role": "assistant",
            "id": "e1",
            "content": [
                {
                    "type": "toolCall",
                    "callId": "p1",
                    "name": "update_plan",
                    "arguments": {"entries": entries},
                }
            ],
        },
        {
            "kind": "message",
            "role": "user",
            "id": "e2",
            "content": [
                {"type": "toolResult", "callId": "p1", "content": [{"type": "text", "text": "ok"}]}
            ],
        },
    ]
    assert history_updates(history, lambda blob: b"", "/ws") == [plan_update({"entries": entries})]
