"""The drift check: generated artefacts must equal what the models give, byte for byte."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import xxhash

import protocol.sessions
from protocol._base import WireModel
from protocol.export import (
    DOCS_DIR,
    PACKAGE_DIR,
    ROOT,
    SCHEMA_FILE,
    check,
    render_all,
    write_all,
)
from protocol.export._markdown import render_pages
from protocol.export._schema import build_schema
from protocol.methods import ALL_METHODS, CLIENT_METHODS, MethodSpec
from protocol.server import PROTOCOL_VERSION
from sidecar.demo import contract_line
from sidecar.methods.capabilities import capabilities_block, schema_facts

REPO = ROOT
SCHEMA = f"protocol/{SCHEMA_FILE}"
TYPESCRIPT = "protocol/typescript/context-sidecar.ts"
LUA = "protocol/lua/context_sidecar/types.lua"
#: The reference pages: an overview, one page per method family, the shared types.
PAGES = {
    f"{DOCS_DIR}/{page}"
    for page in (
        "index.md",
        *(f"{family}.md" for family in dict.fromkeys(m.name.split("/")[0] for m in ALL_METHODS)),
        "types.md",
    )
}
ARTEFACTS = {SCHEMA, TYPESCRIPT, LUA, *PAGES}


def run_export(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "protocol.export", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def generated(tmp_path: Path) -> Path:
    root = tmp_path / "generated"
    assert sorted(write_all(root)) == sorted(ARTEFACTS)
    return root


def test_committed_artefacts_are_up_to_date() -> None:
    done = run_export("--check")
    assert done.returncode == 0, done.stderr
    assert "up to date" in done.stderr
    assert done.stdout == ""
    assert check() == []


def test_render_all_names_every_artefact() -> None:
    assert set(render_all()) == ARTEFACTS


def test_fresh_artefacts_pass_the_check(generated: Path) -> None:
    assert check(generated) == []
    assert write_all(generated) == []  # nothing to rewrite


def tamper(path: Path) -> None:
    """Change one byte in the middle of ``path``."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle] = ord("#") if data[middle] != ord("#") else ord("%")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("rel", sorted(ARTEFACTS))
def test_one_tampered_byte_is_detected(generated: Path, rel: str) -> None:
    tamper(generated / rel)
    assert check(generated) == [rel]


def test_check_command_fails_on_a_tampered_file_and_names_it(generated: Path) -> None:
    rel = TYPESCRIPT
    tamper(generated / rel)
    done = run_export("--check", "--root", str(generated))
    assert done.returncode == 1
    assert rel in done.stderr
    assert "stale" in done.stderr
    assert all(other not in done.stderr for other in ARTEFACTS - {rel})
    assert (generated / rel).read_bytes() != render_all()[rel]  # --check writes nothing


def test_a_missing_artefact_is_detected(generated: Path) -> None:
    (generated / DOCS_DIR / "run.md").unlink()
    assert check(generated) == [f"{DOCS_DIR}/run.md"]


def test_a_stray_page_is_detected_and_removed(generated: Path) -> None:
    """The generator owns the pages' directory: a page of a family that is gone is stale."""
    stray = generated / DOCS_DIR / "widget.md"
    stray.write_text("# Family `widget`\n")
    assert check(generated) == [f"{DOCS_DIR}/widget.md"]
    done = run_export("--check", "--root", str(generated))
    assert done.returncode == 1
    assert f"{DOCS_DIR}/widget.md" in done.stderr
    assert stray.exists()  # --check writes nothing
    assert write_all(generated) == [f"{DOCS_DIR}/widget.md"]
    assert not stray.exists()
    assert check(generated) == []


def test_regeneration_repairs_the_artefacts(generated: Path) -> None:
    (generated / SCHEMA).write_text("{}\n")
    done = run_export("--root", str(generated))
    assert done.returncode == 0, done.stderr
    assert SCHEMA in done.stderr
    assert check(generated) == []


# --- a changed model without regeneration ----------------------------------------------------


class WidgetParams(WireModel):
    """A method the committed artefacts have never heard of."""

    widget_id: str
    size: int = 3


class SessionRef(protocol.sessions.SessionRef):
    """The real ``SessionRef`` with one more field, under the same name."""

    include_trash: bool = False


