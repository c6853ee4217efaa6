"""The built-in workspace tools (sidecar.tools), on a real directory tree: confinement, bounds,
.gitignore, edits all or nothing, and the two grep back ends agreeing."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from sidecar.tools import (
    Bounds,
    Edit,
    ToolError,
    Workspace,
    edit_file,
    glob_files,
    grep,
    list_dir,
    read_file,
    run_command,
    write_file,
)
from sidecar.tools.bounds import count_tokens
from sidecar.tools.grep import Backend, ripgrep_path

BACKENDS: list[Backend] = ["rg", "python"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small project: code, a test, a .gitignore'd build copy of the same code."""
    root = tmp_path / "app"
    (root / "calc").mkdir(parents=True)
    (root / "calc" / "add.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_add.py").write_text(
        "from calc.add import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (root / "build").mkdir()
    (root / "build" / "add.py").write_text("def add(a, b):\n    return a - b\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "debug.log").write_text("return a - b\n")
    return root


@pytest.fixture
def ws(repo: Path) -> Workspace:
    return Workspace.of([str(repo)])


def test_rg_comes_with_the_install() -> None:
    assert ripgrep_path() is not None


# --- confinement ---------------------------------------------------------------------------


def test_a_symlink_out_of_the_root_is_refused(repo: Path, ws: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("key=1\n")
    (repo / "link.txt").symlink_to(secret)
    (repo / "linkdir").symlink_to(tmp_path)
    calls: tuple[Callable[[], object], ...] = (
        lambda: read_file(ws, "link.txt"),
        lambda: read_file(ws, "linkdir/secret.txt"),
        lambda: write_file(ws, "link.txt", "x"),
        lambda: list_dir(ws, "linkdir"),
        lambda: grep(ws, "key", "link.txt"),
    )
    for call in calls:
        with pytest.raises(ToolError) as info:
            call()
        assert info.value.code == "tool.path_outside_roots"
    assert secret.read_text() == "key=1\n"


def test_dotdot_and_a_sibling_sharing_the_prefix_are_outside(
    repo: Path, ws: Workspace, tmp_path: Path
) -> None:
    sibling = tmp_path / "app-secrets"
    sibling.mkdir()
    (sibling / "k").write_text("k\n")
    for raw in ("../app-secrets/k", str(sibling / "k"), "/etc/passwd", "calc/../../app-secrets/k"):
        with pytest.raises(ToolError) as info:
            read_file(ws, raw)
        assert info.value.code == "tool.path_outside_roots", raw
    assert read_file(ws, "calc/../calc/add.py").meta["lines"] == 2


def test_nul_bytes_and_absurd_lengths_say_so(ws: Workspace) -> None:
    with pytest.raises(ToolError, match="NUL byte") as info:
        write_file(ws, "a\x00b", "x")
    assert info.value.code == "tool.path_invalid"
    with pytest.raises(ToolError, match="characters long"):
        read_file(ws, "a" * 100_000)
    with pytest.raises(ToolError, match="must be a string"):
        read_file(ws, ["a"])


def test_fifos_and_devices_are_refused_without_blocking(repo: Path, ws: Workspace) -> None:
    os.mkfifo(repo / "pipe")
    outcome: list[str] = []

    def calls() -> None:
        tries: tuple[Callable[[], object], ...] = (
            lambda: read_file(ws, "pipe"),
            lambda: write_file(ws, "pipe", "x"),
            lambda: edit_file(ws, "pipe", [Edit("a", "b")]),
            lambda: read_file(ws, "/dev/zero"),
        )
        for call in tries:
            try:
                call()
            except ToolError as exc:
                outcome.append(exc.code)

    worker = threading.Thread(target=calls, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "a tool blocked on a FIFO"
    assert outcome[:3] == ["tool.not_a_file"] * 3
    assert outcome[3] in ("tool.path_outside_roots", "tool.not_a_file")


# --- read ----------------------------------------------------------------------------------


def test_a_long_file_comes_back_bounded_and_says_how_to_go_on(repo: Path, ws: Workspace) -> None:
    (repo / "big.py").write_text("".join(f"x{i} = {i}\n" for i in range(1, 5001)))
    out = read_file(ws, "big.py")
    lines = out.text.splitlines()
    assert out.truncated
    assert lines[0] == "   1\tx1 = 1"
    shown = len(lines) - 1  # 2,000 lines or the token bound, whichever comes first
    assert 1000 < shown <= 2000 and len(out.text) <= Bounds().max_chars + 100
    assert count_tokens(out.text) <= Bounds().max_tokens
    assert lines[-1].startswith(f"[lines 1-{shown} of 5000 shown; read on with offset={shown + 1}")
    assert read_file(ws, "big.py", limit=10).text.splitlines()[-1].startswith("[lines 1-10 of")
    more = read_file(ws, "big.py", offset=4999)
    assert not more.truncated and more.text.splitlines() == [
        "4999\tx4999 = 4999",
        "5000\tx5000 = 5000",
    ]
    small = read_file(ws, "big.py", bounds=Bounds(max_tokens=100))
    assert len(small.text) < 100 * 3 + 200 and small.truncated


def test_long_lines_binary_and_huge_files(repo: Path, ws: Workspace) -> None:
    (repo / "wide.txt").write_text("y" * 10_000 + "\n")
    assert "8000 more characters cut" in read_file(ws, "wide.txt").text
    (repo / "blob.bin").write_bytes(b"\x7fELF\x00\x01" * 10)
    with pytest.raises(ToolError) as info:
        read_file(ws, "blob.bin")
    assert info.value.code == "tool.binary"
    (repo / "huge.txt").write_bytes(b"z\n" * 600)
    with pytest.raises(ToolError) as info:
        read_file(ws, "huge.txt", bounds=Bounds(max_file_bytes=1000))
    assert info.value.code == "tool.too_large"


def test_a_directory_swapped_for_a_symlink_mid_walk_is_not_listed_through(
    repo: Path, tmp_path: Path
) -> None:
    """The walk (list_dir, glob, grep's python back end) goes by descriptor: a directory
    replaced by a symlink to outside between its parent's listing and its own is skipped,
    never listed where the link points (by path, ``os.scandir`` followed it)."""
    from sidecar.tools.walk import walk

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "private-key.pem").write_text("")
    (repo / "calc" / "deep").mkdir()
    (repo / "calc" / "deep" / "x.py").write_text("")
    seen: list[str] = []
    for entry in walk(repo):
        seen.append(entry.rel)
        if entry.rel == "calc":  # listed as a directory; swapped before it is entered
            os.rename(repo / "calc", tmp_path / "calc-moved")
            (repo / "calc").symlink_to(outside)
    assert "calc" in seen and "tests/test_add.py" in seen
    assert not any(rel.startswith("calc/") for rel in seen), seen


# --- list / glob ---------------------------------------------------------------------------


def test_list_and_glob_skip_what_git_ignores(ws: Workspace) -> None:
    tree = list_dir(ws).text.splitlines()
    assert tree[0] == "./"
    assert "calc/" in tree and "  add.py" in tree and ".gitignore" in tree
    assert "build/" not in tree and "debug.log" not in tree
    found = glob_files(ws, "**/*.py").text.splitlines()
    assert sorted(found) == ["calc/add.py", "tests/test_add.py"]
    assert glob_files(ws, "*.py", "calc").text == "calc/add.py"


def test_list_stops_at_its_limit_and_says_so(repo: Path, ws: Workspace) -> None:
    many = repo / "many"
    many.mkdir()
    for i in range(700):
        (many / f"f{i:03}.txt").write_text("")
    out = list_dir(ws, "many")
    assert out.truncated and out.text.splitlines()[-1].startswith("[200 more entries not shown")
    assert glob_files(ws, "many/*.txt").text.splitlines()[-1].startswith("[700 files match")


# --- grep ----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_grep_does_not_find_the_ignored_copy(ws: Workspace, backend: Backend) -> None:
    out = grep(ws, r"return a - b", backend=backend)
    assert out.text.splitlines() == [
        "1 match in 1 file",
        "calc/add.py: 1 match",
        "  2:     return a - b",
    ]
    assert out.locations[0][1] == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_grep_modes_context_case_and_glob(ws: Workspace, backend: Backend) -> None:
    b = backend
    files = grep(ws, "ADD", ignore_case=True, mode="files", backend=b).text.splitlines()
    assert files == ["4 matches in 2 files", "calc/add.py: 1 match", "tests/test_add.py: 3 matches"]
    assert grep(ws, "add", mode="count", backend=b).text == "4 matches in 2 files"
    only = grep(ws, "add", glob="calc/*", backend=b).meta
    assert only == {"matches": 1, "files": 1}
    ctx = grep(ws, "assert", "tests", context=1, backend=b).text.splitlines()
    assert ctx[2:] == ["  4- def test_add():", "  5:     assert add(2, 3) == 5"]
    with pytest.raises(ToolError) as info:
        grep(ws, "(", backend=b)
    assert info.value.code == "tool.bad_pattern"


@pytest.mark.parametrize("backend", BACKENDS)
def test_twenty_thousand_matches_come_back_bounded(
    repo: Path, ws: Workspace, backend: Backend
) -> None:
    gen = repo / "gen"
    gen.mkdir()
    for f in range(200):
        (gen / f"m{f:03}.py").write_text("".join(f"TODO item {i}\n" for i in range(100)))
    out = grep(ws, "TODO", backend=backend)
    lines = out.text.splitlines()
    assert lines[0] == "20000 matches in 200 files"
    assert out.truncated and len(out.text) <= Bounds().max_chars + 200
    assert count_tokens(out.text) <= Bounds().max_tokens
    assert "… 50 more in this file (grep with path=gen/m000.py)" in out.text
    assert lines[-1].startswith("[") and "narrow with path=, glob=" in lines[-1]


def test_the_two_backends_agree(repo: Path, ws: Workspace) -> None:
    (repo / "calc" / "sub.py").write_text("def sub(a, b):\n    return a - b\n# add later\n")
    (repo / "calc" / ".gitignore").write_text("*.tmp\n")
    (repo / "calc" / "x.tmp").write_text("add\n")
    for pattern, kw in (
        ("add", {}),
        (r"a\s*-\s*b", {"context": 2}),
        ("ADD", {"ignore_case": True}),
    ):
        rg = grep(ws, pattern, backend="rg", **kw)
        py = grep(ws, pattern, backend="python", **kw)
        assert rg.text == py.text, pattern


# --- write / edit --------------------------------------------------------------------------


def test_write_creates_and_replaces_keeping_the_mode(repo: Path, ws: Workspace) -> None:
    assert write_file(ws, "new/dir/f.txt", "a\nb\n").text == "created new/dir/f.txt (2 lines)"
    script = repo / "run.sh"
    script.write_text("echo 1\n")
    script.chmod(0o755)
    write_file(ws, "run.sh", "echo 2\n")
    assert script.read_text() == "echo 2\n" and script.stat().st_mode & 0o777 == 0o755
    assert not [p for p in repo.iterdir() if p.name.startswith(".run.sh.")]


def test_edits_are_all_or_nothing(repo: Path, ws: Workspace) -> None:
    target = repo / "calc" / "add.py"
    before = target.read_text()
    with pytest.raises(ToolError) as info:
        edit_file(ws, "calc/add.py", [Edit("a - b", "a + b"), Edit("missing", "x")])
    assert info.value.code == "tool.edit_no_match" and "edit 2 of 2" in str(info.value)
    assert target.read_text() == before
    with pytest.raises(ToolError) as info:
        edit_file(ws, "calc/add.py", [Edit("a", "A")])
    assert info.value.code == "tool.edit_ambiguous"
    edit_file(ws, "calc/add.py", [Edit("a - b", "a + b"), Edit("def add", "def plus")])
    assert target.read_text() == "def plus(a, b):\n    return a + b\n"
    edit_file(ws, "calc/add.py", [Edit("a", "x", replace_all=True)])
    assert target.read_text() == "def plus(x, b):\n    return x + b\n"


# --- shell ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_command_runs_in_the_root_without_secrets(
    ws: Workspace, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-nope")
    monkeypatch.setenv("PLAIN_SETTING", "fine")
    monkeypatch.setenv("LANG", "C.UTF-8")
    out = await run_command(ws, "pwd; env; exit 3", env_names=["PLAIN_SETTING"])
    assert str(repo) in out.text and "PLAIN_SETTING=fine" in out.text  # named: passed
    assert "LANG=C.UTF-8" in out.text  # allowlisted
    assert "sk-should-not-leak" not in out.text and "ghp-nope" not in out.text
    assert out.text.endswith("[exit code 3]") and out.meta["exitCode"] == 3
    with pytest.raises(ToolError) as info:
        await run_command(ws, "ls", "/")
    assert info.value.code == "tool.path_outside_roots"


@pytest.mark.anyio
async def test_a_timeout_kills_the_whole_process_group(ws: Workspace, repo: Path) -> None:
    marker = repo / "child.pid"
    out = await run_command(ws, f"sleep 60 & echo $! > {marker}; wait", timeout_s=0.5)
    assert out.meta["timedOut"] and "timed out after" in out.text
    child = int(marker.read_text())
    await anyio.sleep(0.2)
    assert not _alive(child), "the backgrounded child outlived the timeout"


@pytest.mark.anyio
async def test_a_cancelled_command_is_killed(ws: Workspace, repo: Path) -> None:
    marker = repo / "child.pid"
    with anyio.move_on_after(0.5):
        await run_command(ws, f"sleep 60 & echo $! > {marker}; wait")
    child = int(marker.read_text())
    await anyio.sleep(0.2)
    assert not _alive(child)


@pytest.mark.anyio
async def test_long_output_keeps_head_and_tail(ws: Workspace) -> None:
    out = await run_command(ws, "seq 1 200000")
    assert out.truncated and len(out.text) <= Bounds().max_chars + 300
    assert count_tokens(out.text) <= Bounds().max_tokens  # digits: ~2 characters a token
    lines = out.text.splitlines()
    assert lines[0] == "1" and lines[-2] == "200000" and lines[-1] == "[exit code 0]"
    assert "characters cut from the middle" in out.text


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0): read its state
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False
