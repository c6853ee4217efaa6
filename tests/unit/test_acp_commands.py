"""The ACP face's commands and usage updates without a process: parsing a command,
the usage meter's figures and cost, the snapshot paragraph."""

from __future__ import annotations

from typing import Any

from acp.schema import ImageContentBlock, TextContentBlock, UsageUpdate

from sidecar.acp.commands import COMMANDS, available_commands, parse_command
from sidecar.acp.dashboard import snapshot_markdown
from sidecar.acp.usage import META_KEY, UsageMeter


def text(t: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=t)


def test_only_our_commands_are_commands() -> None:
    assert parse_command([text("/context")]) == ("context", "")
    assert parse_command([text("  /pin src/a.py  ")]) == ("pin", "src/a.py")
    assert parse_command([text("/nonsense")]) is None  # the model's
    assert parse_command([text("hi /context")]) is None
    assert parse_command([ImageContentBlock(type="image", data="", mime_type="image/png")]) is None
    assert parse_command([]) is None
    names = [c.name for c in available_commands().available_commands]
    assert names == [c.name for c in COMMANDS] == ["context", "compact", "pin", "snapshot"]


def event(kind: str, **payload: Any) -> dict[str, Any]:
    return {"type": kind, "payload": payload}


def test_usage_meter_reports_context_and_cumulative_cost() -> None:
    meter = UsageMeter()
    assembled = event("context.assembled", dashboard={"used": 1200, "window": 200_000})
    priced = {"model": "claude-sonnet-4-5", "cost": {"total": 0.01}}
    assert meter.updates("s", assembled) == []
    [first] = meter.updates(
        "s", event("model.completed", usage={"outputTokens": 1000}, predictedCache=priced)
    )
    assert isinstance(first, UsageUpdate)
    assert (first.used, first.size) == (1200, 200_000)
    assert first.cost is not None and first.cost.currency == "USD"
    assert first.cost.amount > 0.01  # the output is priced too
    # a sub-agent's call: its cost counts, its context is not the session's
    sub = event("model.completed", agent="a1", usage={}, predictedCache=priced)
    assert meter.updates("s", event("context.assembled", agent="a1", dashboard={"used": 9})) == []
    assert meter.updates("s", sub) == []
    [second] = meter.updates("s", event("model.completed", usage={}, predictedCache=priced))
    assert second.used == 1200
    assert second.cost is not None
    assert round(second.cost.amount - first.cost.amount, 6) == 0.02
    # an unpriced model: no cost rather than a made-up zero; other sessions are apart
    meter.updates("t", assembled)
    [other] = meter.updates("t", event("model.completed", usage={}, predictedCache={}))
    assert other.cost is None


def test_snapshot_paragraph() -> None:
    dashboard = {"used": 4400, "availableInput": 167_000}
    first = {"snapshotId": "snp_1", "dashboard": dashboard, "diff": {"fromSnapshot": None}}
    assert "first snapshot" in snapshot_markdown(first)
    diff = {
        "fromSnapshot": "snp_0",
        "sectionsAdded": ["pin:a.py"],
        "sectionsRemoved": [],
        "sectionsChanged": [],
        "ledgerChanges": [
            {"itemId": "x", "kind": "transcript", "before": "visible", "after": "masked"}
        ],
        "messagesBefore": 30,
        "messagesAfter": 32,
        "prefixUnits": 3,
        "prefixTokens": 391,
        "totalTokensBefore": 4000,
        "totalTokensAfter": 4400,
    }
    shown = snapshot_markdown({"snapshotId": "snp_2", "dashboard": dashboard, "diff": diff})
    assert shown.startswith("**Snapshot** `snp_2` · 4.4k / 167.0k tokens")
    assert "Against `snp_0`: 4,000 → 4,400 tokens, 30 → 32 messages" in shown
    assert "added `pin:a.py`" in shown and "transcript visible → masked" in shown


def test_usage_meter_sums_the_keep_everything_comparison_into_meta() -> None:
    meter = UsageMeter()
    meter.updates("s", event("context.assembled", dashboard={"used": 10, "window": 100}))
    priced = {"model": "claude-sonnet-4-5", "cost": {"total": 0.01}}
    [plain] = meter.updates("s", event("model.completed", usage={}, predictedCache=priced))
    assert plain.field_meta is None  # no call compared yet: nothing claimed
    one = {"cost": 0.05, "ownCost": 0.02, "compacted": False}
    two = {"cost": 0.04, "ownCost": 0.03, "compacted": True}
    meter.updates("s", event("model.completed", usage={}, keepEverything=one))
    sub = event("model.completed", agent="a1", usage={}, keepEverything=two)
    assert meter.updates("s", sub) == []  # a sub-agent's call is not compared
    [last] = meter.updates("s", event("model.completed", usage={}, keepEverything=two))
    assert last.field_meta == {
        META_KEY: {
            "keepEverythingCost": 0.09,
            "ownCost": 0.05,
            "saved": 0.04,
            "compactions": 1,
            "calls": 2,
        }
    }
