"""Golden tests of AGENTS.md discovery over the fixture workspaces in tests/data/instructions/.

What git cannot keep is made in ``tmp_path`` from a copy of a fixture: ``.git`` markers,
``node_modules`` (ignored by the repository), symlinks, FIFOs and oversized files.

Unreadable files: the tests run as root, which reads mode-000 files, so a chmod would prove
nothing.  "Unreadable" is instead made of things nobody can read as text: invalid UTF-8 (a
committed Latin-1 file), a FIFO (which must also not block the scan), and a permission error
injected at ``os.open`` for one path (the errno root would get on a root-squashed NFS mount).
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xxhash import xxh3_128_hexdigest

from protocol.context import Diagnostic, InstructionsDiff
from sidecar.context.instructions import (
    DEFAULT_NAMES,
    InstructionNames,
    InstructionScan,
    diff_instructions,
    discover_instructions,
)
from sidecar.paths import cut_utf8

DATA = Path(__file__).resolve().parent.parent / "data" / "instructions"

ROOT = "project root: always applies"
ON_PATH = "on the path from the project root to the working directory"


def not_applied(scope: str) -> str:
    return f"nested: applies only when a mentioned or pinned path is under {scope}/"


Row = tuple[str, str, bool, str, int]


def rows(scan: InstructionScan) -> list[Row]:
    """(path, scope, applies, reason, depth) of every file, in the scan's order."""
    return [(f.info.path, f.info.scope, f.info.applies, f.info.reason, f.depth) for f in scan.files]


def applying(scan: InstructionScan) -> list[str]:
    return [f.info.path for f in scan.files if f.info.applies]


def copy_fixture(case: str, tmp_path: Path) -> Path:
    target = tmp_path / "ws"
    shutil.copytree(DATA / case, target, symlinks=True)
    return target


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path


NESTED_ALL: list[Row] = [
    ("AGENTS.md", ".", True, ROOT, 0),
    ("docs/CLAUDE.md", "docs", False, not_applied("docs"), 1),
    ("src/AGENTS.md", "src", False, not_applied("src"), 1),
    ("web/AGENTS.md", "web", False, not_applied("web"), 1),
    ("deep/l1/AGENTS.md", "deep/l1", False, not_applied("deep/l1"), 2),
    ("src/api/AGENTS.md", "src/api", False, not_applied("src/api"), 2),
    ("deep/l1/l2/l3/AGENTS.md", "deep/l1/l2/l3", False, not_applied("deep/l1/l2/l3"), 4),
]


# --- the root file -------------------------------------------------------------------------


def test_root_file_only() -> None:
    workspace = DATA / "root_only"
    scan = discover_instructions(workspace)
    raw = (workspace / "AGENTS.md").read_bytes()
    assert scan.project_root == workspace
    assert rows(scan) == [("AGENTS.md", ".", True, ROOT, 0)]
    [file] = scan.files
    assert file.text == raw.decode()
    assert file.info.hash == xxh3_128_hexdigest(raw)
    assert file.info.bytes == len(raw)
    assert file.info.truncated is False
    assert scan.diagnostics == []


# --- nested files and their scopes -----------------------------------------------------------


def test_nested_files_are_listed_but_do_not_apply_without_a_mention() -> None:
    scan = discover_instructions(DATA / "nested")
    assert rows(scan) == NESTED_ALL
    assert scan.diagnostics == []


def test_nested_files_apply_to_mentioned_and_pinned_paths() -> None:
    scan = discover_instructions(
        DATA / "nested", mentioned=["src/api/handlers.ts"], pinned=["docs"]
    )
    assert rows(scan) == [
        ("AGENTS.md", ".", True, ROOT, 0),
        ("docs/CLAUDE.md", "docs", True, "nested: pinned path docs is inside its scope", 1),
        (
            "src/AGENTS.md",
            "src",
            True,
            "nested: mentioned path src/api/handlers.ts is inside its scope",
            1,
        ),
        ("web/AGENTS.md", "web", False, not_applied("web"), 1),
        ("deep/l1/AGENTS.md", "deep/l1", False, not_applied("deep/l1"), 2),
        (
            "src/api/AGENTS.md",
            "src/api",
            True,
            "nested: mentioned path src/api/handlers.ts is inside its scope",
            2,
        ),
        ("deep/l1/l2/l3/AGENTS.md", "deep/l1/l2/l3", False, not_applied("deep/l1/l2/l3"), 4),
    ]


