"""The one approval table both faces read (sidecar/tools/approvals.py): read-only tools never
ask in any mode; writes and commands follow the mode; every built-in tool has an effect."""

from __future__ import annotations

import pytest

from sidecar.tools.approvals import APPROVAL_MODES, escalation_asked, mode_named, session_mode
from sidecar.tools.catalog import BUILTIN_NAMES, DEFINITIONS, EFFECTS

TABLE = {
    "ask": {"read": "allow", "edit": "ask", "execute": "ask", "mcp": "ask"},
    "accept_edits": {"read": "allow", "edit": "allow", "execute": "ask", "mcp": "ask"},
    "auto": {"read": "allow", "edit": "allow", "execute": "sandbox", "mcp": "ask"},
    "plan": {"read": "allow", "edit": "refuse", "execute": "refuse", "mcp": "refuse"},
    "read_only": {"read": "allow", "edit": "refuse", "execute": "refuse", "mcp": "ask"},
    "allow_all": {"read": "allow", "edit": "allow", "execute": "allow", "mcp": "allow"},
}


@pytest.mark.parametrize("mode", [m.id for m in APPROVAL_MODES])
def test_each_mode_decides_as_the_table_says(mode: str) -> None:
    approval = mode_named(mode)
    assert approval is not None
    assert {e: approval.verdict(e) for e in TABLE[mode]} == TABLE[mode]  # type: ignore[arg-type]


def test_read_only_tools_never_ask_in_any_mode() -> None:
    readers = [n for n in BUILTIN_NAMES if EFFECTS[n] == "read"]
    assert readers == ["list_dir", "glob", "grep", "read_file", "recall", "update_plan"]
    for mode in APPROVAL_MODES:
        assert all(mode.verdict(EFFECTS[n]) == "allow" for n in readers), mode.id


def test_every_builtin_has_a_schema_and_an_effect() -> None:
    assert set(BUILTIN_NAMES) == set(DEFINITIONS) == set(EFFECTS)
    assert [DEFINITIONS[n]["name"] for n in BUILTIN_NAMES] == list(BUILTIN_NAMES)


def test_a_session_names_its_mode_in_meta() -> None:
    assert session_mode({"acp": {"approvalMode": "read_only"}}).id == "read_only"  # type: ignore[union-attr]
    assert session_mode({"acp": {"approvalMode": "bogus"}}) is None
    assert session_mode(None) is None and session_mode({"acp": "x"}) is None


def test_escalation_is_read_from_the_call() -> None:
    assert escalation_asked({"command": "ls"}) is None
    assert escalation_asked({"sandbox": "escalate"}) == ""
    assert escalation_asked({"sandbox": "escalate", "justification": " pip install "}) == (
        "pip install"
    )
    assert escalation_asked({"sandbox": "yes", "justification": "x"}) is None
    props = DEFINITIONS["run_command"]["parameters"]["properties"]
    assert props["sandbox"]["enum"] == ["escalate"] and "justification" in props
