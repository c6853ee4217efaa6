"""The edges of the built-in tools an audit's mutations slipped past: ``.git`` is never walked
or searched (by either grep back end), the grep file cap holds at exactly its size, a NUL at
byte 0 makes a file binary, and an ACP "always allow" never outranks a mode that refuses."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from acp.schema import ToolCallUpdate

from sidecar.acp.approvals import Approvals
from sidecar.tools import ToolError, Workspace, glob_files, grep, list_dir, read_file
from sidecar.tools.bounds import DEFAULT_BOUNDS
from sidecar.tools.grep import ripgrep_path
from sidecar.tools.walk import walk
from tests.unit.test_acp_approvals import FakeClient

pytestmark = pytest.mark.anyio

BACKENDS = ["python", *(["rg"] if ripgrep_path() else [])]


def _repo_with_git(root: Path) -> Workspace:
    """A work tree whose ``.git`` holds the word searched for (a packed ref, a config, an
    object) at the top and in a submodule's ``.git`` file's directory."""
    (root / ".git" / "refs").mkdir(parents=True)
    (root / ".git" / "config").write_text("[remote] needle = 1\n")
    (root / ".git" / "refs" / "needle.py").write_text("needle\n")
    (root / "sub" / ".git").mkdir(parents=True)
    (root / "sub" / ".git" / "HEAD").write_text("needle\n")
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("needle = 1\n")
    return Workspace.of([str(root)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_grep_never_searches_git(tmp_path: Path, backend: str) -> None:
    ws = _repo_with_git(tmp_path)
    out = grep(ws, "needle", mode="files", backend=backend)  # type: ignore[arg-type]
    assert out.meta == {"matches": 1, "files": 1}, out.text
    assert ".git" not in out.text
    # a path inside .git named outright is the model's choice: it is searched
    inside = grep(ws, "needle", ".git", mode="files", backend=backend)  # type: ignore[arg-type]
    assert inside.meta["files"] >= 1


def test_the_walk_list_and_glob_never_enter_git(tmp_path: Path) -> None:
    ws = _repo_with_git(tmp_path)
    assert [w.rel for w in walk(ws.cwd)] == ["src", "src/a.py", "sub"]
    assert ".git" not in list_dir(ws, depth=5).text
    assert glob_files(ws, "**/*").text.splitlines() == ["src/a.py"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("extra", [0, 1])
def test_grep_reports_exactly_its_file_cap(tmp_path: Path, backend: str, extra: int) -> None:
    bounds = replace(DEFAULT_BOUNDS, grep_files=5)
    for n in range(bounds.grep_files + extra):
        (tmp_path / f"f{n}.txt").write_text("needle\n")
    ws = Workspace.of([str(tmp_path)])
    out = grep(ws, "needle", mode="files", bounds=bounds, backend=backend)  # type: ignore[arg-type]
    shown = [line for line in out.text.splitlines() if line.startswith("f")]
    assert len(shown) == bounds.grep_files
    assert out.truncated is bool(extra)
    assert ("1 more files not shown" in out.text) is bool(extra), out.text


@pytest.mark.parametrize("data", [b"\x00hello\n", b"hello\x00\n", b"a" * 8191 + b"\x00"])
def test_a_nul_in_the_first_8_kib_is_binary_from_byte_0(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "f.bin").write_bytes(data)
    with pytest.raises(ToolError) as refused:
        read_file(Workspace.of([str(tmp_path)]), "f.bin")
    assert refused.value.code == "tool.binary"


async def test_always_allow_never_outranks_a_mode_that_refuses() -> None:
    mode = {"s1": "ask"}

    async def before_asking(session_id: str) -> None:
        return None

    approvals = Approvals(lambda session_id: mode[session_id], before_asking)
    client = FakeClient(["allow_always"])
    approvals.client = client  # type: ignore[assignment]
    call = ToolCallUpdate(tool_call_id="a")
    assert (await approvals.decide("s1", "write_file", "edit", call))["approved"] is True
    assert (await approvals.decide("s1", "write_file", "edit", call))["approved"] is True
    mode["s1"] = "read_only"  # the user switches to read-only mid-session
    refused = await approvals.decide("s1", "write_file", "edit", call)
    assert refused["approved"] is False and "Read only" in refused["reason"]
    assert client.asked == ["a"]