def test_a_mention_is_reported_before_a_pin_of_the_same_scope() -> None:
    scan = discover_instructions(DATA / "nested", mentioned=["web/a.ts"], pinned=["web/b.ts"])
    reasons = {f.info.path: f.info.reason for f in scan.files}
    assert reasons["web/AGENTS.md"] == "nested: mentioned path web/a.ts is inside its scope"


@pytest.mark.parametrize(
    ("mention", "expected"),
    [
        ("src/util/helpers.ts", ["AGENTS.md", "src/AGENTS.md"]),
        ("./src/util/../api/handlers.ts", ["AGENTS.md", "src/AGENTS.md", "src/api/AGENTS.md"]),
        ("src", ["AGENTS.md", "src/AGENTS.md"]),
        ("src/api", ["AGENTS.md", "src/AGENTS.md", "src/api/AGENTS.md"]),
        ("srcfoo/a.ts", ["AGENTS.md"]),  # a shared prefix is not a parent directory
        ("../nested/src/a.ts", ["AGENTS.md"]),  # outside the workspace: ignored
        ("", ["AGENTS.md"]),
        (str(DATA / "nested" / "web" / "index.ts"), ["AGENTS.md", "web/AGENTS.md"]),
        ("/elsewhere/web/index.ts", ["AGENTS.md"]),
    ],
)
def test_mentioned_paths_are_normalized(mention: str, expected: list[str]) -> None:
    assert applying(discover_instructions(DATA / "nested", mentioned=[mention])) == expected


def test_directories_from_project_root_to_cwd_always_apply() -> None:
    for cwd in (Path("src/api"), DATA / "nested" / "src" / "api"):
        scan = discover_instructions(DATA / "nested", cwd)
        assert rows(scan)[:3] == [
            ("AGENTS.md", ".", True, ROOT, 0),
            ("docs/CLAUDE.md", "docs", False, not_applied("docs"), 1),
            ("src/AGENTS.md", "src", True, ON_PATH, 1),
        ]
        assert ("src/api/AGENTS.md", "src/api", True, ON_PATH, 2) in rows(scan)
        assert applying(scan) == ["AGENTS.md", "src/AGENTS.md", "src/api/AGENTS.md"]


# --- names: override, primary, fallbacks ---------------------------------------------------


def test_override_beats_agents_md_and_fallbacks_in_the_same_directory() -> None:
    workspace = DATA / "override"
    scan = discover_instructions(workspace)
    assert rows(scan) == [
        ("AGENTS.override.md", ".", True, ROOT, 0),
        ("sub/AGENTS.md", "sub", False, not_applied("sub"), 1),
    ]
    assert scan.files[0].text == (workspace / "AGENTS.override.md").read_text()
    assert scan.files[1].text == "# sub rules\n"


def test_claude_md_is_the_default_fallback() -> None:
    scan = discover_instructions(DATA / "fallback")
    assert rows(scan) == [
        ("CLAUDE.md", ".", True, ROOT, 0),
        ("pkg/CLAUDE.md", "pkg", False, not_applied("pkg"), 1),
    ]


def test_custom_fallbacks_replace_the_default_ones() -> None:
    only_gemini = discover_instructions(
        DATA / "fallback", names=InstructionNames(fallbacks=("GEMINI.md",))
    )
    assert rows(only_gemini) == [
        ("other/GEMINI.md", "other", False, not_applied("other"), 1),
        ("pkg/GEMINI.md", "pkg", False, not_applied("pkg"), 1),
    ]
    gemini_first = discover_instructions(
        DATA / "fallback", names=InstructionNames(fallbacks=("GEMINI.md", "CLAUDE.md"))
    )
    assert [f.info.path for f in gemini_first.files] == [
        "CLAUDE.md",
        "other/GEMINI.md",
        "pkg/GEMINI.md",
    ]
    assert gemini_first.files[2].text == "# pkg GEMINI.md\n"