def test_a_new_method_is_detected() -> None:
    extra = MethodSpec("widget/get", WidgetParams, WidgetParams, "Get a widget.")
    schema = build_schema((*ALL_METHODS, extra))
    assert "WidgetParams" in schema["$defs"]
    stale = check(REPO, schema)
    # the overview names the schema hash and lists the method; its family's page is missing
    assert stale == [SCHEMA, TYPESCRIPT, LUA, f"{DOCS_DIR}/index.md", f"{DOCS_DIR}/widget.md"]
    assert "### WidgetParams" in render_pages(schema, "h")["widget.md"]


def test_an_extra_field_on_an_existing_model_is_detected() -> None:
    methods = tuple(
        dataclasses.replace(spec, params=SessionRef)
        if spec.params is protocol.sessions.SessionRef
        else spec
        for spec in ALL_METHODS
    )
    assert methods != ALL_METHODS
    schema = build_schema(methods)
    assert "includeTrash" in schema["$defs"]["SessionRef"]["properties"]
    stale = check(REPO, schema)
    assert SCHEMA in stale
    assert TYPESCRIPT in stale
    assert LUA in stale
    assert f"{DOCS_DIR}/session.md" in stale


def test_a_changed_summary_is_detected() -> None:
    methods = tuple(
        dataclasses.replace(spec, summary=spec.summary + " Now with more.") if i == 0 else spec
        for i, spec in enumerate(ALL_METHODS)
    )
    stale = check(REPO, build_schema(methods))
    assert SCHEMA in stale
    assert f"{DOCS_DIR}/index.md" in stale  # the summary is in the method index
    assert f"{DOCS_DIR}/{ALL_METHODS[0].name.split('/')[0]}.md" in stale  # and its family's


def test_the_unchanged_registry_is_not_stale() -> None:
    assert check(REPO, build_schema(ALL_METHODS)) == []


# --- determinism and the advertised hash -----------------------------------------------------


def test_render_all_is_deterministic() -> None:
    first = render_all()
    second = render_all()
    assert first == second
    assert render_all(build_schema()) == first


def test_rendering_in_a_fresh_interpreter_gives_the_same_bytes(tmp_path: Path) -> None:
    # Set iteration order, hash seeds and import order differ between processes.
    done = subprocess.run(
        [sys.executable, "-m", "protocol.export", "--root", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    for rel, data in render_all().items():
        assert (tmp_path / rel).read_bytes() == data, rel


def test_the_readme_quotes_the_demo_on_the_contract_as_it_is() -> None:
    """The README and the getting-started page show ``make demo``'s output, whose second line
    names the schema hash and the method count; both change with the contract, so every quote
    is held to what the demo prints today (issue 20, item 5).  After a contract change, paste
    the line it asks for."""
    line = contract_line(capabilities_block(store_path="/s", max_message_bytes=1 << 20))
    quoting = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    quotes = {
        path.relative_to(REPO).as_posix(): [
            q for q in path.read_text(encoding="utf-8").splitlines() if q.startswith("  protocol v")
        ]
        for path in quoting
    }
    assert quotes["README.md"] == [line], f"README's demo output should read:\n{line}"
    assert quotes["docs/getting-started.md"] == [line], f"and the getting-started page's:\n{line}"
    stale = {path: q for path, q in quotes.items() if q and q != [line]}
    assert not stale, f"these quote the demo's contract line; it should read:\n{line}"


def test_schema_hash_is_the_hash_of_the_committed_schema() -> None:
    committed = (PACKAGE_DIR / SCHEMA_FILE).read_bytes()
    digest = xxhash.xxh3_128_hexdigest(committed)
    facts = schema_facts()
    assert facts.hash == digest
    assert len(digest) == 32
    # what ``initialize`` advertises is read from the schema: what a client can call, in the
    # registry's order; nothing the server sends (issue 20, item 4)
    assert facts.methods == [m.name for m in CLIENT_METHODS]
    assert not set(facts.methods) & {m.name for m in ALL_METHODS if m.direction != "clientToServer"}
    assert facts.protocol_version == PROTOCOL_VERSION
    # The generated clients carry the same hash, so a client can compare it at initialize.
    ts = (REPO / TYPESCRIPT).read_text()
    assert f'SCHEMA_HASH = "{digest}"' in ts
    assert digest in (REPO / DOCS_DIR / "index.md").read_text()
