"""Only ``{"approved": true}`` approves: a host's answer whose ``approved`` is truthy but not
the boolean (``"no"``, ``"yes"``, ``1``, ``"true"``) is a refusal, for a built-in write and for
a host tool alike, over real stdio (the audit's survivor: a truthiness check passed every
test)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sidecar.client import SidecarClient
from tests.conftest import SidecarFactory
from tests.e2e.test_builtin_tools import HOST_TOOL, Host, by_call, call, text

pytestmark = pytest.mark.anyio

ODD_YESES: list[Any] = ["no", "yes", 1, "true", [1], {"really": True}]


class RawHost(Host):
    """Answers each ``approval/request`` with the next raw ``approved`` value."""

    def __init__(self, client: SidecarClient, raw: list[Any]) -> None:
        super().__init__(client)
        self.raw = list(raw)

    async def _approve(self, params: Any) -> Any:
        self.asked.append(params)
        return {"approved": self.raw.pop(0)}


async def test_only_the_boolean_true_approves(sidecars: SidecarFactory, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    client = await sidecars.start()
    sid = (await client.request("session/create", {"title": "t", "workspaceRoots": [str(root)]}))[
        "sessionId"
    ]
    rounds = []
    for n in range(len(ODD_YESES)):
        rounds.append(call("write_file", f"w{n}", path=f"f{n}.txt", content="x"))
        rounds.append(call("open_ticket", f"t{n}", title=str(n)))
    rounds.append(call("write_file", "ok", path="yes.txt", content="x"))
    host = RawHost(client, [v for v in ODD_YESES for _ in (0, 1)] + [True])
    events = await host.run(
        {
            "sessionId": sid,
            "userTurn": [{"type": "text", "text": "write"}],
            "tools": [HOST_TOOL],
            "approvalRequired": ["open_ticket"],
            "builtinTools": {"mode": "ask"},
            "maxRounds": 40,
            "script": {"rounds": [*rounds, {"text": "done"}]},
        }
    )
    assert events[-1]["payload"]["status"] == "completed", events[-1]
    results = by_call(events, "tool.resultStored")
    for n, value in enumerate(ODD_YESES):
        assert text(results[f"w{n}"]).startswith("not approved"), (value, results[f"w{n}"])
        assert results[f"t{n}"]["isError"] is True, (value, results[f"t{n}"])
    assert host.executed == []  # no host tool ran
    assert sorted(p.name for p in root.iterdir()) == ["yes.txt"]  # only the true one wrote
    assert len(host.asked) == 2 * len(ODD_YESES) + 1
    assert await client.close() == 0