def test_instruction_names() -> None:
    assert DEFAULT_NAMES.candidates == ("AGENTS.override.md", "AGENTS.md", "CLAUDE.md")
    assert InstructionNames(fallbacks=("AGENTS.md", "X.md")).candidates == (
        "AGENTS.override.md",
        "AGENTS.md",
        "X.md",
    )
    for bad in ("", "..", "docs/AGENTS.md"):
        with pytest.raises(ValueError, match="plain file name"):
            InstructionNames(fallbacks=(bad,))


# --- the project root ----------------------------------------------------------------------


def test_without_a_marker_below_the_workspace_the_workspace_root_is_the_project_root() -> None:
    # The fixture lives inside this repository: its .git, above the workspace, must not count.
    workspace = DATA / "monorepo"
    scan = discover_instructions(workspace, Path("packages/app/src/ui"))
    assert scan.project_root == workspace
    assert rows(scan) == [
        ("AGENTS.md", ".", True, ROOT, 0),
        ("packages/app/AGENTS.md", "packages/app", True, ON_PATH, 2),
        ("packages/lib/AGENTS.md", "packages/lib", False, not_applied("packages/lib"), 2),
        ("packages/app/src/AGENTS.md", "packages/app/src", True, ON_PATH, 3),
        (
            "packages/app/tests/AGENTS.md",
            "packages/app/tests",
            False,
            not_applied("packages/app/tests"),
            3,
        ),
    ]


@pytest.mark.parametrize("marker_kind", ["directory", "file"])
def test_git_marker_below_the_workspace_sets_the_project_root(
    tmp_path: Path, marker_kind: str
) -> None:
    workspace = copy_fixture("monorepo", tmp_path)
    app = workspace / "packages" / "app"
    if marker_kind == "directory":
        (app / ".git").mkdir()
        write(app / ".git" / "AGENTS.md", "# inside .git: never searched\n")
    else:
        write(app / ".git", "gitdir: ../../.git/worktrees/app\n")  # a worktree's marker
    scan = discover_instructions(workspace, app / "src" / "ui")
    assert scan.project_root == app.resolve()
    # Files above the project root (the workspace's, packages/lib's) are not part of it.
    assert rows(scan) == [
        ("packages/app/AGENTS.md", "packages/app", True, ROOT, 0),
        ("packages/app/src/AGENTS.md", "packages/app/src", True, ON_PATH, 1),
        (
            "packages/app/tests/AGENTS.md",
            "packages/app/tests",
            False,
            not_applied("packages/app/tests"),
            1,
        ),
    ]


def test_the_nearest_marker_wins_and_markers_are_configurable(tmp_path: Path) -> None:
    workspace = copy_fixture("monorepo", tmp_path)
    (workspace / ".git").mkdir()
    write(workspace / "packages" / "app" / "src" / "package.json", "{}\n")
    cwd = Path("packages/app/src/ui")
    assert discover_instructions(workspace, cwd).project_root == workspace.resolve()
    custom = discover_instructions(workspace, cwd, root_markers=("package.json", ".git"))
    assert custom.project_root == (workspace / "packages/app/src").resolve()
    assert rows(custom) == [("packages/app/src/AGENTS.md", "packages/app/src", True, ROOT, 0)]


# --- what is searched ----------------------------------------------------------------------


def test_dot_directories_and_build_output_are_not_searched(tmp_path: Path) -> None:
    workspace = copy_fixture("nested", tmp_path)
    write(workspace / "node_modules" / "pkg" / "AGENTS.md", "# dependency rules\n")
    write(workspace / "src" / "node_modules" / "AGENTS.md", "# nested dependency rules\n")
    write(workspace / "src" / ".cache" / "AGENTS.md", "# cache\n")
    assert rows(discover_instructions(workspace)) == NESTED_ALL


