"""Golden tests of Agent Skills discovery, activation and the catalog (tests/data/skills/).

Fixture workspaces: ``valid/`` (two workspaces and a fake home, with name clashes),
``invalid/`` (one broken skill per spec rule, next to a good one), ``activation/`` (nested
references, a binary file, links to ignore).  Symlinks and oversized files are made in
``tmp_path``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from protocol.context import Diagnostic, SkillInfo, SkillReference
from sidecar.context.skills import (
    FRONTMATTER_MAX_BYTES,
    Skill,
    activate_skill,
    discover_skills,
    render_catalog,
)
from sidecar.context.tokens import Tokenizers

DATA = Path(__file__).resolve().parent.parent / "data" / "skills"
VALID = DATA / "valid"
LONG_NAME = "this-skill-name-is-longer-than-the-sixty-four-characters-the-spec-allows"


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def skill_md(name: str, description: str = "A test skill.", body: str = "Body.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


def valid_skills() -> list[Skill]:
    return discover_skills([VALID / "ws1", VALID / "ws2"], VALID / "home").skills


def activation_skill(name: str, workspace: Path = DATA / "activation") -> Skill:
    [skill] = [s for s in discover_skills([workspace], None).skills if s.info.name == name]
    return skill


def codes(diagnostics: list[Diagnostic]) -> list[tuple[str, str, str]]:
    return [(d.code, d.path, d.message) for d in diagnostics]


# --- discovery -----------------------------------------------------------------------------


def test_valid_skills_in_every_root_in_order_first_root_wins() -> None:
    scan = discover_skills([VALID / "ws1", VALID / "ws2"], VALID / "home")
    assert [(s.info.name, s.info.root) for s in scan.skills] == [
        ("pdf-tools", str(VALID / "ws1/.agents/skills")),
        ("commit-helper", str(VALID / "ws1/.claude/skills")),
        ("release-notes", str(VALID / "ws1/.codex/skills")),
        ("sql-review", str(VALID / "ws2/.agents/skills")),
        ("translate", str(VALID / "home/.codex/skills")),
    ]
    pdf, commit = scan.skills[0], scan.skills[1]
    assert pdf.info == SkillInfo(
        name="pdf-tools",
        description="Extract text and tables from PDF files, fill PDF forms.",
        path=str(VALID / "ws1/.agents/skills/pdf-tools"),
        root=str(VALID / "ws1/.agents/skills"),
        license="Apache-2.0",
        metadata={"author": "acme", "version": "1.0"},
        allowed_tools=["Read", "Bash(python:*)"],
    )
    assert (pdf.directory, pdf.skill_md) == (
        VALID / "ws1/.agents/skills/pdf-tools",
        VALID / "ws1/.agents/skills/pdf-tools/SKILL.md",
    )
    assert commit.info == SkillInfo(
        name="commit-helper",
        description="Write conventional commit messages from the staged diff.",
        path=str(VALID / "ws1/.claude/skills/commit-helper"),
        root=str(VALID / "ws1/.claude/skills"),
        compatibility="Requires git 2.30 or newer",
        allowed_tools=["Read", "Grep"],
    )
    shadowed_pdf = VALID / "ws2/.agents/skills/pdf-tools"
    shadowed_commit = VALID / "home/.agents/skills/commit-helper"
    assert codes(scan.diagnostics) == [
        (
            "skills.unknown_field",
            str(VALID / "ws1/.codex/skills/release-notes/SKILL.md"),
            "unknown frontmatter field(s) ignored: owner, version",
        ),
        (
            "skills.duplicate_name",
            str(shadowed_pdf),
            f"skill 'pdf-tools' at {shadowed_pdf} is ignored: "
            f"{VALID / 'ws1/.agents/skills/pdf-tools'} has the same name and comes first",
        ),
        (
            "skills.duplicate_name",
            str(shadowed_commit),
            f"skill 'commit-helper' at {shadowed_commit} is ignored: "
            f"{VALID / 'ws1/.claude/skills/commit-helper'} has the same name and comes first",
        ),
    ]
    assert [d.severity for d in scan.diagnostics] == ["warning"] * 3


def test_root_order_decides_which_duplicate_wins() -> None:
    scan = discover_skills([VALID / "ws2", VALID / "ws1"], None)
    assert [(s.info.name, s.info.description) for s in scan.skills][:2] == [
        ("pdf-tools", "A second pdf-tools that the first workspace's skill shadows."),
        ("sql-review", "Review SQL migrations for locking and data loss."),
    ]
    assert "translate" not in [s.info.name for s in scan.skills]  # no home given


def test_missing_roots_are_skipped_silently(tmp_path: Path) -> None:
    assert discover_skills([tmp_path / "nothing", tmp_path], tmp_path / "no-home") == (
        discover_skills([], None)
    )
    assert discover_skills([], None).skills == []


def test_invalid_skills_are_skipped_each_with_its_reason() -> None:
    root = DATA / "invalid/.agents/skills"
    scan = discover_skills([DATA / "invalid"], None)
    assert [s.info.name for s in scan.skills] == ["ok-skill"]
    got = [
        (d.severity, d.code, Path(d.path).relative_to(root).as_posix(), d.message)
        for d in scan.diagnostics
    ]
    invalid = "skills.invalid_frontmatter"
    assert got == [
        ("error", invalid, "UpperCase/SKILL.md", "'name' 'UpperCase' contains uppercase letters"),
        ("error", invalid, "bad-date/SKILL.md",
         "frontmatter has a value YAML cannot build: month must be in 1..12"),
        ("error", invalid, "bad-metadata/SKILL.md",
         "'metadata.version' must be a string, got float (quote it in the YAML)"),
        ("error", invalid, "bad-tools/SKILL.md",
         "'allowed-tools' must be a space-separated string or a list, got int"),
        ("error", invalid, "bad-yaml/SKILL.md",
         "frontmatter is not valid YAML: expected ',' or ']', but got '<stream end>' "
         "(frontmatter line 3, column 1)"),
        ("error", "skills.name_mismatch", "dir-name/SKILL.md",
         "name 'other-name' does not match the directory name 'dir-name'"),
        ("error", invalid, "double--hyphen/SKILL.md",
         "'name' 'double--hyphen' must not contain '--'"),
        ("error", invalid, "empty-frontmatter/SKILL.md",
         "frontmatter must be a YAML mapping, got empty"),
        ("error", invalid, "latin1/SKILL.md", "frontmatter is not valid UTF-8 (byte 29)"),
        ("error", invalid, "long-description/SKILL.md",
         "'description' is 1025 characters, more than 1024"),
        ("error", invalid, "no-description/SKILL.md", "'description' is missing"),
        ("error", invalid, "no-frontmatter/SKILL.md",
         "SKILL.md does not start with a '---' line opening YAML frontmatter"),
        ("error", "skills.missing_skill_md", "not-a-skill",
         "directory has no SKILL.md; not a skill"),
        ("error", invalid, f"{LONG_NAME}/SKILL.md",
         f"'name' '{LONG_NAME}' is 72 characters, more than 64"),
        ("error", invalid, "unclosed/SKILL.md", "frontmatter is not closed by a '---' line"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("frontmatter", "problems"),
    [
        ("name: -edge-\ndescription: d", ["'name' '-edge-' must not start or end with '-'"]),
        ("name: sp ace\ndescription: d", ["'name' 'sp ace' may only contain a-z, 0-9 and '-'"]),
        ("name: ''\ndescription: d", ["'name' '' is empty"]),
        ("name: 7\ndescription: d", ["'name' must be a string, got int"]),
        ("description: d", ["'name' is missing"]),
        ("name: x\ndescription: '   '", ["'description' is empty"]),
        ("name: x\ndescription: [a]", ["'description' must be a string, got list"]),
        ("name: x\ndescription: d\nlicense: 2", ["'license' must be a string, got int"]),
        (
            "name: x\ndescription: d\ncompatibility: " + "c" * 501,
            ["'compatibility' is 501 characters, more than 500"],
        ),
        (
            "name: x\ndescription: d\nmetadata: [a, b]",
            ["'metadata' must be a mapping of strings to strings, got list"],
        ),
        (
            "name: x\ndescription: d\nmetadata: {1: a}",
            ["'metadata' key 1 must be a string, got int"],
        ),
        (
            "name: x\ndescription: d\nallowed-tools: [Read, '']",
            ["'allowed-tools' list items must be non-empty strings"],
        ),
        (
            "name: BAD--\ndescription: 5",
            [
                "'name' 'BAD--' contains uppercase letters; must not start or end with '-'; "
                "must not contain '--'",
                "'description' must be a string, got int",
            ],
        ),
        ("- a\n- b", ["frontmatter must be a YAML mapping, got a list"]),
        ("name: x\ndescription: &a [*a]", ["'description' must be a string, got list"]),
    ],
)
def test_each_frontmatter_rule(tmp_path: Path, frontmatter: str, problems: list[str]) -> None:
    name = "x" if "name: x" in frontmatter else "skill"
    write(tmp_path / ".agents/skills" / name / "SKILL.md", f"---\n{frontmatter}\n---\nbody\n")
    scan = discover_skills([tmp_path], None)
    assert scan.skills == []
    assert [d.message for d in scan.diagnostics if d.severity == "error"] == problems


def test_frontmatter_only_is_read_at_discovery(tmp_path: Path) -> None:
    # The body is 1 MB of bytes that are not UTF-8: discovery must stop at the closing ---.
    write(tmp_path / ".agents/skills/big/SKILL.md", skill_md("big").encode() + b"\xff" * (1 << 20))
    [skill] = discover_skills([tmp_path], None).skills
    assert skill.info.name == "big"
    # Without a closing line, discovery gives up after FRONTMATTER_MAX_BYTES.
    huge = "---\nname: huge\ndescription: d\n" + "# padding\n" * (FRONTMATTER_MAX_BYTES // 10)
    write(tmp_path / ".agents/skills/huge/SKILL.md", huge)
    scan = discover_skills([tmp_path], None)
    assert codes(scan.diagnostics) == [
        (
            "skills.invalid_frontmatter",
            str(tmp_path / ".agents/skills/huge/SKILL.md"),
            f"frontmatter is not closed by a '---' line within {FRONTMATTER_MAX_BYTES} bytes",
        )
    ]


def test_crlf_bom_and_trailing_spaces_around_the_fences(tmp_path: Path) -> None:
    write(
        tmp_path / ".agents/skills/crlf/SKILL.md",
        "\ufeff---  \r\nname: crlf\r\ndescription: Windows line endings.\r\n--- \r\nBody.\r\n",
    )
    [skill] = discover_skills([tmp_path], None).skills
    assert skill.info.description == "Windows line endings."
    assert activate_skill(skill).body == "Body."


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside"
    write(target / "evil/SKILL.md", skill_md("evil", body="SECRET BODY\n"))
    write(target / "secret.md", "SECRET FILE\n")
    write(target / "skills/elsewhere/SKILL.md", skill_md("elsewhere"))
    return target


def test_symlinks_leaving_their_root_are_refused(tmp_path: Path, outside: Path) -> None:
    workspace = tmp_path / "ws"
    skills = workspace / ".agents/skills"
    write(skills / "fine/SKILL.md", skill_md("fine"))
    (skills / "evil").symlink_to(outside / "evil", target_is_directory=True)
    (skills / "linked-md").mkdir()
    (skills / "linked-md/SKILL.md").symlink_to(outside / "evil/SKILL.md")
    (workspace / ".codex").mkdir()
    (workspace / ".codex/skills").symlink_to(outside / "skills", target_is_directory=True)
    scan = discover_skills([workspace], None)
    assert [s.info.name for s in scan.skills] == ["fine"]
    assert [(d.code, d.path) for d in scan.diagnostics] == [
        ("skills.outside_root", str(workspace / ".codex/skills")),  # roots are checked first
        ("skills.outside_root", str(skills / "evil")),
        ("skills.outside_root", str(skills / "linked-md/SKILL.md")),
    ]
    assert scan.diagnostics[1].message == (
        f"skill directory resolves to {(outside / 'evil').resolve()}, outside its root "
        f"{skills}; not read"
    )
    assert "SECRET" not in repr(scan)


def test_symlinks_inside_are_followed_and_a_shared_root_is_read_once(
    tmp_path: Path, outside: Path
) -> None:
    workspace = tmp_path / "ws"
    write(workspace / ".agents/skills/fine/SKILL.md", skill_md("fine"))
    write(workspace / ".agents/skills/real-md/real.md", skill_md("real-md"))
    (workspace / ".agents/skills/real-md/SKILL.md").symlink_to("real.md")
    (workspace / ".claude").mkdir()
    (workspace / ".claude/skills").symlink_to("../.agents/skills", target_is_directory=True)
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    # A home root may live anywhere: it is the user's own configuration.
    (home / ".codex/skills").symlink_to(outside / "skills", target_is_directory=True)
    scan = discover_skills([workspace], home)
    assert [(s.info.name, s.info.root) for s in scan.skills] == [
        ("fine", str(workspace / ".agents/skills")),
        ("real-md", str(workspace / ".agents/skills")),
        ("elsewhere", str(home / ".codex/skills")),
    ]
    assert scan.diagnostics == []


# --- activation ----------------------------------------------------------------------------


def _reference_block(skill_dir: Path, rel: str) -> str:
    text = (skill_dir / rel).read_text().strip("\n")
    return f'<reference path="{rel}">\n{text}\n</reference>'


def test_activation_follows_nested_references_within_the_skill() -> None:
    skill = activation_skill("deep-refs")
    activation = activate_skill(skill)
    skill_dir = skill.directory
    body = (skill_dir / "SKILL.md").read_text().split("---\n", 2)[2].strip("\n")
    loaded = [
        "references/guide.md",
        "references/api notes.md",
        "scripts/run.sh",  # shown as text, never executed
        "references/level2.md",
        "references/deeper/level3.md",
    ]
    assert activation.body == body
    assert activation.references == [
        SkillReference(path=p, bytes=(skill_dir / p).stat().st_size, truncated=False)
        for p in loaded
    ]
    assert activation.text == "\n".join(
        ['<skill name="deep-refs">', body]
        + [_reference_block(skill_dir, p) for p in loaded]
        + ["</skill>"]
    )
    assert codes(activation.diagnostics) == [
        ("skills.reference_outside", "../../../../secret.md",
         "link resolves outside the skill directory; refused, not read"),
        ("skills.reference_unreadable", "assets/data.bin",
         "file is not UTF-8 text (binary?); not loaded"),
        ("skills.reference_missing", "references/missing.md", "linked file does not exist"),
        ("skills.reference_missing", "references/leak.md", "linked file does not exist"),
        ("skills.reference_limit", "references/deeper/level4.md",
         "linked beyond the depth limit of 3"),
    ]  # fmt: skip
    for ignored in ("example.com", "/etc/passwd", "logo.png", "fenced.md", "level4"):
        assert ignored not in "".join(r.path for r in activation.references)


@pytest.mark.parametrize(
    ("max_depth", "loaded", "beyond"),
    [
        (1, ["references/guide.md", "references/api notes.md", "scripts/run.sh"],
         "references/level2.md"),
        (2, ["references/guide.md", "references/api notes.md", "scripts/run.sh",
             "references/level2.md"], "references/deeper/level3.md"),
    ],
)  # fmt: skip
def test_activation_depth_limit(max_depth: int, loaded: list[str], beyond: str) -> None:
    activation = activate_skill(activation_skill("deep-refs"), max_depth=max_depth)
    assert [r.path for r in activation.references] == loaded
    limits = [(d.path, d.message) for d in activation.diagnostics if "limit" in d.code]
    assert limits == [(beyond, f"linked beyond the depth limit of {max_depth}")]


def test_activation_file_count_limit() -> None:
    activation = activate_skill(activation_skill("many-refs"), max_files=3)
    assert [r.path for r in activation.references] == ["refs/r1.md", "refs/r2.md", "refs/r3.md"]
    reason = "not loaded: the 3-file limit is reached"
    assert codes(activation.diagnostics) == [
        ("skills.reference_limit", "refs/r4.md", reason),
        ("skills.reference_limit", "refs/r5.md", reason),
    ]
    assert "fourfour" not in activation.text and "fivefive" not in activation.text


def test_activation_per_file_cut_on_a_utf8_boundary() -> None:
    activation = activate_skill(activation_skill("many-refs"), max_file_bytes=21)
    assert activation.references == [
        SkillReference(path=f"refs/r{i}.md", bytes=40, truncated=True) for i in range(1, 6)
    ]
    assert '<reference path="refs/r3.md" truncated="true">\nab' + "é" * 9 + "\n</reference>" in (
        activation.text
    )  # "é" number 10 would straddle byte 21
    assert '<reference path="refs/r1.md" truncated="true">\none one one one one o\n' in (
        activation.text
    )
    assert activation.diagnostics == []


def test_activation_total_byte_limit_counts_the_body_and_stops() -> None:
    skill = activation_skill("many-refs")
    body_bytes = len(activate_skill(skill).body.encode())
    activation = activate_skill(skill, max_total_bytes=body_bytes + 40 + 40 + 39)
    assert [r.path for r in activation.references] == ["refs/r1.md", "refs/r2.md"]
    reason = "not loaded: the total byte limit of the activation is reached"
    assert codes(activation.diagnostics) == [
        ("skills.reference_limit", f"refs/r{i}.md", reason) for i in (3, 4, 5)
    ]
    exact = activate_skill(skill, max_total_bytes=body_bytes + 5 * 40)
    assert len(exact.references) == 5 and exact.diagnostics == []


def test_a_body_over_the_total_limit_is_cut(tmp_path: Path) -> None:
    write(tmp_path / ".agents/skills/long/SKILL.md", skill_md("long", body="ü" * 100 + "\n"))
    [skill] = discover_skills([tmp_path], None).skills
    activation = activate_skill(skill, max_total_bytes=51)
    assert activation.body == "ü" * 25
    assert codes(activation.diagnostics) == [
        (
            "skills.body_truncated",
            str(skill.skill_md),
            "body is over the 51-byte activation limit; cut on a UTF-8 boundary",
        )
    ]


def test_a_reference_symlinked_out_of_the_skill_is_refused_unread(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    shutil.copytree(DATA / "activation", workspace)
    skill_dir = workspace / ".agents/skills/deep-refs"
    (skill_dir / "references/leak.md").symlink_to(outside / "secret.md")
    (skill_dir / "references/missing.md").symlink_to("guide.md")  # inside: fine, deduplicated
    opened: list[Path] = []
    real_open = os.open

    def recording_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        # a name opened from a directory's descriptor (sidecar.beneath) is recorded in full
        dir_fd = kwargs.get("dir_fd")
        where = Path(os.readlink(f"/proc/self/fd/{dir_fd}")) if dir_fd is not None else Path()
        opened.append(where / path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording_open)
    activation = activate_skill(activation_skill("deep-refs", workspace))
    monkeypatch.undo()
    assert ("skills.reference_outside", "references/leak.md") in [
        (d.code, d.path) for d in activation.diagnostics
    ]
    assert "references/missing.md" in [r.path for r in activation.references]
    assert "SECRET" not in repr(activation)
    assert opened and outside.resolve() not in {p.parent for p in opened}


def test_activation_never_raises_when_skill_md_changed(tmp_path: Path) -> None:
    path = write(tmp_path / ".agents/skills/gone/SKILL.md", skill_md("gone"))
    [skill] = discover_skills([tmp_path], None).skills
    path.write_bytes(b"no frontmatter any more\n")
    broken = activate_skill(skill)
    assert (broken.body, broken.references) == ("", [])
    assert codes(broken.diagnostics) == [
        (
            "skills.invalid_frontmatter",
            str(path),
            "SKILL.md no longer starts with YAML frontmatter",
        )
    ]
    path.write_bytes(b"---\nname: gone\n---\n\xff\n")
    assert [d.message for d in activate_skill(skill).diagnostics] == [
        "SKILL.md body is not valid UTF-8 (byte 19)"
    ]
    path.unlink()
    assert [d.message for d in activate_skill(skill).diagnostics] == ["SKILL.md does not exist"]


# --- the catalog ---------------------------------------------------------------------------

CATALOG_LINES = [
    "- pdf-tools: Extract text and tables from PDF files, fill PDF forms.",
    "- commit-helper: Write conventional commit messages from the staged diff.",
    "- release-notes: Draft release notes from merged pull requests.",
    "- sql-review: Review SQL migrations for locking and data loss.",
    "- translate: Translate UI strings, keeping placeholders intact.",
]
NAMES = ["pdf-tools", "commit-helper", "release-notes", "sql-review", "translate"]


def catalog(n: int) -> str:
    return "\n".join(["<available_skills>", *CATALOG_LINES[:n], "</available_skills>"])


def quarter(text: str) -> int:
    return len(text) // 4


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5])
def test_catalog_keeps_the_prefix_that_fits_the_budget(n: int) -> None:
    skills = valid_skills()
    # The budget fits n skills exactly, and one token less does not.
    budget = quarter(catalog(n)) if n else quarter(catalog(1)) - 1
    text, included, omitted = render_catalog(skills, budget, quarter)
    assert (text, included, omitted) == (catalog(n) if n else "", NAMES[:n], NAMES[n:])
    if n:
        assert render_catalog(skills, budget - 1, quarter)[1] == NAMES[: n - 1]


def test_catalog_with_a_large_budget_and_no_skills() -> None:
    assert render_catalog(valid_skills(), 10_000, quarter) == (catalog(5), NAMES, [])
    assert render_catalog([], 10_000, quarter) == ("", [], [])


def test_catalog_collapses_whitespace_in_descriptions(tmp_path: Path) -> None:
    write(
        tmp_path / ".agents/skills/folded/SKILL.md",
        "---\nname: folded\ndescription: |\n  Two\n  lines.\n---\n",
    )
    text, _, _ = render_catalog(discover_skills([tmp_path], None).skills, 100, quarter)
    assert text == "<available_skills>\n- folded: Two lines.\n</available_skills>"


def test_catalog_with_the_real_tokenizer() -> None:
    count = Tokenizers.discover().get(None).count
    skills = valid_skills()
    budget = count(catalog(3))
    assert count(catalog(4)) > budget
    text, included, omitted = render_catalog(skills, budget, count)
    assert (text, included, omitted) == (catalog(3), NAMES[:3], NAMES[3:])
