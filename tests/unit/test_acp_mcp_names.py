"""The names MCP tools are offered under: ``<server>__<tool>``, valid for every provider."""

from __future__ import annotations

import re

from sidecar.acp.mcp_servers import tool_name

VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # protocol.context.ToolDefinition.name


def test_server_and_tool_joined() -> None:
    assert tool_name("calc", "add", set()) == "calc__add"


def test_unsafe_characters_become_underscores() -> None:
    name = tool_name("my server.v2", "get/issue", set())
    assert name == "my_server_v2__get_issue"
    assert VALID.match(name)
    assert VALID.match(tool_name("...", "", set()))  # nothing usable left: still a name


def test_long_names_are_cut_and_clashes_numbered() -> None:
    taken: set[str] = set()
    for _ in range(3):
        taken.add(tool_name("s" * 40, "t" * 40, taken))
    assert len(taken) == 3
    assert all(VALID.match(n) for n in taken)
    assert tool_name("a.b", "c", {"a_b__c"}) == "a_b__c_2"