@pytest.mark.parametrize(
    ("cwd", "expected"),
    [
        ("node_modules/pkg", ["AGENTS.md", "node_modules/pkg/AGENTS.md"]),
        (".hidden", ["AGENTS.md", ".hidden/AGENTS.md"]),
        ("build", ["AGENTS.md", "build/AGENTS.md"]),
    ],
)
def test_a_skipped_directory_still_applies_on_the_path_to_cwd(
    tmp_path: Path, cwd: str, expected: list[str]
) -> None:
    workspace = copy_fixture("nested", tmp_path)
    write(workspace / "node_modules" / "pkg" / "AGENTS.md", "# dependency rules\n")
    scan = discover_instructions(workspace, Path(cwd))
    assert applying(scan) == expected
    assert (expected[1], cwd, True, ON_PATH, len(Path(cwd).parts)) in rows(scan)


@pytest.mark.parametrize(
    ("max_depth", "expected"),
    [
        (0, ["AGENTS.md"]),
        (1, ["AGENTS.md", "docs/CLAUDE.md", "src/AGENTS.md", "web/AGENTS.md"]),
        (
            3,
            [
                "AGENTS.md",
                "docs/CLAUDE.md",
                "src/AGENTS.md",
                "web/AGENTS.md",
                "deep/l1/AGENTS.md",
                "src/api/AGENTS.md",
            ],
        ),
        (4, [row[0] for row in NESTED_ALL]),
    ],
)
def test_max_depth_limits_nested_discovery(max_depth: int, expected: list[str]) -> None:
    scan = discover_instructions(DATA / "nested", max_depth=max_depth)
    assert [f.info.path for f in scan.files] == expected


def test_max_depth_does_not_limit_the_path_to_cwd() -> None:
    scan = discover_instructions(DATA / "nested", Path("deep/l1/l2/l3"), max_depth=1)
    assert rows(scan) == [
        ("AGENTS.md", ".", True, ROOT, 0),
        ("docs/CLAUDE.md", "docs", False, not_applied("docs"), 1),
        ("src/AGENTS.md", "src", False, not_applied("src"), 1),
        ("web/AGENTS.md", "web", False, not_applied("web"), 1),
        ("deep/l1/AGENTS.md", "deep/l1", True, ON_PATH, 2),
        ("deep/l1/l2/l3/AGENTS.md", "deep/l1/l2/l3", True, ON_PATH, 4),
    ]


# --- size cap ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("char", "before"),  # a 2-, 3- or 4-byte character starting `before` bytes under the cap
    [("é", 1), ("€", 1), ("€", 2), ("😀", 1), ("😀", 2), ("😀", 3)],
)
def test_oversized_file_is_cut_on_a_utf8_boundary_and_hashed_whole(
    tmp_path: Path, char: str, before: int
) -> None:
    cap = 64
    head = "a" * (cap - before)
    raw = (head + char + "tail").encode()
    assert len(head) < cap < len(head) + len(char.encode())  # the character straddles the cap
    write(tmp_path / "AGENTS.md", raw)
    scan = discover_instructions(tmp_path, max_bytes=cap)
    [file] = scan.files
    assert file.text == head
    assert file.info.truncated is True
    assert file.info.bytes == len(raw)
    assert file.info.hash == xxh3_128_hexdigest(raw)
    assert scan.diagnostics == [
        Diagnostic(
            severity="warning",
            code="instructions.oversized",
            path="AGENTS.md",
            message=(
                f"file is {len(raw)} bytes, over the {cap}-byte cap; "
                f"the text is cut at {cap - before} bytes on a UTF-8 boundary"
            ),
        )
    ]


def test_a_file_of_exactly_the_cap_is_whole(tmp_path: Path) -> None:
    raw = ("x" * 62 + "é").encode()
    write(tmp_path / "AGENTS.md", raw)
    scan = discover_instructions(tmp_path, max_bytes=64)
    assert [(f.text, f.info.truncated, f.info.bytes) for f in scan.files] == [
        (raw.decode(), False, 64)
    ]
    assert scan.diagnostics == []


def test_a_large_file_is_streamed_hashed_whole_and_cut(tmp_path: Path) -> None:
    raw = ("ü" * 100_000).encode()  # 200 kB: several read chunks, the cap is mid-character
    write(tmp_path / "AGENTS.md", raw)
    [file] = discover_instructions(tmp_path, max_bytes=32_767).files
    assert file.text == "ü" * 16_383
    assert (file.info.bytes, file.info.hash) == (len(raw), xxh3_128_hexdigest(raw))


@given(st.text(max_size=40), st.integers(min_value=0, max_value=200))
def test_cut_utf8_is_the_longest_decodable_prefix(text: str, limit: int) -> None:
    data = text.encode()
    cut = cut_utf8(data, limit)
    decoded = cut.decode()  # never raises
    assert text.startswith(decoded)
    assert len(cut) <= limit or cut == data
    if len(decoded) < len(text):
        assert len(cut) + len(text[len(decoded)].encode()) > limit


# --- unreadable and refused ----------------------------------------------------------------


def test_unreadable_file_is_reported_and_skipped_without_fall_through() -> None:
    scan = discover_instructions(DATA / "unreadable")
    # latin1/AGENTS.md is not UTF-8: its directory contributes nothing (not latin1/CLAUDE.md);
    # dirnamed/AGENTS.md is a directory, passed over for dirnamed/CLAUDE.md.
    assert rows(scan) == [
        ("AGENTS.md", ".", True, ROOT, 0),
        ("dirnamed/CLAUDE.md", "dirnamed", False, not_applied("dirnamed"), 1),
    ]
    assert scan.diagnostics == [
        Diagnostic(
            severity="error",
            code="instructions.unreadable",
            path="latin1/AGENTS.md",
            message="file is not valid UTF-8 text (invalid byte near offset 5); skipped",
        )
    ]


def test_a_fifo_is_unreadable_and_does_not_block(tmp_path: Path) -> None:
    workspace = copy_fixture("root_only", tmp_path)
    (workspace / "pipe").mkdir()
    os.mkfifo(workspace / "pipe" / "AGENTS.md")
    scan = discover_instructions(workspace)
    assert rows(scan) == [("AGENTS.md", ".", True, ROOT, 0)]
    assert scan.diagnostics == [
        Diagnostic(
            severity="error",
            code="instructions.unreadable",
            path="pipe/AGENTS.md",
            message="file is not a regular file (a FIFO); skipped",
        )
    ]


def test_permission_denied_is_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = copy_fixture("nested", tmp_path)
    denied = (workspace / "src" / "AGENTS.md").resolve()
    real_open = os.open

    def fake_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        # files are opened by name from their directory's descriptor (sidecar.beneath)
        dir_fd = kwargs.get("dir_fd")
        where = Path(os.readlink(f"/proc/self/fd/{dir_fd}")) if dir_fd is not None else Path()
        if where / path == denied:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)
    scan = discover_instructions(workspace, mentioned=["src/x.ts"])
    monkeypatch.undo()
    assert "src/AGENTS.md" not in [f.info.path for f in scan.files]
    assert scan.diagnostics == [
        Diagnostic(
            severity="error",
            code="instructions.unreadable",
            path="src/AGENTS.md",
            message="file cannot be opened: Permission denied; skipped",
        )
    ]


@pytest.fixture
def escaping_workspace(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The ``symlinks`` fixture plus symlinks: two escaping, two staying inside."""
    workspace = copy_fixture("symlinks", tmp_path)
    outside = tmp_path / "outside"
    write(outside / "secret.md", "SECRET FILE CONTENT\n")
    write(outside / "dir" / "AGENTS.md", "SECRET DIRECTORY CONTENT\n")
    (workspace / "linked" / "AGENTS.md").symlink_to(outside / "secret.md")
    (workspace / "escape").symlink_to(outside / "dir", target_is_directory=True)
    (workspace / "alias" / "AGENTS.md").symlink_to(Path("..") / "notes" / "guide.md")
    (workspace / "loop").symlink_to(Path("."), target_is_directory=True)
    yield workspace, outside


def test_symlinks_escaping_the_workspace_are_refused_and_never_read(
    escaping_workspace: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, outside = escaping_workspace
    opened: list[Path] = []
    real_open = os.open

    def recording_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        # a name opened from a directory's descriptor (sidecar.beneath) is recorded in full
        dir_fd = kwargs.get("dir_fd")
        where = Path(os.readlink(f"/proc/self/fd/{dir_fd}")) if dir_fd is not None else Path()
        opened.append(where / path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording_open)
    scan = discover_instructions(workspace, mentioned=["alias/x.md"])
    monkeypatch.undo()

    assert rows(scan) == [
        ("AGENTS.md", ".", True, ROOT, 0),
        (
            "alias/AGENTS.md",
            "alias",
            True,
            "nested: mentioned path alias/x.md is inside its scope",
            1,
        ),
    ]
    assert scan.files[1].text == (workspace / "notes" / "guide.md").read_text()
    assert scan.diagnostics == [
        Diagnostic(
            severity="error",
            code="instructions.outside_workspace",
            path="escape",
            message="symlinked directory resolves outside the workspace root; not followed",
        ),
        Diagnostic(
            severity="error",
            code="instructions.outside_workspace",
            path="linked/AGENTS.md",
            message="symlink resolves outside the workspace root; refused, not read",
        ),
    ]
    assert "SECRET" not in repr(scan)
    assert opened and not [p for p in opened if outside.resolve() in p.resolve().parents]


def test_a_cwd_outside_the_workspace_falls_back_to_the_root(
    escaping_workspace: tuple[Path, Path],
) -> None:
    workspace, _ = escaping_workspace
    scan = discover_instructions(workspace, workspace / "escape")
    assert scan.project_root == workspace.resolve()
    assert applying(scan) == ["AGENTS.md"]
    assert scan.diagnostics[0] == Diagnostic(
        severity="error",
        code="instructions.outside_workspace",
        path=str(workspace / "escape"),
        message=(
            f"working directory {workspace / 'escape'} resolves outside the workspace root; "
            "the workspace root is used instead"
        ),
    )
    assert "SECRET" not in repr(scan)


def test_bad_workspace_and_cwd_are_diagnostics(tmp_path: Path) -> None:
    missing = discover_instructions(tmp_path / "missing")
    assert (missing.files, [d.code for d in missing.diagnostics]) == (
        [],
        ["instructions.workspace_missing"],
    )
    workspace = copy_fixture("root_only", tmp_path)
    scan = discover_instructions(workspace, Path("src/main.ts"))
    assert applying(scan) == ["AGENTS.md"]
    assert [(d.code, d.path) for d in scan.diagnostics] == [("instructions.bad_cwd", "src/main.ts")]
    with pytest.raises(ValueError, match="negative"):
        discover_instructions(workspace, max_bytes=-1)


# --- the per-turn diff ---------------------------------------------------------------------


def test_diff_reports_added_removed_and_changed_by_path_and_hash() -> None:
    scan = discover_instructions(DATA / "nested")
    hashes = {f.info.path: f.info.hash for f in scan.files}
    previous = {
        "AGENTS.md": hashes["AGENTS.md"],
        "src/AGENTS.md": "0" * 32,
        "web/AGENTS.md": hashes["web/AGENTS.md"],
        "gone/AGENTS.md": "1" * 32,
    }
    assert diff_instructions(previous, scan) == InstructionsDiff(
        added=[
            "deep/l1/AGENTS.md",
            "deep/l1/l2/l3/AGENTS.md",
            "docs/CLAUDE.md",
            "src/api/AGENTS.md",
        ],
        removed=["gone/AGENTS.md"],
        changed=["src/AGENTS.md"],
    )
    assert diff_instructions(hashes, scan) == InstructionsDiff()


def test_diff_carries_unreadable_and_oversized_from_the_scan(tmp_path: Path) -> None:
    workspace = copy_fixture("unreadable", tmp_path)
    write(workspace / "big" / "AGENTS.md", "b" * 200)
    scan = discover_instructions(workspace, max_bytes=100)
    previous = {"AGENTS.md": scan.files[0].info.hash, "latin1/AGENTS.md": "2" * 32}
    assert diff_instructions(previous, scan) == InstructionsDiff(
        added=["big/AGENTS.md", "dirnamed/CLAUDE.md"],
        removed=["latin1/AGENTS.md"],
        unreadable=["latin1/AGENTS.md"],
        oversized=["big/AGENTS.md"],
    )
